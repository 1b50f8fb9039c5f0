//go:build linux

package watch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// inotifyWatcher watches directories with Linux inotify. Its file is
// non-blocking, so a Read waits in Go's poller and Close ends it.
type inotifyWatcher struct {
	fd int
	f  *os.File

	mu  sync.Mutex
	wds map[int32]string // watch descriptor → tag ("" for the wing directory, else the hall)
	buf []byte
}

// inotifyMask: every change of an entry, and the watched directory itself
// going away.
const inotifyMask = syscall.IN_CREATE | syscall.IN_CLOSE_WRITE | syscall.IN_MOVED_TO | syscall.IN_MOVED_FROM |
	syscall.IN_DELETE | syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW | syscall.IN_EXCL_UNLINK

// New returns a Watcher of no directory yet.
func New() (Watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// The raw fd is kept for inotify_add_watch: File.Fd would switch the
	// file back to blocking mode.
	return &inotifyWatcher{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), wds: map[int32]string{}, buf: make([]byte, 64<<10)}, nil
}

func (w *inotifyWatcher) Add(dir, tag string) error {
	wd, err := syscall.InotifyAddWatch(w.fd, dir, inotifyMask)
	if err != nil {
		return fmt.Errorf("inotify: watch %s: %w", dir, err)
	}
	w.mu.Lock()
	w.wds[int32(wd)] = tag
	w.mu.Unlock()
	return nil
}

// Next blocks for the next events. It fails once the watcher is closed.
func (w *inotifyWatcher) Next() ([]Event, error) {
	n, err := w.f.Read(w.buf)
	if err != nil {
		return nil, err
	}
	var out []Event
	const header = syscall.SizeofInotifyEvent
	w.mu.Lock()
	defer w.mu.Unlock()
	for off := 0; off+header <= n; {
		wd := int32(binary.NativeEndian.Uint32(w.buf[off:]))
		mask := binary.NativeEndian.Uint32(w.buf[off+4:])
		nameLen := int(binary.NativeEndian.Uint32(w.buf[off+12:]))
		if off+header+nameLen > n {
			return nil, errors.New("inotify: truncated event")
		}
		name := w.buf[off+header : off+header+nameLen]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		off += header + nameLen
		tag, known := w.wds[wd]
		ev := Event{Tag: tag, Name: string(name)}
		switch {
		case mask&syscall.IN_Q_OVERFLOW != 0:
			ev = Event{Overflow: true}
		case mask&syscall.IN_IGNORED != 0:
			delete(w.wds, wd)
			ev = Event{Tag: tag, DirGone: true}
		case !known:
			continue
		case mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF) != 0:
			ev.DirGone, ev.Name = true, ""
		case mask&syscall.IN_ISDIR != 0:
			ev.IsDir = true
		}
		out = append(out, ev)
	}
	return out, nil
}

func (w *inotifyWatcher) Close() error { return w.f.Close() }
