package gitstore

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
	"github.com/brainstem/brainstem/internal/durable"
)

// DefaultStaleLock is the age past which a lock file that no live
// Brainstem process holds is taken for one a crash left behind. Git holds
// its ref and index locks for milliseconds (but for the index while
// `git commit` waits for its editor); a shard killed and started again
// at once waits this long for its own lock (docs/history.md).
const DefaultStaleLock = time.Second

// Lock is git's lock protocol for one file: <file>.lock is created
// exclusively (O_CREATE|O_EXCL), written, fsynced and renamed over the
// file, so readers never see a torn file and two writers never both win.
// The engine also holds an advisory lock (flock) on it while it lives, so
// that another Brainstem process can tell a lock whose writer crashed
// (nobody holds it) from one in use.
type Lock struct {
	target, path string
	f            *os.File
	done         bool
}

// ErrLockHeld: another process held a lock for as long as AcquireLock
// waited.
var ErrLockHeld = errors.New("held by another process")

// LockTimes are the bounds of AcquireLock: how long to wait (0: one try
// and a check for a stale lock), and the age past which an unheld lock is
// stale.
type LockTimes struct {
	Timeout, Stale time.Duration
}

// AcquireLock takes the lock of target, retrying with backoff while
// another process holds it, for at most lt.Timeout (or until ctx ends).
func AcquireLock(ctx context.Context, target string, lt LockTimes) (*Lock, error) {
	path := target + ".lock"
	deadline := time.Now().Add(lt.Timeout)
	wait := time.Millisecond
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			// The file is new and ours; only a breakStale (of another
			// process, or of this one on its own descriptor) can hold its
			// flock, for the moment it takes to see the file is young.
			// Wait for it rather than fail the lock.
			if err := durable.Flock(f); err != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("gitstore: lock %s: %w", path, err)
			}
			return &Lock{target: target, path: path, f: f}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("gitstore: lock %s: %w", path, err)
		}
		if breakStale(path, lt.Stale) {
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("gitstore: %s is %w (waited %v); if no git command or shard is using the repository, remove that file", path, ErrLockHeld, lt.Timeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("gitstore: waiting for %s: %w", path, ctx.Err())
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
	if durable.TryFlock(f) != nil {
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

// Commit writes content to the lock file, fsyncs it and renames it over
// the target, then fsyncs the directory: the new content is durable and
// the lock is released.
func (l *Lock) Commit(content []byte) error {
	return l.CommitFunc(func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	})
}

// CommitFunc is Commit with the content written by write.
func (l *Lock) CommitFunc(write func(w io.Writer) error) error {
	if l.done {
		return errors.New("gitstore: lock already released")
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
		return fmt.Errorf("gitstore: update %s: %w", l.target, err)
	}
	if cerr != nil {
		return fmt.Errorf("gitstore: update %s: %w", l.target, cerr)
	}
	if err := atomicfile.SyncDir(filepath.Dir(l.target)); err != nil {
		return fmt.Errorf("gitstore: update %s: %w", l.target, err)
	}
	return nil
}

// Release drops the lock without changing the target. It does nothing
// after Commit.
func (l *Lock) Release() {
	if l.done {
		return
	}
	l.done = true
	os.Remove(l.path)
	l.f.Close()
}
