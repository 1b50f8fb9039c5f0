package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// ApplyFile, under the repository's .git, lists the notes of a pull being
// applied: written before the wing's branch moves to the merge, removed
// once every note is in place. Recover finishes what a crash left.
const ApplyFile = "brainstem/apply.json"

// maxJournal bounds the journal Recover reads (a pull of 10,000 notes
// writes about 600 KiB).
const maxJournal = 64 << 20

// ErrJournal: the journal of an interrupted pull cannot be read; the
// message names the file. Removing it loses nothing a commit holds, but
// the notes it lists may then be older than the branch says.
var ErrJournal = errors.New("remote: the journal of an interrupted pull is unreadable")

// applyJournal is ApplyFile's content: the merge commit and the paths of
// the notes it changes, slash-separated from the repository root.
type applyJournal struct {
	Commit string   `json:"commit"`
	Paths  []string `json:"paths"`
}

// writeJournal makes j durable at path before the branch moves.
func writeJournal(path string, j applyJournal) error {
	b, err := json.Marshal(j)
	if err == nil {
		err = writeState(path, b)
	}
	if err != nil {
		return fmt.Errorf("remote: the pull's journal: %w", err)
	}
	return nil
}

// Recover finishes a pull that a crash cut between the wing's branch
// moving to the merge and the last note being renamed into place: each
// note the journal lists is written (or removed) as the branch's commit
// has it. A journal whose merge the branch never reached is dropped (the
// notes were not touched). It runs before the store opens, so that the
// history engine never reads half a pull as edits made outside the brain
// (which it would commit, undoing the rest of the pull). It returns the
// number of notes it wrote; a brain with no repository has none.
func Recover(dir string) (int, error) {
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("remote: open the repository of %s: %w", dir, err)
	}
	fsys, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return 0, errNotOnDisk
	}
	path := filepath.Join(fsys.Filesystem().Root(), filepath.FromSlash(ApplyFile))
	j, ok, err := readJournal(path)
	if err != nil || !ok {
		return 0, err
	}
	head, err := repo.Head()
	if err != nil {
		return 0, fmt.Errorf("remote: %s: the wing's branch: %w", path, err)
	}
	n := 0
	if head.Hash().String() == j.Commit {
		if n, err = rollForward(repo, dir, head.Hash(), j.Paths); err != nil {
			return 0, err
		}
	}
	// Another wing's shard of the same repository may have finished first.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("remote: %w", err)
	}
	return n, nil
}

// readBounded reads the file at path, refusing one over limit bytes (a
// missing file's error is fs.ErrNotExist): the files of the sync state
// and the remote's configuration file.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && len(b) > limit {
		err = fmt.Errorf("%s is over %d bytes", path, limit)
	}
	return b, err
}

// readJournal reads the journal at path (ok false: none).
func readJournal(path string) (applyJournal, bool, error) {
	var j applyJournal
	b, err := readBounded(path, maxJournal)
	if errors.Is(err, fs.ErrNotExist) {
		return j, false, nil
	}
	if err != nil {
		return j, false, fmt.Errorf("%w: %w", ErrJournal, err)
	}
	if err := json.Unmarshal(b, &j); err != nil || !plumbing.IsHash(j.Commit) {
		return j, false, fmt.Errorf("%w: %s: not a journal (%v)", ErrJournal, path, err)
	}
	for _, p := range j.Paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return j, false, fmt.Errorf("%w: %s: the path %q leaves the brain", ErrJournal, path, p)
		}
	}
	return j, true, nil
}

// rollForward writes each of paths under dir as commit h's tree has it
// (removed when the tree lacks it), in one batch.
func rollForward(repo *git.Repository, dir string, h plumbing.Hash, paths []string) (int, error) {
	c, err := repo.CommitObject(h)
	if err != nil {
		return 0, fmt.Errorf("remote: the pull's merge %s: %w", h, err)
	}
	files, err := flatten(repo.Storer, c.TreeHash)
	if err != nil {
		return 0, fmt.Errorf("remote: the pull's merge %s: %w", h, err)
	}
	var b atomicfile.Batch
	defer b.Cleanup()
	for _, p := range paths {
		if err := stage(&b, repo.Storer, dir, p, files[p].Hash); err != nil { // zero: the tree lacks it
			return 0, err
		}
	}
	if err := b.Commit(); err != nil {
		return 0, fmt.Errorf("remote: write the pull's notes: %w", err)
	}
	return len(paths), nil
}
