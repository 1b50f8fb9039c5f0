package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// ErrRefMoved: a ref was not at the commit a move expected (someone else
// moved it first).
var ErrRefMoved = errors.New("gitstore: the ref moved")

// Refs are the refs of a repository whose common directory (refs,
// packed-refs) is Common, moved under git's lock protocol with Locks.
type Refs struct {
	Common string
	Locks  LockTimes
}

// Path is the loose file of a ref.
func (r Refs) Path(name plumbing.ReferenceName) string {
	return filepath.Join(r.Common, filepath.FromSlash(string(name)))
}

// Read returns the commit a ref names (the zero hash for an unborn
// branch): its loose file, else its line in packed-refs.
func (r Refs) Read(name plumbing.ReferenceName) (plumbing.Hash, error) {
	b, err := os.ReadFile(r.Path(name))
	if err == nil {
		s := strings.TrimSpace(string(b))
		if strings.HasPrefix(s, "ref: ") {
			return plumbing.ZeroHash, fmt.Errorf("gitstore: %s is a symbolic ref; history needs a plain branch", name)
		}
		if !plumbing.IsHash(s) {
			return plumbing.ZeroHash, fmt.Errorf("gitstore: %s holds %q, not a commit id", name, s)
		}
		return plumbing.NewHash(s), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return plumbing.ZeroHash, fmt.Errorf("gitstore: read %s: %w", name, err)
	}
	refs, err := r.Packed()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return refs[name], nil
}

// Packed reads the packed-refs file (missing: none).
func (r Refs) Packed() (map[plumbing.ReferenceName]plumbing.Hash, error) {
	b, err := os.ReadFile(filepath.Join(r.Common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitstore: read packed-refs: %w", err)
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' || l[0] == '^' {
			continue
		}
		h, name, ok := strings.Cut(l, " ")
		if ok && plumbing.IsHash(h) {
			refs[plumbing.ReferenceName(name)] = plumbing.NewHash(h)
		}
	}
	return refs, nil
}

// All lists every ref of the repository but HEAD: loose and packed.
func (r Refs) All() (map[plumbing.ReferenceName]plumbing.Hash, error) {
	refs, err := r.Packed()
	if err != nil {
		return nil, err
	}
	if refs == nil {
		refs = map[plumbing.ReferenceName]plumbing.Hash{}
	}
	top := filepath.Join(r.Common, "refs")
	err = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // removed meanwhile
		}
		rel, _ := filepath.Rel(r.Common, p)
		if s := strings.TrimSpace(string(b)); plumbing.IsHash(s) {
			refs[plumbing.ReferenceName(filepath.ToSlash(rel))] = plumbing.NewHash(s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gitstore: list refs: %w", err)
	}
	return refs, nil
}

// Lock takes the lock of ref name.
func (r Refs) Lock(ctx context.Context, name plumbing.ReferenceName) (*Lock, error) {
	p := r.Path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("gitstore: %w", err)
	}
	return AcquireLock(ctx, p, r.Locks)
}

// Move sets ref name from old to next (compare and swap): under the
// ref's lock it is read and, unless it is at old (ErrRefMoved), written,
// fsynced and renamed into place.
func (r Refs) Move(ctx context.Context, name plumbing.ReferenceName, old, next plumbing.Hash) error {
	lock, err := r.Lock(ctx, name)
	if err != nil {
		return err
	}
	defer lock.Release()
	cur, err := r.Read(name)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("%w: %s is at %s, not %s", ErrRefMoved, name, cur, old)
	}
	return lock.Commit([]byte(next.String() + "\n"))
}

// Set points ref name at next, whatever it named, under the ref's lock.
func (r Refs) Set(ctx context.Context, name plumbing.ReferenceName, next plumbing.Hash) error {
	lock, err := r.Lock(ctx, name)
	if err != nil {
		return err
	}
	return lock.Commit([]byte(next.String() + "\n"))
}

// Droppable reports whether Drop with prefixes drop may delete ref name:
// it lies under one of the prefixes and is a loose ref only (a packed one
// stays).
func (r Refs) Droppable(name plumbing.ReferenceName, drop []string) bool {
	for _, p := range drop {
		if p == "" || !strings.HasPrefix(string(name), p) {
			continue
		}
		if _, err := os.Stat(r.Path(name)); err != nil {
			return false
		}
		packed, err := r.Packed()
		_, isPacked := packed[name]
		return err == nil && !isPacked
	}
	return false
}

// Drop deletes the loose refs under the prefixes drop, and syncs their
// directories.
func (r Refs) Drop(drop []string) error {
	if len(drop) == 0 {
		return nil
	}
	refs, err := r.All()
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for name := range refs {
		if !r.Droppable(name, drop) {
			continue
		}
		p := r.Path(name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("gitstore: drop %s: %w", name, err)
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return fmt.Errorf("gitstore: %w", err)
		}
	}
	return nil
}
