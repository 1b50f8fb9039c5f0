package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/gitstore"
)

// ErrLocalMoved: the wing committed while a merge was being made; the
// merge is dropped and made again on the new head at the next round.
var ErrLocalMoved = errors.New("remote: the wing's branch moved during the merge; integrating again")

// errNotOnDisk: the repository's storage is not a directory (it always is
// for a brain directory).
var errNotOnDisk = errors.New("remote: the repository is not on disk")

// Apply makes the merge current as a hand `git pull` would, with one
// filesystem sync for all the changed notes instead of two per note:
// their new bytes go to temporary files beside them (hidden: the store
// and history ignore them, and the store's Open removes those a crash
// leaves) and are made durable together with everything the fetch and
// the merge wrote; then the wing's branch moves from local to the merge
// commit under git's lock protocol (the pull is acknowledged); then the
// temporary files are renamed over the notes and removed notes deleted,
// each directory synced once. The store's watcher loads them and the
// history engine reads the merge, whose bytes the files already equal
// when the watcher sees them, so nothing is recorded as outside. A wing
// that committed meanwhile (ErrLocalMoved) leaves the notes untouched.
func (r *Remote) Apply(local plumbing.Hash, in Integration) error {
	var b atomicfile.Batch
	defer b.Cleanup()
	for _, p := range in.Changed {
		if err := stage(&b, r.repo.Storer, r.root, p, in.files[p].Hash); err != nil {
			return err
		}
	}
	if err := b.Sync(); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	journal := r.gitPath(ApplyFile)
	if err := writeJournal(journal, applyJournal{Commit: in.Commit.String(), Paths: in.Changed}); err != nil {
		return err
	}
	if err := r.moveBranch(local, in.Commit); err != nil {
		os.Remove(journal)
		return err
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("remote: write the merged notes: %w", err)
	}
	if err := os.Remove(journal); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	return nil
}

// stage adds blob h of note p (slash-separated, below root) from s to
// the batch, a removal when h is zero.
func stage(b *atomicfile.Batch, s storer.EncodedObjectStorer, root, p string, h plumbing.Hash) error {
	path := filepath.Join(root, filepath.FromSlash(p))
	if h.IsZero() {
		b.Remove(path)
		return nil
	}
	data, err := gitstore.ReadRaw(s, plumbing.BlobObject, h, nil)
	if err != nil {
		return fmt.Errorf("remote: %s: %w", p, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if err := b.Add(path, data, 0o644); err != nil {
		return fmt.Errorf("remote: write %s: %w", p, err)
	}
	return nil
}

// moveBranch sets the wing's branch from old to next with git's lock
// protocol (gitstore.Refs.Move); a branch locked or moved meanwhile is
// ErrLocalMoved.
func (r *Remote) moveBranch(old, next plumbing.Hash) error {
	defer r.store.Reindex()
	err := r.git.Move(context.Background(), r.local, old, next)
	if err != nil && (errors.Is(err, gitstore.ErrRefMoved) || errors.Is(err, gitstore.ErrLockHeld)) {
		return fmt.Errorf("%w (%w)", ErrLocalMoved, err)
	}
	return err
}
