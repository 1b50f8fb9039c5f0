// Package diskfile opens the files of a wing as the store trusts them:
// regular files only, never through a symbolic link, within a size bound;
// and removes the temporary files (package atomicfile's) a crash left.
package diskfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/store/refusal"
)

// Perm is the mode of notes, session logs and _index.md: readable by the
// editors and git tooling that share the brain directory.
const Perm = 0o644

// Open opens a regular file of at most limit bytes (never through a
// symlink) and returns it with its FileInfo. A larger file fails with an
// error wrapping refusal.ErrTooLarge, a non-regular one with
// refusal.ErrInvalid.
func Open(path string, limit int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|NoFollow, 0)
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
		return nil, nil, refusal.Refuse(refusal.ErrInvalid, "%s is not a regular file", filepath.Base(path))
	}
	if fi.Size() > int64(limit) {
		f.Close()
		return nil, nil, refusal.Refuse(refusal.ErrTooLarge, "%s is %d bytes, over the %d-byte limit", filepath.Base(path), fi.Size(), limit)
	}
	return f, fi, nil
}

// ReadAll reads f from its start (size is its expected size), failing
// with refusal.ErrTooLarge past limit bytes.
func ReadAll(f *os.File, size int64, limit int) ([]byte, error) {
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
		return nil, refusal.Refuse(refusal.ErrTooLarge, "%s grew over the %d-byte limit", filepath.Base(f.Name()), limit)
	}
	return buf, nil
}

// RemoveTemps deletes leftover temporary files (from a crash mid-write) in
// dir, returning how many it removed. Only regular files are touched.
func RemoveTemps(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), atomicfile.TempPrefix) || !e.Type().IsRegular() {
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
