// Package atomicfile writes files so that a crash leaves either the old
// content or the new one, never a mix, and an acknowledged write survives
// it: the bytes go to a temporary file in the destination's directory, which
// is fsynced, then renamed over the destination (or linked to it, when it
// must not exist yet), and the directory is fsynced. It is the one place
// that does so; the key files, certificates, sign-ins, notes, index
// snapshots and idempotency journals of Brainstem are all written through
// it.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// TempPrefix starts the name of every temporary file this package creates,
// so that a directory's readers can ignore them and clean up those a crash
// left behind.
const TempPrefix = ".tmp-"

// A Pending is a temporary file next to its destination. Write it (it is an
// *os.File), then commit it with Replace or Create; Cleanup removes it
// unless it was committed, so it is safe to defer.
type Pending struct {
	*os.File
	path string
	done bool
}

// New creates a temporary file with mode perm in the directory of path,
// which it will become. On Windows, where files have no mode bits, the mode
// is applied as far as the system allows.
func New(path string, perm fs.FileMode) (*Pending, error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix+"*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil && runtime.GOOS != "windows" {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &Pending{File: f, path: path}, nil
}

// Path is the destination the file will become.
func (p *Pending) Path() string { return p.path }

// finish fsyncs and closes the temporary file; on failure it removes it.
func (p *Pending) finish() error {
	if p.done {
		return errors.New("atomicfile: already committed or cleaned up")
	}
	p.done = true
	err := p.Sync()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p.Name())
	}
	return err
}

// Replace durably and atomically replaces (or creates) the destination with
// what was written: readers see the old bytes or the new ones.
func (p *Pending) Replace() error {
	if err := p.finish(); err != nil {
		return err
	}
	if err := os.Rename(p.Name(), p.path); err != nil {
		os.Remove(p.Name())
		return err
	}
	return SyncDir(filepath.Dir(p.path))
}

// Create durably creates the destination with what was written, and fails
// with an error wrapping fs.ErrExist when it already exists: it never
// replaces a file. The temporary file is hard-linked to the destination,
// and link(2) refuses an existing target atomically, even against writers
// in other processes. On a filesystem without hard links it falls back to
// an existence check and a rename, which is atomic only against writers
// that serialise among themselves (the shard's note locks).
func (p *Pending) Create() error {
	if err := p.finish(); err != nil {
		return err
	}
	tmp := p.Name()
	defer os.Remove(tmp)
	dir := filepath.Dir(p.path)
	err := os.Link(tmp, p.path)
	if err == nil {
		if err := os.Remove(tmp); err != nil {
			return err
		}
		return SyncDir(dir)
	}
	if le, ok := errors.AsType[*os.LinkError](err); ok && errors.Is(le.Err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", filepath.Base(p.path), fs.ErrExist)
	}
	if !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if _, serr := os.Lstat(p.path); serr == nil {
		return fmt.Errorf("%s: %w", filepath.Base(p.path), fs.ErrExist)
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return serr
	}
	if err := os.Rename(tmp, p.path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// Cleanup closes and removes the temporary file unless Replace or Create
// took it; it does nothing after them.
func (p *Pending) Cleanup() {
	if p.done {
		return
	}
	p.done = true
	p.Close()
	os.Remove(p.Name())
}

// WriteFile durably and atomically replaces (or creates) path with data,
// mode perm.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, (*Pending).Replace)
}

// CreateFile durably creates path with data, mode perm, and fails with an
// error wrapping fs.ErrExist when path exists (see Pending.Create).
func CreateFile(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, (*Pending).Create)
}

// write writes data to a pending file for path and ends it with finish.
func write(path string, data []byte, perm fs.FileMode, finish func(*Pending) error) error {
	p, err := New(path, perm)
	if err != nil {
		return err
	}
	defer p.Cleanup()
	if _, err := p.Write(data); err != nil {
		return err
	}
	return finish(p)
}

// SyncDir fsyncs a directory so that the entries created, renamed or
// removed in it survive a crash. On Windows, where a directory cannot be
// opened for syncing, it does nothing: only the sign-in client, whose
// files can be signed in again, runs there.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	return Sync(dir)
}

// Sync fsyncs the file or directory at path, opened read-only (which
// Windows cannot fsync: there SyncDir does nothing, and files need a
// writable handle).
func Sync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
