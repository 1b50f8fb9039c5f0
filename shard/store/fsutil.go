package store

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// tmpPrefix starts the name of every temporary file the store writes
// (package atomicfile names them). Scans and listings ignore such files and
// Open removes them.
const tmpPrefix = atomicfile.TempPrefix

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
		return n, atomicfile.SyncDir(dir)
	}
	return 0, nil
}

// rfc3339 formats t as the store stamps times: RFC 3339, UTC, seconds.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
