package history

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// scrubbing is a repack waiting for the ref update: the pack it made and
// what it replaces.
type scrubbing struct {
	pack  plumbing.Hash
	old   []gitstore.PackInfo
	loose []gitstore.LooseObject
}

// repack packs every object reachable once the branch names head (from
// every other ref too, and the blobs .git/index stages) into one new
// pack (except the purged blobs), made durable, and lists the packs and loose objects it replaces.
// The ref lock is held, so no other writer adds objects meanwhile.
func (h *History) repack(head plumbing.Hash, except map[plumbing.Hash]bool) (*scrubbing, error) {
	keep, err := h.reachable(head, except)
	if err != nil {
		return nil, err
	}
	sc := &scrubbing{}
	if sc.old, err = h.objs.ListPacks(); err != nil {
		return nil, err
	}
	if sc.loose, err = h.objs.ListLoose(); err != nil {
		return nil, err
	}
	if sc.pack, err = h.objs.EncodePack(slices.Collect(maps.Keys(keep)), h.tree.Hints); err != nil {
		return nil, err
	}
	return sc, nil
}

// scrub deletes, once the ref names the new history, every pack and loose
// object the repack replaced, with the reflogs, ORIG_HEAD, FETCH_HEAD and
// the caches that name old objects (commit-graph, multi-pack-index): the
// purged bytes leave the disk.
func (h *History) scrub(sc *scrubbing) error {
	for _, p := range sc.old {
		if filepath.Base(p.Base) != "pack-"+sc.pack.String() {
			gitstore.RemovePack(p.Base)
		}
	}
	for _, l := range sc.loose {
		if err := os.Remove(l.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("history: delete a loose object after the purge: %w", err)
		}
	}
	h.loose.Store(0)
	h.looseBytes.Store(0)
	for _, p := range []string{"logs", "ORIG_HEAD", "FETCH_HEAD", filepath.Join("objects", "info", "commit-graph"),
		filepath.Join("objects", "info", "commit-graphs"), filepath.Join("objects", "pack", "multi-pack-index")} {
		if err := os.RemoveAll(filepath.Join(h.repo.common, p)); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if h.repo.gitDir != h.repo.common {
		for _, p := range []string{"logs", "ORIG_HEAD", "FETCH_HEAD"} {
			os.RemoveAll(filepath.Join(h.repo.gitDir, p))
		}
	}
	h.objs.Reindex()
	return nil
}

// reachable returns every object reachable from the refs (the branch
// taken at head) and the index, but not the blobs of except (purged:
// .git/index may still stage one; its entries are rewritten after).
func (h *History) reachable(head plumbing.Hash, except map[plumbing.Hash]bool) (map[plumbing.Hash]bool, error) {
	refs, err := h.repo.refs.All()
	if err != nil {
		return nil, err
	}
	refs[h.repo.currentBranch()] = head
	seen := map[plumbing.Hash]bool{}
	var stack []plumbing.Hash
	for _, id := range refs {
		stack = append(stack, id)
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] || id.IsZero() {
			continue
		}
		more, err := h.visit(id, seen)
		if err != nil {
			return nil, err
		}
		stack = append(stack, more...)
	}
	idx, _, err := h.readIndex()
	if err != nil {
		return nil, err
	}
	for _, e := range idx.Entries {
		if !e.Hash.IsZero() && e.Mode != filemode.Submodule && !except[e.Hash] && h.objs.Has(e.Hash) {
			seen[e.Hash] = true
		}
	}
	return seen, nil
}

// visit marks object id and returns the objects it names.
func (h *History) visit(id plumbing.Hash, seen map[plumbing.Hash]bool) ([]plumbing.Hash, error) {
	obj, err := h.objs.Get(id, plumbing.AnyObject)
	if err != nil {
		return nil, err
	}
	seen[id] = true
	switch obj.Type() {
	case plumbing.TagObject:
		var t object.Tag
		if err := t.Decode(obj); err != nil {
			return nil, fmt.Errorf("history: decode tag %s: %w", id, err)
		}
		return []plumbing.Hash{t.Target}, nil
	case plumbing.CommitObject:
		var c object.Commit
		if err := c.Decode(obj); err != nil {
			return nil, fmt.Errorf("history: decode commit %s: %w", id, err)
		}
		return append([]plumbing.Hash{c.TreeHash}, c.ParentHashes...), nil
	case plumbing.TreeObject:
		raw, err := gitstore.ReadAll(obj)
		var out []plumbing.Hash
		if err == nil {
			err = gitstore.WalkTree(raw, func(mode filemode.FileMode, _ []byte, e plumbing.Hash) error {
				switch mode {
				case filemode.Submodule: // another repository's commit
				case filemode.Dir:
					out = append(out, e)
				default:
					seen[e] = true // blobs: named, not read
				}
				return nil
			})
		}
		if err != nil {
			return nil, fmt.Errorf("history: decode tree %s: %w", id, err)
		}
		return out, nil
	}
	return nil, nil
}
