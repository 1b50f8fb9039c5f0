package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// defaultStaleLock is the age past which a lock file that no live
// Brainstem process holds is taken for one a crash left behind. Git holds
// its ref and index locks for milliseconds (but for the index while
// `git commit` waits for its editor); a shard killed and started again
// at once waits this long for its own lock (docs/history.md).
const defaultStaleLock = time.Second

// lockFile is git's lock protocol for one file: <file>.lock is created
// exclusively (O_CREATE|O_EXCL), written, fsynced and renamed over the
// file, so readers never see a torn file and two writers never both win.
// The engine also holds an advisory lock (flock) on it while it lives, so
// that another Brainstem process can tell a lock whose writer crashed
// (nobody holds it) from one in use.
type lockFile struct {
	target, path string
	f            *os.File
	done         bool
}

// lockTimes are the bounds of acquireLock: how long to wait, and the age
// past which an unheld lock is stale.
type lockTimes struct {
	timeout, stale time.Duration
}

// acquireLock takes the lock of target, retrying with backoff while
// another process holds it, for at most lt.timeout (or until ctx ends).
func acquireLock(ctx context.Context, target string, lt lockTimes) (*lockFile, error) {
	path := target + ".lock"
	deadline := time.Now().Add(lt.timeout)
	wait := time.Millisecond
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			// The file is new and ours; only a breakStale (of another
			// process, or of this one on its own descriptor) can hold its
			// flock, for the moment it takes to see the file is young.
			// Wait for it rather than fail the lock.
			if err := flockWait(f); err != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("history: lock %s: %w", path, err)
			}
			return &lockFile{target: target, path: path, f: f}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("history: lock %s: %w", path, err)
		}
		if breakStale(path, lt.stale) {
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("history: %s is held by another process (waited %v); if no git command or shard is using the repository, remove that file", path, lt.timeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("history: waiting for %s: %w", path, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// breakStale removes the lock file at path when no live Brainstem process
// holds it and it is older than stale, reporting whether it did.
func breakStale(path string, stale time.Duration) bool {
	f, err := os.Open(path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // gone meanwhile: retry at once
	}
	defer f.Close()
	if flockTry(f) != nil {
		return false // a live writer holds it
	}
	fi, err := f.Stat()
	if err != nil || time.Since(fi.ModTime()) < stale {
		return false
	}
	cur, err := os.Lstat(path)
	if err != nil || !os.SameFile(fi, cur) {
		return false
	}
	return os.Remove(path) == nil
}

// commit writes content to the lock file, fsyncs it and renames it over
// the target, then fsyncs the directory: the new content is durable and
// the lock is released.
func (l *lockFile) commit(content []byte) error {
	return l.commitFunc(func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	})
}

// commitFunc is commit with the content written by write.
func (l *lockFile) commitFunc(write func(w io.Writer) error) error {
	if l.done {
		return errors.New("history: lock already released")
	}
	l.done = true
	bw := bufio.NewWriterSize(l.f, 256<<10)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = l.f.Sync()
	}
	if err == nil {
		err = os.Rename(l.path, l.target)
	}
	cerr := l.f.Close()
	if err != nil {
		os.Remove(l.path)
		return fmt.Errorf("history: update %s: %w", l.target, err)
	}
	if cerr != nil {
		return fmt.Errorf("history: update %s: %w", l.target, cerr)
	}
	if err := atomicfile.SyncDir(filepath.Dir(l.target)); err != nil {
		return fmt.Errorf("history: update %s: %w", l.target, err)
	}
	return nil
}

// release drops the lock without changing the target. It does nothing
// after commit.
func (l *lockFile) release() {
	if l.done {
		return
	}
	l.done = true
	os.Remove(l.path)
	l.f.Close()
}
