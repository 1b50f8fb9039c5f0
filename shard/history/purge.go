package history

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/gitstore"
)

// Purge removes content from history, the one rewrite of history: every
// commit from the first that holds a purged version to the head is
// rewritten with the version's blob replaced by a short notice (so the
// lineage keeps its versions, marked purged), an audit commit is added
// (action purge, by the curator; for every version it also removes the
// note, which the caller then removes from the brain), and the bytes are
// then removed from the disk: every reachable object is repacked into one
// pack and every other pack, loose object, reflog and ORIG_HEAD/FETCH_HEAD
// is deleted, .git/index and the snapshot are rewritten, and the pending
// log keeps no segment from before. Commits after the purge point get new
// ids. It must be enabled (Options.AllowPurge). An error after the branch
// moved comes with the result (its Blobs set): the rewrite stands.
func (h *History) Purge(ctx context.Context, req PurgeRequest) (PurgeResult, error) {
	if err := h.closed(); err != nil {
		return PurgeResult{}, err
	}
	if !h.opt.AllowPurge {
		return PurgeResult{}, brain.Errorf(brain.CodeInvalidArgument, "purging history is disabled for this wing: an operator enables it in the shard's configuration; until then, update or archive the note instead")
	}
	if strings.TrimSpace(req.Reason) == "" {
		return PurgeResult{}, brain.Errorf(brain.CodeInvalidArgument, "a purge needs a reason: it is recorded in the purge notice and the audit commit")
	}
	if req.Author = oneLine(req.Author); req.Author == "" || strings.ContainsAny(req.Author, "<>") {
		return PurgeResult{}, fmt.Errorf("history: a purge needs the curator's email, got %q", req.Author)
	}
	if err := h.quiesce(ctx); err != nil {
		return PurgeResult{}, err
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	lock, head, err := h.lockHead(ctx)
	if err != nil {
		return PurgeResult{}, err
	}
	defer lock.Release()
	target, err := h.purgeTarget(req)
	if err != nil {
		return PurgeResult{}, err
	}
	if err := h.checkOtherRefs(target, req.DropRefs); err != nil {
		return PurgeResult{}, err
	}
	res, err := h.rewrite(lock, head, req, target)
	if err != nil {
		return res, err // res is set once the branch names the rewrite
	}
	h.plog.dropThrough(h.q.doneSeq())
	h.idxAll = true
	if err := h.writeIndex(ctx); err != nil {
		return res, err
	}
	if err := h.saveSnapshot(); err != nil {
		return res, err
	}
	h.log.Info("history: purged", "path", req.Path, "versions", len(res.Purged), "rewritten_commits", res.Rewritten, "curator", req.Author)
	return res, nil
}

// quiesce commits every change begun so far, and starts a new pending-log
// segment, so that the older ones (which hold the content) can be dropped.
func (h *History) quiesce(ctx context.Context) error {
	if err := h.plog.rotate(); err != nil {
		return err
	}
	h.q.mu.Lock()
	last := h.q.last
	h.q.mu.Unlock()
	return h.q.wait(ctx, last)
}

// purgeTarget is what a purge replaces.
type purgeTarget struct {
	path    string
	every   bool
	victims map[plumbing.Hash]bool // the blobs purged
	paths   map[string]bool        // brain paths where a victim blob is a version
}

// purgeTarget validates the request against the version index.
func (h *History) purgeTarget(req PurgeRequest) (*purgeTarget, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	l, err := h.ix.lineageOf(req.Path)
	if err != nil {
		return nil, err
	}
	t := &purgeTarget{path: req.Path, every: req.Version == "", victims: map[plumbing.Hash]bool{}, paths: map[string]bool{}}
	if t.every {
		for i := range l.vs {
			if v := &l.vs[i]; !v.removed && !v.purged {
				t.victims[v.blob] = true
			}
		}
		if len(t.victims) == 0 {
			return nil, brain.Errorf(brain.CodeInvalidArgument, "%s has no content left in history to purge", req.Path)
		}
	} else {
		v, err := h.ix.find(req.Path, req.Version)
		if err != nil {
			return nil, err
		}
		switch {
		case v.removed:
			return nil, brain.Errorf(brain.CodeInvalidArgument, "version %s removed %s: it has no content to purge; pick a version with content", req.Version, req.Path)
		case v.purged:
			return nil, brain.Errorf(brain.CodeInvalidArgument, "version %s of %s is already purged", req.Version, req.Path)
		case v == l.newest():
			return nil, brain.Errorf(brain.CodeInvalidArgument, "version %s is the current version of %s: update or archive the note first, then purge that version", req.Version, req.Path)
		}
		t.victims[v.blob] = true
	}
	for _, ol := range h.ix.lineages() {
		for i := range ol.vs {
			if v := &ol.vs[i]; !v.removed && t.victims[v.blob] {
				t.paths[v.path] = true
			}
		}
		if n := ol.newest(); ol != l && !n.removed && t.victims[n.blob] {
			return nil, brain.Errorf(brain.CodeInvalidArgument, "the same content is the current version of %s: update or archive that note first, then purge", n.path)
		}
	}
	if !t.every && t.victims[l.newest().blob] { // the one victim
		return nil, brain.Errorf(brain.CodeInvalidArgument, "version %s holds the same content as the current version of %s: update or archive the note first, then purge that version", req.Version, req.Path)
	}
	return t, nil
}

// checkOtherRefs refuses when a ref other than the branch (and the loose
// refs the purge drops) reaches a purged blob: rewriting the branch would
// not remove the bytes.
func (h *History) checkOtherRefs(t *purgeTarget, drop []string) error {
	refs, err := h.repo.refs.All()
	if err != nil {
		return err
	}
	branch := h.repo.currentBranch()
	seen := map[plumbing.Hash]bool{}
	var names []string
	for name, id := range refs {
		if name == branch || h.repo.refs.Droppable(name, drop) {
			continue
		}
		reach, err := h.reaches(id, t, seen)
		if err != nil {
			return err
		}
		if reach {
			names = append(names, string(name))
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		return brain.Errorf(brain.CodeInvalidArgument, "the content to purge is also reachable from %s: delete or rewrite those refs in the brain's repository first, then purge", strings.Join(names, ", "))
	}
	return nil
}

// reaches reports whether a commit reachable from id (through tags and
// parents) holds a purged blob at one of the target's paths.
func (h *History) reaches(id plumbing.Hash, t *purgeTarget, seen map[plumbing.Hash]bool) (bool, error) {
	stack := []plumbing.Hash{id}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		obj, err := h.objs.Get(cur, plumbing.AnyObject)
		if err != nil {
			return false, err
		}
		switch obj.Type() {
		case plumbing.TagObject:
			var tag object.Tag
			if err := tag.Decode(obj); err != nil {
				return false, fmt.Errorf("history: decode tag %s: %w", cur, err)
			}
			stack = append(stack, tag.Target)
		case plumbing.CommitObject:
			c, err := h.objs.Commit(cur)
			if err != nil {
				return false, err
			}
			for p := range t.paths {
				if b, _ := h.blobAt(c.TreeHash, h.repo.treePath(p)); t.victims[b] {
					return true, nil
				}
			}
			stack = append(stack, c.ParentHashes...)
		}
	}
	return false, nil
}

// blobAt returns the blob at tree path p below root (zero if none).
func (h *History) blobAt(root plumbing.Hash, p string) (plumbing.Hash, error) {
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	t, err := h.subtree(root, dir)
	if err != nil || t.IsZero() {
		return plumbing.ZeroHash, err
	}
	es, err := h.trees.entries(h.objs, t)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, e := range es {
		if e.Name == name && isFile(e.Mode) {
			return e.Hash, nil
		}
	}
	return plumbing.ZeroHash, nil
}

// rewrite rewrites the branch's commits with the purged blobs replaced,
// adds the audit commit, makes the objects durable, repacks what the new
// history reaches, moves the ref, then deletes everything else.
func (h *History) rewrite(lock *gitstore.Lock, head plumbing.Hash, req PurgeRequest, t *purgeTarget) (PurgeResult, error) {
	at := h.opt.Now()
	text := []byte(purgeNotice + req.Author + " at " + at.UTC().Format(time.RFC3339) + ": " + oneLine(req.Reason) + "\n") // the placeholder blob
	b := h.objs.Batch()
	placeholder, err := b.Put(plumbing.BlobObject, text)
	if err != nil {
		return PurgeResult{}, err
	}
	rw := &rewriter{h: h, b: b, t: t, placeholder: placeholder, memo: map[string]plumbing.Hash{}}
	ids, newHead, err := rw.commits(head)
	if err == nil {
		err = b.Commit() // the rewritten history is read back below
	}
	if err != nil {
		b.Abort()
		return PurgeResult{}, err
	}
	b = h.objs.Batch()
	if err := h.resetModelTo(newHead); err != nil {
		b.Abort()
		return PurgeResult{}, err
	}
	pl := h.auditPlan(req, t, at)
	finalHead, ms, err := h.build(newHead, []plan{pl}, b)
	var sc *scrubbing
	if err == nil {
		err = b.Commit()
	}
	if err == nil {
		err = h.repo.refs.Drop(req.DropRefs)
	}
	if err == nil {
		sc, err = h.repack(finalHead, t.victims)
	}
	if err == nil {
		err = lock.Commit([]byte(finalHead.String() + "\n"))
	}
	if err != nil {
		b.Abort()
		h.discardModel()
		return PurgeResult{}, err
	}
	h.tree.Base = finalHead
	res := h.purgedIndex(req, t, ids, ms, finalHead, placeholder, text)
	return res, h.scrub(sc)
}

// resetModelTo points the tree model at commit id, with no reused nodes.
func (h *History) resetModelTo(id plumbing.Hash) error {
	c, err := h.objs.Commit(id)
	if err != nil {
		return err
	}
	h.tree = gitstore.NewTree(h.objs)
	h.tree.Reset(id, c.TreeHash)
	return nil
}

// auditPlan is the purge's audit commit: no content, and for every
// version the removal of the note.
func (h *History) auditPlan(req PurgeRequest, t *purgeTarget, at time.Time) plan {
	subject := cmp.Or(oneLine(req.Subject), "purge "+req.Path)
	m := meta{Subject: subject, Reason: req.Reason, Wing: h.opt.Wing, Action: ActionPurge, Tool: req.Tool}
	pl := plan{meta: m, author: Identity{Name: req.Author, Email: req.Author}, at: at, allowEmpty: true}
	if t.every {
		pl.ops = []Op{{Path: req.Path, Remove: true}}
	}
	return pl
}

// purgedIndex updates the version index after a rewrite: new commit ids,
// the purged versions marked and pointing at the notice, then the audit
// commit.
func (h *History) purgedIndex(req PurgeRequest, t *purgeTarget, ids map[plumbing.Hash]plumbing.Hash, ms []made, head, placeholder plumbing.Hash, text []byte) PurgeResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ix.remap(ids)
	res := PurgeResult{Path: req.Path, RemoveFile: t.every, Rewritten: len(ids)}
	for b := range t.victims {
		res.Blobs = append(res.Blobs, b.String())
	}
	slices.Sort(res.Blobs)
	sum := sumOf(text)
	for _, l := range h.ix.lineages() {
		for i := range l.vs {
			v := &l.vs[i]
			if v.removed || !t.victims[v.blob] || !t.paths[v.path] {
				continue
			}
			v.blob, v.sum, v.purged = placeholder, sum, true
			if l == h.ix.byPath[req.Path] {
				res.Purged = append(res.Purged, v.public())
			}
		}
	}
	for _, m := range ms {
		h.ix.apply(m.ci, m.changes)
		res.Audit = m.ci.id.String()
	}
	h.ix.head = head
	h.snapDirty++
	return res
}

// rewriter rewrites commits with purged blobs replaced.
type rewriter struct {
	h           *History
	b           *gitstore.LooseBatch
	t           *purgeTarget
	placeholder plumbing.Hash
	memo        map[string]plumbing.Hash // tree id + its path → rewritten id
}

// commits rewrites every commit reachable from head whose tree (or a
// parent) changes; it returns the old → new ids of those rewritten and
// the new head.
func (rw *rewriter) commits(head plumbing.Hash) (map[plumbing.Hash]plumbing.Hash, plumbing.Hash, error) {
	all, _, err := rw.h.newCommits(plumbing.ZeroHash, head)
	if err != nil {
		return nil, head, err
	}
	ids := map[plumbing.Hash]plumbing.Hash{}
	for _, c := range topoOrder(all, head) {
		tree, err := rw.tree(c.TreeHash, "")
		if err != nil {
			return nil, head, err
		}
		changed := tree != c.TreeHash
		parents := make([]plumbing.Hash, len(c.ParentHashes))
		for i, p := range c.ParentHashes {
			parents[i] = p
			if n, ok := ids[p]; ok {
				parents[i], changed = n, true
			}
		}
		if !changed {
			continue
		}
		nc := *c
		nc.TreeHash, nc.ParentHashes, nc.PGPSignature = tree, parents, ""
		id, err := gitstore.PutCommit(rw.b, &nc)
		if err != nil {
			return nil, head, err
		}
		ids[c.Hash] = id
	}
	if n, ok := ids[head]; ok {
		head = n
	}
	return ids, head, nil
}

// tree returns tree id (at tree path dir) with every purged blob at a
// target path replaced by the notice.
func (rw *rewriter) tree(id plumbing.Hash, dir string) (plumbing.Hash, error) {
	key := id.String() + dir
	if n, ok := rw.memo[key]; ok {
		return n, nil
	}
	es, err := rw.h.trees.entries(rw.h.objs, id)
	if err != nil {
		return id, err
	}
	out := slices.Clone(es)
	changed := false
	for i := range out {
		e := &out[i]
		p := dir + e.Name
		switch {
		case e.Mode == filemode.Dir && rw.below(p+"/"):
			n, err := rw.tree(e.Hash, p+"/")
			if err != nil {
				return id, err
			}
			changed = changed || n != e.Hash
			e.Hash = n
		case isFile(e.Mode) && rw.t.victims[e.Hash]:
			if rel, ok := rw.h.repo.brainPath(p); ok && rw.t.paths[rel] {
				e.Hash, changed = rw.placeholder, true
			}
		}
	}
	n := id
	if changed {
		var raw []byte // out is in order already
		for _, e := range out {
			raw = gitstore.AppendTreeEntry(raw, e.Mode, e.Name, e.Hash)
		}
		if n, err = rw.b.Put(plumbing.TreeObject, raw); err != nil {
			return id, err
		}
	}
	rw.memo[key] = n
	return n, nil
}

// below reports whether a target path lies below tree directory dir.
func (rw *rewriter) below(dir string) bool {
	for p := range rw.t.paths {
		if strings.HasPrefix(rw.h.repo.treePath(p), dir) {
			return true
		}
	}
	return false
}
