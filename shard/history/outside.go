package history

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// Outside records changes made to tracked files behind the shard's back
// (an editor, a hand `git pull`): once the changes begun before the call
// are committed, it compares each path's bytes on disk with what the
// branch head holds and commits the differences as one commit, action
// "outside", by the service identity. A path whose bytes equal the head's
// (a pull already committed them) records nothing; a path a change in
// flight is about to commit is left to that change.
func (h *History) Outside(ctx context.Context, paths []string) error {
	if err := h.closed(); err != nil {
		return err
	}
	for _, p := range paths {
		if !h.opt.Tracked(p) {
			return fmt.Errorf("history: %q is not a tracked path of wing %s", p, h.opt.Wing)
		}
	}
	h.q.mu.Lock()
	target := h.q.last
	h.q.mu.Unlock()
	if err := h.q.wait(ctx, target); err != nil {
		return err
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	_, _, err := h.commitWith(ctx, func(plumbing.Hash) ([]plan, error) {
		ops, err := h.diskOps(paths, nil)
		if err != nil || len(ops) == 0 {
			return nil, err
		}
		return []plan{h.outsidePlan(ops)}, nil
	})
	h.q.poke() // the committer rewrites .git/index when idle
	return err
}

// reconcile runs Outside's comparison over every tracked file on disk and
// every tracked path of the head, using .git/index as the stat cache so
// that only files changed since the index was written are read. writeMu
// is held.
func (h *History) reconcile(ctx context.Context) error {
	files, err := h.opt.Files()
	if err != nil {
		return fmt.Errorf("history: list the wing's files: %w", err)
	}
	cache := h.loadStatCache()
	_, ms, err := h.commitWith(ctx, func(plumbing.Hash) ([]plan, error) {
		ds, err := h.reconcileOps(files, cache)
		if err != nil || len(ds) == 0 {
			return nil, err
		}
		return []plan{h.outsidePlan(pairRenames(ds))}, nil
	})
	if len(ms) > 0 {
		h.log.Info("history: recorded the files changed while the shard was stopped", "files", len(ms[0].changes))
	}
	return err
}

// reconcileOps compares the head's tracked files with the files on disk:
// one walk of the head's trees, one look at each file.
func (h *History) reconcileOps(files []string, cache *statCache) ([]diskOp, error) {
	busy := h.q.busyPaths()
	onDisk := make(map[string]bool, len(files))
	for _, f := range files {
		if h.opt.Tracked(f) {
			onDisk[f] = true
		}
	}
	inHead := map[string]bool{}
	var ds []diskOp
	for _, d := range h.treeDirs() {
		err := h.tree.Files(d, func(p string, blob plumbing.Hash, mode filemode.FileMode) error {
			rel, ok := h.repo.brainPath(p)
			if !ok || !isFile(mode) || !h.opt.Tracked(rel) {
				return nil
			}
			inHead[rel] = true
			if busy[rel] {
				return nil
			}
			if !onDisk[rel] {
				ds = append(ds, diskOp{op: Op{Path: rel, Remove: true}, had: true, old: blob})
				return nil
			}
			d, changed, err := h.compareFile(rel, true, blob, cache)
			if changed {
				ds = append(ds, d)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	for i, f := range files {
		if !onDisk[f] || inHead[f] || busy[f] || i > 0 && files[i-1] == f {
			continue
		}
		d, changed, err := h.compareFile(f, false, plumbing.ZeroHash, nil)
		if err != nil {
			return nil, err
		}
		if changed {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// headPaths lists the tracked paths of the tree model (the head).
func (h *History) headPaths() ([]string, error) {
	var out []string
	for _, d := range h.treeDirs() {
		err := h.tree.Files(d, func(p string, _ plumbing.Hash, mode filemode.FileMode) error {
			if rel, ok := h.repo.brainPath(p); ok && isFile(mode) && h.opt.Tracked(rel) {
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// diskOp is one difference between the disk and the tree model.
type diskOp struct {
	op   Op
	had  bool
	old  plumbing.Hash // the tree's blob (had)
	blob plumbing.Hash // the disk's blob (not a removal)
}

// diskOps compares the files at paths with the tree model and returns the
// operations that bring the tree to the disk. cache (optional) skips
// files whose stat data says they are what the index recorded.
func (h *History) diskOps(paths []string, cache *statCache) ([]Op, error) {
	busy := h.q.busyPaths()
	sort.Strings(paths)
	var ds []diskOp
	for i, p := range paths {
		if i > 0 && paths[i-1] == p || busy[p] {
			continue
		}
		old, _, had, err := h.tree.Lookup(h.repo.treePath(p))
		if err != nil {
			return nil, err
		}
		d, changed, err := h.compareFile(p, had, old, cache)
		if err != nil {
			return nil, err
		}
		if changed {
			ds = append(ds, d)
		}
	}
	return pairRenames(ds), nil
}

// pairRenames turns the differences into operations: a removed path whose
// blob an added path has is a rename.
func pairRenames(ds []diskOp) []Op {
	gone := map[plumbing.Hash]int{}
	for i, d := range ds {
		if d.op.Remove {
			gone[d.old] = i
		}
	}
	used := map[int]bool{}
	for i := range ds {
		if d := &ds[i]; !d.op.Remove && !d.had {
			if j, ok := gone[d.blob]; ok && !used[j] {
				used[j] = true
				d.op.From = ds[j].op.Path
			}
		}
	}
	var ops []Op
	for i, d := range ds {
		if !used[i] {
			ops = append(ops, d.op)
		}
	}
	return ops
}

// compareFile compares the file at brain path p with the tree's blob old
// (had: the tree has one).
func (h *History) compareFile(p string, had bool, old plumbing.Hash, cache *statCache) (diskOp, bool, error) {
	d := diskOp{op: Op{Path: p}, had: had, old: old}
	if cache != nil && had {
		if fi, err := os.Lstat(h.abs(p)); err == nil && cache.clean(h.repo.treePath(p), fi, old) {
			return d, false, nil
		}
	}
	b, err := h.readFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if !had {
			return d, false, nil
		}
		d.op.Remove = true
		return d, true, nil
	}
	if err != nil {
		return d, false, err
	}
	d.blob = gitstore.Hash(plumbing.BlobObject, b)
	if had && d.blob == old {
		if cache != nil {
			// Unchanged, but .git/index did not say so (a crash came before
			// its update): bring the entry up to date.
			h.idxDirty[p] = true
		}
		return d, false, nil
	}
	d.op.Content = b
	return d, true, nil
}

func (h *History) outsidePlan(ops []Op) plan {
	m := meta{Wing: h.opt.Wing, Action: ActionOutside}
	for _, op := range ops {
		if op.From != "" {
			m.MovedFrom = append(m.MovedFrom, op.From)
		}
	}
	if len(ops) == 1 {
		m.Subject = "Outside edit of " + ops[0].Path
	} else {
		m.Subject = "Outside edits of " + strconv.Itoa(len(ops)) + " files"
	}
	return plan{meta: m, author: h.opt.Service, at: h.opt.Now(), ops: ops}
}
