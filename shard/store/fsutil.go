package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tmpPrefix starts the name of every temporary file the store writes. Scans
// and listings ignore such files and Open removes them.
const tmpPrefix = ".tmp-"

// filePerm is the mode of notes, session logs and _index.md: readable by the
// editors and git tooling that share the brain directory.
const filePerm = 0o644

// fileSig identifies one version of a file cheaply: the rescanner compares
// it with the version it indexed to find files edited behind its back.
type fileSig struct {
	size  int64
	mtime int64 // UnixNano
	ino   uint64
}

func sigOf(fi fs.FileInfo) fileSig {
	return fileSig{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inodeOf(fi)}
}

// writeTemp writes data to a new fsynced temporary file in dir and returns
// its path. The caller links or renames it into place, or removes it.
func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", err
	}
	if err := f.Chmod(filePerm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// syncDir fsyncs a directory so that entries created, renamed or removed in
// it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// createFile durably creates path with data and fails with an error wrapping
// fs.ErrExist when path already exists. It never replaces a file: the
// temporary file is hard-linked to path, and link(2) refuses an existing
// target atomically, even against writers outside this process. On a
// filesystem without hard links it falls back to an existence check and a
// rename, which is atomic against this store's writers (they hold the
// note's lock) but not against another process creating the same file in
// between.
func createFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) && errors.Is(le.Err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", filepath.Base(path), fs.ErrExist)
		}
		if !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, fs.ErrPermission) {
			return err
		}
		if _, serr := os.Lstat(path); serr == nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), fs.ErrExist)
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return serr
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		return syncDir(dir)
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return syncDir(dir)
}

// replaceFile durably and atomically replaces (or creates) path with data:
// readers see the old bytes or the new ones, never a mix.
func replaceFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// readFileLimit reads a regular file of at most limit bytes and returns its
// bytes and the signature of the version read. A larger file fails with an
// error wrapping ErrTooLarge, a non-regular one with ErrInvalid.
func readFileLimit(path string, limit int) ([]byte, fileSig, error) {
	f, fi, err := openLimit(path, limit)
	if err != nil {
		return nil, fileSig{}, err
	}
	defer f.Close()
	data, err := readAllLimit(f, fi.Size(), limit)
	if err != nil {
		return nil, fileSig{}, err
	}
	return data, sigOf(fi), nil
}

// openLimit opens a regular file of at most limit bytes (never through a
// symlink) and returns it with its FileInfo. A larger file fails with an
// error wrapping ErrTooLarge, a non-regular one with ErrInvalid.
func openLimit(path string, limit int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, refuse(ErrInvalid, "%s is not a regular file", filepath.Base(path))
	}
	if fi.Size() > int64(limit) {
		f.Close()
		return nil, nil, refuse(ErrTooLarge, "%s is %d bytes, over the %d-byte limit", filepath.Base(path), fi.Size(), limit)
	}
	return f, fi, nil
}

// readAllLimit reads f from its start (size is its expected size),
// failing with ErrTooLarge past limit bytes.
func readAllLimit(f *os.File, size int64, limit int) ([]byte, error) {
	buf := make([]byte, 0, min(max(size, 0), int64(limit))+1)
	r := io.NewSectionReader(f, 0, int64(limit)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grown past the expected size
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > limit {
		return nil, refuse(ErrTooLarge, "%s grew over the %d-byte limit", filepath.Base(f.Name()), limit)
	}
	return buf, nil
}

// removeTemps deletes leftover temporary files (from a crash mid-write) in
// dir, returning how many it removed. Only regular files are touched.
func removeTemps(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpPrefix) || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		n++
	}
	if n > 0 {
		return n, syncDir(dir)
	}
	return 0, nil
}

// rfc3339 formats t as the store stamps times: RFC 3339, UTC, seconds.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
