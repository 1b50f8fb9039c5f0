package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A Batch replaces many files with a few syncs instead of two per file
// (WriteFile's): Add writes each file's bytes to a temporary file beside
// its destination, Sync makes every one of them durable at once, Commit
// renames them over their destinations (and removes the paths given to
// Remove), then fsyncs each directory once. Until Commit every
// destination keeps its old bytes; a crash during Commit leaves each one
// old or new, never a mix, and the temporary files (TempPrefix) that
// readers ignore and clean up. Work that must be durable before any
// destination changes (a ref naming the new bytes) goes between Sync and
// Commit. A Batch is not safe for concurrent use.
type Batch struct {
	files  []batchFile // written, not yet renamed
	remove []string
	synced bool
}

type batchFile struct{ tmp, path string }

// Add writes data, mode perm, to a temporary file that Commit renames to
// path. The file is closed at once, so that a batch of any size holds no
// descriptor.
func (b *Batch) Add(path string, data []byte, perm fs.FileMode) error {
	p, err := New(path, perm)
	if err != nil {
		return err
	}
	p.done = true // the batch owns the file from here on
	_, err = p.Write(data)
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p.Name())
		return err
	}
	b.files = append(b.files, batchFile{tmp: p.Name(), path: path})
	b.synced = false
	return nil
}

// Remove makes Commit remove path (a missing path is no error).
func (b *Batch) Remove(path string) { b.remove = append(b.remove, path) }

// Sync makes the bytes of every file added durable: one syncfs(2) per
// filesystem on Linux, an fsync per file elsewhere.
func (b *Batch) Sync() error {
	if len(b.files) > 0 {
		if err := syncFiles(b.tmps(), b.dirs()); err != nil {
			return fmt.Errorf("atomicfile: sync a batch of %d files: %w", len(b.files), err)
		}
	}
	b.synced = true
	return nil
}

// Commit syncs the batch unless Sync just did, renames every file added
// over its destination, removes the paths to remove, and fsyncs each
// directory it changed.
func (b *Batch) Commit() error {
	if !b.synced {
		if err := b.Sync(); err != nil {
			return err
		}
	}
	dirs := b.dirs()
	for len(b.files) > 0 {
		f := b.files[0]
		if err := os.Rename(f.tmp, f.path); err != nil {
			return err
		}
		b.files = b.files[1:]
	}
	for _, p := range b.remove {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	b.remove = nil
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup removes the temporary files Commit did not rename; it is safe to
// defer.
func (b *Batch) Cleanup() {
	for _, f := range b.files {
		os.Remove(f.tmp)
	}
	b.files, b.remove = nil, nil
}

func (b *Batch) tmps() []string {
	out := make([]string, len(b.files))
	for i, f := range b.files {
		out[i] = f.tmp
	}
	return out
}

// dirs lists the directories of the files added, each once.
func (b *Batch) dirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range b.files {
		if d := filepath.Dir(f.path); !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
