package history

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// purgeNotice starts the placeholder blob of a purged version; a blob
// that starts with it is read as purged.
const purgeNotice = "This version was purged by "

// catchUpLocked brings the version index to head, the commit the branch
// names now: it reads the commits made since the head it knows (by
// anyone: another shard, a person, a pull), or rebuilds the index from
// the whole history when the head it knows is no longer an ancestor
// (history rewritten elsewhere). h.mu is held.
func (h *History) catchUpLocked(head plumbing.Hash) error {
	ix := h.ix
	if ix.head == head {
		return nil
	}
	if head.IsZero() {
		h.log.Warn("history: the branch has no commit any more; the version index starts over", "branch", h.repo.branch)
		h.ix = newVersionIndex()
		return nil
	}
	fresh, ancestor, err := h.newCommits(ix.head, head)
	if err != nil {
		return err
	}
	if !ancestor {
		h.log.Warn("history: the history was rewritten elsewhere (the last known head is no longer an ancestor); rebuilding the version index from git",
			"known", ix.head, "head", head)
		if fresh, _, err = h.newCommits(plumbing.ZeroHash, head); err != nil {
			return err
		}
		ix = newVersionIndex()
	}
	order := topoOrder(fresh, head)
	merges := false
	for _, c := range order {
		merges = merges || len(c.ParentHashes) > 1
		ci, changes, err := h.commitChanges(c)
		if err != nil {
			return err
		}
		ix.apply(ci, changes)
		h.markOthers(changes, false)
	}
	if !ancestor {
		h.markOthers(nil, true)
	}
	if merges {
		if err := h.reconcileIndex(ix, order[len(order)-1]); err != nil {
			return err
		}
	}
	ix.head = head
	h.ix = ix
	h.snapDirty += len(order)
	if len(order) > 0 {
		h.log.Debug("history: read new commits", "commits", len(order), "head", head)
	}
	return nil
}

// newCommits returns the commits reachable from head but not from known
// (every commit reachable from head when known is zero), and whether
// known is an ancestor of head (false too when known is gone: rewritten
// and collected, so the index is rebuilt).
func (h *History) newCommits(known, head plumbing.Hash) (map[plumbing.Hash]*object.Commit, bool, error) {
	w, err := gitstore.NewCommits(h.objs.Commit, head, known, 0)
	if errors.Is(err, gitstore.ErrOldMissing) && errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return w.Fresh, w.Ancestor, nil
}

// topoOrder orders the commits of set parents first; of a merge's
// parents, the later ones' ancestry comes first, so that the first
// parent is always the commit applied right before the merge (which is
// compared with it).
func topoOrder(set map[plumbing.Hash]*object.Commit, head plumbing.Hash) []*object.Commit {
	const (
		visiting = 1
		done     = 2
	)
	state := map[plumbing.Hash]uint8{}
	var order []*object.Commit
	stack := []plumbing.Hash{head}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		c := set[id]
		switch {
		case c == nil || state[id] == done:
			stack = stack[:len(stack)-1]
		case state[id] == visiting:
			state[id] = done
			order = append(order, c)
			stack = stack[:len(stack)-1]
		default:
			state[id] = visiting
			for _, p := range c.ParentHashes { // the last pushed is visited first
				if set[p] != nil && state[p] == 0 {
					stack = append(stack, p)
				}
			}
		}
	}
	return order
}

// commitChanges reads what commit c did to the wing's tracked paths,
// compared with its first parent.
func (h *History) commitChanges(c *object.Commit) (*commitInfo, []pathChange, error) {
	parentTree := gitstore.EmptyTree
	if len(c.ParentHashes) > 0 {
		p, err := h.objs.Commit(c.ParentHashes[0])
		if err != nil {
			return nil, nil, err
		}
		parentTree = p.TreeHash
	}
	diffs, err := h.diffTrees(parentTree, c.TreeHash)
	if err != nil {
		return nil, nil, err
	}
	m := parseMessage(c.Message)
	ci := &commitInfo{id: c.Hash, at: c.Author.When, author: c.Author.Email, action: ActionOutside, reason: subject(m, c.Message)}
	if m.ours {
		ci.action, ci.tool, ci.reason, ci.key = cmp.Or(m.Action, ActionOutside), m.Tool, m.Reason, m.Key
		if m.Wing == h.opt.Wing {
			ci.seq = m.Seq
		}
	}
	changes, err := h.pairRenames(diffs, m)
	if err != nil {
		return nil, nil, err
	}
	return ci, changes, nil
}

// fileDiff is one tracked file a commit changed.
type fileDiff struct {
	path     string // brain-relative
	old, new plumbing.Hash
}

// diffTrees lists the tracked files that differ between two root trees,
// looking only below Options.Dirs.
func (h *History) diffTrees(a, b plumbing.Hash) ([]fileDiff, error) {
	var out []fileDiff
	for _, d := range h.treeDirs() {
		ta, err := h.subtree(a, d)
		if err != nil {
			return nil, err
		}
		tb, err := h.subtree(b, d)
		if err != nil {
			return nil, err
		}
		if ta == tb {
			continue
		}
		if out, err = h.diffRec(ta, tb, d, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// treeDirs are the tree paths below which tracked files lie ("" for the
// whole tree).
func (h *History) treeDirs() []string {
	if len(h.opt.Dirs) == 0 {
		return []string{strings.TrimSuffix(h.repo.prefix, "/")}
	}
	out := make([]string, len(h.opt.Dirs))
	for i, d := range h.opt.Dirs {
		out[i] = h.repo.treePath(d)
	}
	return out
}

// subtree returns the id of the tree at path dir below root (the zero
// hash when there is none).
func (h *History) subtree(root plumbing.Hash, dir string) (plumbing.Hash, error) {
	cur := root
	if dir == "" || cur.IsZero() {
		return cur, nil
	}
	for _, name := range strings.Split(dir, "/") {
		es, err := h.trees.get(h.objs, cur)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		next := plumbing.ZeroHash
		for _, e := range es {
			if e.Name == name && e.Mode == filemode.Dir {
				next = e.Hash
				break
			}
		}
		if next.IsZero() {
			return next, nil
		}
		cur = next
	}
	return cur, nil
}

// diffRec appends the tracked files that differ between trees a and b
// (either may be zero: no tree) at tree path dir.
func (h *History) diffRec(a, b plumbing.Hash, dir string, out []fileDiff) ([]fileDiff, error) {
	ea, err := h.trees.entries(h.objs, a)
	if err != nil {
		return nil, err
	}
	eb, err := h.trees.entries(h.objs, b)
	if err != nil {
		return nil, err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y *object.TreeEntry
		switch {
		case j >= len(eb):
			x = &ea[i]
		case i >= len(ea):
			y = &eb[j]
		case ea[i].Name == eb[j].Name && (ea[i].Mode == filemode.Dir) == (eb[j].Mode == filemode.Dir):
			x, y = &ea[i], &eb[j]
		case gitstore.EntryLess(ea[i].Name, ea[i].Mode == filemode.Dir, eb[j].Name, eb[j].Mode == filemode.Dir):
			x = &ea[i]
		default:
			y = &eb[j]
		}
		if x != nil {
			i++
		}
		if y != nil {
			j++
		}
		if out, err = h.diffEntry(x, y, dir, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// diffEntry compares one name of two trees (x or y nil: absent there).
func (h *History) diffEntry(x, y *object.TreeEntry, dir string, out []fileDiff) ([]fileDiff, error) {
	if x != nil && y != nil && x.Mode == y.Mode && x.Hash == y.Hash {
		return out, nil // the same file or tree: most names of a big hall
	}
	e := x
	if e == nil {
		e = y
	}
	p := path.Join(dir, e.Name)
	if e.Mode == filemode.Dir {
		var ha, hb plumbing.Hash
		if x != nil {
			ha = x.Hash
		}
		if y != nil {
			hb = y.Hash
		}
		if ha == hb {
			return out, nil
		}
		return h.diffRec(ha, hb, p, out)
	}
	rel, ok := h.repo.brainPath(p)
	if !ok || !h.opt.Tracked(rel) {
		return out, nil
	}
	d := fileDiff{path: rel}
	if x != nil && isFile(x.Mode) {
		d.old = x.Hash
	}
	if y != nil && isFile(y.Mode) {
		d.new = y.Hash
	}
	if d.old == d.new {
		return out, nil
	}
	return append(out, d), nil
}

func isFile(m filemode.FileMode) bool { return m == filemode.Regular || m == filemode.Executable }

// pairRenames turns a commit's file differences into path changes: a
// removed path named by a Brainstem-Moved-From trailer, or (in a commit
// without trailers) one whose blob an added path has, is a rename.
func (h *History) pairRenames(diffs []fileDiff, m meta) ([]pathChange, error) {
	removed := map[string]plumbing.Hash{}
	var added []int
	for i, d := range diffs {
		switch {
		case d.new.IsZero():
			removed[d.path] = d.old
		case d.old.IsZero():
			added = append(added, i)
		}
	}
	from := map[int]string{} // index of an added diff → the path it left
	take := func(i int, src string) {
		from[i] = src
		delete(removed, src)
	}
	for _, src := range m.MovedFrom {
		if _, ok := removed[src]; !ok {
			continue
		}
		if i, ok := pickTarget(diffs, added, from, src, removed[src]); ok {
			take(i, src)
		}
	}
	if !m.ours {
		for _, i := range added {
			for src, b := range removed {
				if _, used := from[i]; !used && b == diffs[i].new {
					take(i, src)
					break
				}
			}
		}
	}
	var out []pathChange
	for i, d := range diffs {
		if d.new.IsZero() {
			if _, still := removed[d.path]; still {
				out = append(out, pathChange{path: d.path, removed: true})
			}
			continue
		}
		body, err := h.objs.Blob(d.new)
		if err != nil {
			return nil, err
		}
		out = append(out, pathChange{path: d.path, from: from[i], blob: d.new, sum: sumOf(body), purged: strings.HasPrefix(string(body), purgeNotice)})
	}
	return renamesFirst(out), nil
}

// pickTarget chooses the added path a Moved-From source went to: the one
// with the same blob, else the one with the same file name, else the only
// one left.
func pickTarget(diffs []fileDiff, added []int, from map[int]string, src string, blob plumbing.Hash) (int, bool) {
	var free []int
	for _, i := range added {
		if _, used := from[i]; !used {
			free = append(free, i)
		}
	}
	for _, i := range free {
		if diffs[i].new == blob {
			return i, true
		}
	}
	for _, i := range free {
		if path.Base(diffs[i].path) == path.Base(src) {
			return i, true
		}
	}
	if len(free) == 1 {
		return free[0], true
	}
	return 0, false
}

// renamesFirst orders a commit's changes so that renames come before
// creations that may reuse the path a rename left.
func renamesFirst(cs []pathChange) []pathChange {
	out := make([]pathChange, 0, len(cs))
	for _, c := range cs {
		if c.from != "" {
			out = append(out, c)
		}
	}
	for _, c := range cs {
		if c.from == "" {
			out = append(out, c)
		}
	}
	return out
}

// reconcileIndex makes the index's newest versions agree with commit c's
// tree, after a walk through merges: a path whose newest version is not
// what c holds gets a version of c.
func (h *History) reconcileIndex(ix *versionIndex, c *object.Commit) error {
	have := map[string]plumbing.Hash{}
	for _, d := range h.treeDirs() {
		t, err := h.subtree(c.TreeHash, d)
		if err != nil {
			return err
		}
		diffs, err := h.diffRec(plumbing.ZeroHash, t, d, nil)
		if err != nil {
			return err
		}
		for _, f := range diffs {
			have[f.path] = f.new
		}
	}
	m := parseMessage(c.Message)
	ci := &commitInfo{id: c.Hash, at: c.Author.When, author: c.Author.Email, action: ActionOutside, reason: subject(m, c.Message)}
	if m.ours && m.Action != "" {
		ci.action, ci.tool, ci.reason, ci.key = m.Action, m.Tool, m.Reason, m.Key
	}
	var changes []pathChange
	for p, b := range have {
		if l := ix.byPath[p]; l == nil || l.newest().removed || l.newest().blob != b {
			body, err := h.objs.Blob(b)
			if err != nil {
				return err
			}
			changes = append(changes, pathChange{path: p, blob: b, sum: sumOf(body), purged: strings.HasPrefix(string(body), purgeNotice)})
		}
	}
	for p, l := range ix.byPath {
		if _, ok := have[p]; !ok && !l.newest().removed {
			changes = append(changes, pathChange{path: p, removed: true})
		}
	}
	if len(changes) > 0 {
		if existing := ix.commits[c.Hash]; existing != nil {
			ci = existing
		}
		ix.apply(ci, changes)
	}
	return nil
}

// treeCache keeps recently read trees, which a walk through successive
// commits reads twice (a commit's tree is its child's parent tree).
type treeCache struct {
	mu sync.Mutex
	m  map[plumbing.Hash][]object.TreeEntry
}

const treeCacheSize = 512

func (tc *treeCache) get(o *gitstore.Store, h plumbing.Hash) ([]object.TreeEntry, error) {
	if h == gitstore.EmptyTree {
		return nil, nil // git knows the empty tree without storing it
	}
	tc.mu.Lock()
	es, ok := tc.m[h]
	tc.mu.Unlock()
	if ok {
		return es, nil
	}
	es, err := o.Tree(h)
	if err != nil {
		return nil, err
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.m == nil || len(tc.m) >= treeCacheSize {
		tc.m = map[plumbing.Hash][]object.TreeEntry{}
	}
	tc.m[h] = es
	return es, nil
}

// entries is get, with no entries for the zero hash.
func (tc *treeCache) entries(o *gitstore.Store, h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	es, err := tc.get(o, h)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return es, nil
}
