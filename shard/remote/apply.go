package remote

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// ErrLocalMoved: the wing committed while a merge was being made; the
// merge is dropped and made again on the new head at the next round.
var ErrLocalMoved = errors.New("remote: the wing's branch moved during the merge; integrating again")

// Apply makes the merge current as a hand `git pull` would: it moves the
// wing's branch from local to the merge commit under git's lock protocol,
// then writes the changed notes to the brain directory (durably), where
// the store's watcher loads them and the history engine reads the merge
// (whose bytes the files now equal, so nothing is recorded as outside).
func (r *Remote) Apply(local plumbing.Hash, in Integration) error {
	if err := r.moveBranch(local, in.Commit); err != nil {
		return err
	}
	for _, p := range in.Changed {
		if err := r.writeNote(p, in.files[p]); err != nil {
			return err
		}
	}
	return nil
}

func (r *Remote) writeNote(p string, e entry) error {
	path := filepath.Join(r.root, filepath.FromSlash(p))
	if e.Hash.IsZero() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remote: remove %s: %w", p, err)
		}
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	blob, err := r.repo.BlobObject(e.Hash)
	if err != nil {
		return fmt.Errorf("remote: %s: %w", p, err)
	}
	rd, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("remote: %s: %w", p, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return fmt.Errorf("remote: %s: %w", p, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("remote: write %s: %w", p, err)
	}
	return nil
}

// moveBranch sets the wing's branch from old to next the way git does:
// <ref>.lock created exclusively, checked against old, written, synced
// and renamed over the ref.
func (r *Remote) moveBranch(old, next plumbing.Hash) error {
	fs, ok := r.repo.Storer.(*filesystem.Storage)
	if !ok {
		return errors.New("remote: the repository is not on disk")
	}
	ref := filepath.Join(fs.Filesystem().Root(), filepath.FromSlash(r.local.String()))
	lock, err := os.OpenFile(ref+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("%w (%s is locked: %w)", ErrLocalMoved, r.local, err)
	}
	done := false
	defer func() {
		if !done {
			lock.Close()
			os.Remove(ref + ".lock")
		}
	}()
	cur, err := r.head()
	if err != nil {
		return err
	}
	if cur != old {
		return ErrLocalMoved
	}
	if _, err := lock.WriteString(next.String() + "\n"); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if err := errors.Join(lock.Sync(), lock.Close()); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if err := os.Rename(ref+".lock", ref); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	done = true
	return atomicfile.SyncDir(filepath.Dir(ref))
}
