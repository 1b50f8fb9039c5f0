package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// CheckDisk is Check for `brainstem check`: it compares the wing's files
// with the branch head without opening the history (no state directory,
// no lock, nothing recorded or written), so it runs beside a shard that
// serves the wing, or with none. A brain without a repository, or a wing
// with no commit yet, has nothing to disagree with: the shard makes the
// initial commit when it starts. Options.StateDir is not used.
func CheckDisk(ctx context.Context, opt Options) ([]Problem, error) {
	if opt.StateDir == "" {
		opt.StateDir = "unused"
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	r, err := git.PlainOpenWithOptions(opt.Root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, nil
	}
	if st, ok := r.Storer.(*filesystem.Storage); err == nil && ok {
		for _, f := range []string{"HEAD", "config"} {
			if _, err := os.Stat(filepath.Join(st.Filesystem().Root(), f)); err != nil {
				return nil, nil // a .git directory git would not take for a repository either
			}
		}
	}
	h := &History{opt: opt, log: opt.Logger, idxDirty: map[string]bool{}, q: newQueue(0)}
	if h.repo, err = openRepo(opt); err != nil {
		return nil, err
	}
	h.objs = gitstore.Open(h.repo.gitDir, h.repo.common)
	h.tree = gitstore.NewTree(h.objs)
	head, err := h.repo.refs.Read(h.repo.currentBranch())
	if err != nil || head.IsZero() {
		return nil, err
	}
	c, err := h.objs.Commit(head)
	if err != nil {
		return nil, err
	}
	h.tree.Reset(head, c.TreeHash)
	blocked, err := h.blockerProblems()
	if err != nil || len(blocked) > 0 {
		return blocked, err // nothing of the wing can be compared under a file
	}
	paths, err := h.headPaths()
	if err != nil || len(paths) == 0 {
		return nil, err // no version of the wing yet
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.driftProblems(nil, opt.Files)
}

// lockProblems reports git locks older than a crashed writer's would be.
func (h *History) lockProblems() []Problem {
	var out []Problem
	for _, lock := range []string{h.repo.refs.Path(h.repo.currentBranch()) + ".lock", h.indexPath() + ".lock"} {
		if fi, err := os.Stat(lock); err == nil && time.Since(fi.ModTime()) > h.opt.staleLock {
			out = append(out, Problem{Message: fmt.Sprintf("the git lock %s is %v old: a writer may have crashed; remove it if no git command is running", lock, time.Since(fi.ModTime()).Round(time.Second))})
		}
	}
	return out
}

// blockerProblems reports files of the branch head that stand where the
// wing's directories must be, above what the wing may replace (docs/history.md
// "Files a remote pushes that the wing does not load"): a shard cannot
// commit under them, so it serves reads and refuses writes.
func (h *History) blockerProblems() ([]Problem, error) {
	var out []Problem
	seen := map[string]bool{}
	for _, d := range h.treeDirs() {
		segs := strings.Split(d, "/")
		for i := range segs {
			p := strings.Join(segs[:i+1], "/")
			if seen[p] {
				continue
			}
			seen[p] = true
			_, _, file, err := h.tree.Lookup(p)
			if err != nil {
				return nil, err
			}
			if file {
				out = append(out, Problem{Path: p, Message: fmt.Sprintf("a file in branch %s of the brain's repository where the wing's directory %s must be: the shard cannot commit the wing's changes (it serves reads, refuses writes, and /readyz says why); fix: remove it (git rm --cached %s, commit), then restart the shard", h.repo.currentBranch().Short(), d, p)})
				break
			}
		}
	}
	return out, nil
}
