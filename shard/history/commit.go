package history

import (
	"context"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// plan is one commit to make: its message, author, time and operations
// (brain-relative paths).
type plan struct {
	meta       meta
	author     Identity
	at         time.Time
	ops        []Op
	allowEmpty bool // the purge's audit commit changes no file
}

// made is a commit built: what the version index records of it.
type made struct {
	ci      *commitInfo
	changes []pathChange
}

func (h *History) planOf(p *Pending) plan {
	c := &p.rec.change
	m := meta{Subject: c.Subject, Reason: c.Reason, Wing: h.opt.Wing, Action: c.Action, Tool: c.Tool, Key: c.Key, Seq: p.seq}
	for _, op := range c.Ops {
		if op.From != "" {
			m.MovedFrom = append(m.MovedFrom, op.From)
		}
	}
	return plan{meta: m, author: Identity{Name: c.Author, Email: c.Author}, at: p.rec.at, ops: c.Ops}
}

// build makes the commits of plans on top of base, in order, on the tree
// model, writing their objects into b; it returns the new head (base
// when no plan changed anything). Plans that change nothing make no
// commit.
func (h *History) build(base plumbing.Hash, plans []plan, b gitstore.Sink) (plumbing.Hash, []made, error) {
	head := base
	root, err := h.tree.Write(b)
	if err != nil {
		return head, nil, err
	}
	var out []made
	for _, pl := range plans {
		changes, err := h.applyOps(pl.ops, b)
		if err != nil {
			return head, nil, err
		}
		newRoot, err := h.tree.Write(b)
		if err != nil {
			return head, nil, err
		}
		if newRoot == root && !pl.allowEmpty {
			continue
		}
		id, err := writeCommit(b, pl, newRoot, head)
		if err != nil {
			return head, nil, err
		}
		ci := &commitInfo{id: id, at: pl.at, author: pl.author.Email, action: pl.meta.Action, tool: pl.meta.Tool,
			reason: oneLine(pl.meta.Reason), key: pl.meta.Key, seq: pl.meta.Seq}
		out = append(out, made{ci: ci, changes: renamesFirst(changes)})
		head, root = id, newRoot
	}
	return head, out, nil
}

func (h *History) applyOps(ops []Op, b gitstore.Sink) ([]pathChange, error) {
	var changes []pathChange
	for _, op := range ops {
		tp := h.repo.treePath(op.Path)
		if op.Remove {
			gone, err := h.tree.Remove(tp)
			if err != nil {
				return nil, err
			}
			if gone {
				changes = append(changes, pathChange{path: op.Path, removed: true})
			}
			continue
		}
		from := ""
		if op.From != "" {
			gone, err := h.tree.Remove(h.repo.treePath(op.From))
			if err != nil {
				return nil, err
			}
			if gone {
				from = op.From
			}
		}
		blob, err := b.Put(plumbing.BlobObject, op.Content)
		if err != nil {
			return nil, err
		}
		old, _, had, err := h.tree.Lookup(tp)
		if err != nil {
			return nil, err
		}
		if had && old == blob && from == "" {
			continue
		}
		if err := h.makeWay(tp); err != nil {
			return nil, err
		}
		if err := h.tree.Set(tp, blob, 0); err != nil {
			return nil, err
		}
		if had {
			h.tree.Hint(blob, old)
		}
		changes = append(changes, pathChange{path: op.Path, from: from, blob: blob, sum: sumOf(op.Content),
			purged: len(op.Content) >= len(purgeNotice) && string(op.Content[:len(purgeNotice)]) == purgeNotice})
	}
	return changes, nil
}

func writeCommit(b gitstore.Sink, pl plan, root, parent plumbing.Hash) (plumbing.Hash, error) {
	sig := object.Signature{Name: oneLine(pl.author.Name), Email: oneLine(pl.author.Email), When: pl.at}
	c := &object.Commit{Author: sig, Committer: sig, Message: pl.meta.message(), TreeHash: root}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	return gitstore.PutCommit(b, c)
}

// commitPlans makes plans durable commits on the branch: under the ref
// lock it catches up with the branch head, builds the commits on it,
// makes their objects durable, then moves the ref. It returns the new
// head and what each commit made.
func (h *History) commitPlans(ctx context.Context, plans []plan) (plumbing.Hash, []made, error) {
	return h.commitWith(ctx, func(plumbing.Hash) ([]plan, error) { return plans, nil })
}

// commitWith is commitPlans with the plans made by mk under the ref lock,
// once the model is at the branch head (which mk is given).
func (h *History) commitWith(ctx context.Context, mk func(head plumbing.Hash) ([]plan, error)) (plumbing.Hash, []made, error) {
	lock, head, err := h.lockHead(ctx)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	defer lock.Release()
	plans, err := mk(head)
	if err != nil || len(plans) == 0 {
		return head, nil, err
	}
	b, err := h.sinkFor(plans)
	if err != nil {
		return head, nil, err
	}
	newHead, ms, err := h.build(head, plans, b)
	if err == nil && newHead != head {
		err = b.Commit()
		if err == nil {
			err = lock.Commit([]byte(newHead.String() + "\n"))
		}
	}
	if err != nil || newHead == head {
		b.Abort()
	}
	if err != nil {
		h.discardModel()
		return head, nil, err
	}
	h.account(b)
	if newHead == head {
		return head, nil, nil
	}
	h.tree.Base = newHead
	h.mu.Lock()
	if h.ix.head == head {
		for _, m := range ms {
			h.ix.apply(m.ci, m.changes)
		}
		h.ix.head = newHead
	} else {
		err = h.catchUpLocked(newHead)
	}
	h.snapDirty += len(ms)
	h.mu.Unlock()
	h.markIndex(ms)
	return newHead, ms, err
}

// account counts what a commit batch's sink left for the packer: loose
// objects, or a pack toward the next merge of small packs.
func (h *History) account(b gitstore.Sink) {
	if lb, ok := b.(*gitstore.LooseBatch); ok {
		n, size := lb.Written()
		h.loose.Add(int64(n))
		h.looseBytes.Add(size)
	} else {
		h.newPacks.Add(1)
	}
}

// sinkFor picks the objects' home for a batch: loose objects for one
// commit, one pack for several. In a pack, a hall's tree that several
// commits of the batch change is written whole once and then as deltas
// of a few bytes; as loose objects each commit would write it whole
// (2 MB for the largest hall of a 100,000-note wing).
func (h *History) sinkFor(plans []plan) (gitstore.Sink, error) {
	if len(plans) < 2 {
		return h.objs.Batch(), nil
	}
	pw, err := h.objs.NewPackWriter()
	if err != nil {
		return nil, err
	}
	pw.Dedupe = true
	return pw, nil
}

// lockHead takes the ref lock and brings the version index and the tree
// model to the branch head it guards.
func (h *History) lockHead(ctx context.Context) (*gitstore.Lock, plumbing.Hash, error) {
	if err := h.followHEAD(); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	lock, err := h.repo.refs.Lock(ctx, h.repo.currentBranch())
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	head, err := h.repo.refs.Read(h.repo.currentBranch())
	if err == nil {
		err = h.syncModel(head)
	}
	if err != nil {
		lock.Release()
		return nil, plumbing.ZeroHash, err
	}
	return lock, head, nil
}

// syncModel brings the version index and the tree model to head.
func (h *History) syncModel(head plumbing.Hash) error {
	h.mu.Lock()
	err := h.catchUpLocked(head)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	if h.tree.Base == head && !head.IsZero() {
		return nil
	}
	root := plumbing.ZeroHash
	if !head.IsZero() {
		c, err := h.objs.Commit(head)
		if err != nil {
			return err
		}
		root = c.TreeHash
	}
	h.tree.Reset(head, root)
	return nil
}

// discardModel drops the tree model after a failed build (its nodes may
// name objects that were never made durable).
func (h *History) discardModel() {
	hints := h.tree.Hints
	h.tree = gitstore.NewTree(h.objs)
	h.tree.Hints = hints
}

// makeWay clears the way of a note's file at tree path tp (the local
// write wins over an entry the shard never loaded: docs/history.md
// "Files a remote pushes that the wing does not load").
func (h *History) makeWay(tp string) error {
	removed, blocker, err := h.tree.ClearWay(tp, strings.Count(h.repo.prefix, "/")+1)
	if blocker != "" {
		err = &BlockedError{Path: tp, Blocker: blocker}
	}
	if len(removed) > 0 {
		h.log.Warn("history: entries that were never notes stood where a note is written; the note replaces them", "path", tp, "removed", removed)
	}
	return err
}
