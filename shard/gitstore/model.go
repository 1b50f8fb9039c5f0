package gitstore

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Tree is the one in-memory model of a git tree the engine's writers
// change (the history's committer, a remote's merge): nodes are loaded
// from the repository on the way to a changed path, and Write rewrites
// only the trees on the changed paths (a hall's tree of 20,000 entries is
// re-encoded, the other halls' trees are not even read).
type Tree struct {
	o *Store
	// Hints maps a tree or blob the model wrote to the one it replaced at
	// the same path: the packer makes it a delta on that one.
	Hints   map[plumbing.Hash]plumbing.Hash
	Base    plumbing.Hash // the commit the model is the tree of (zero: none)
	root    *treeNode
	scratch []byte // a tree's encoding, reused (written before its parent's)
	// spare holds the clean nodes of the model before the last reset, by
	// hash, so that a new head sharing subtrees reuses them unread.
	spare map[plumbing.Hash][]*treeNode
}

// treeNode is one tree; hash is valid while the node is not dirty, and
// entries once it is loaded.
type treeNode struct {
	hash    plumbing.Hash
	prev    plumbing.Hash // the hash it had before it was made dirty
	entries []treeEntry   // in git's order (see EntryLess)
	loaded  bool
	dirty   bool
}

type treeEntry struct {
	name  string
	mode  filemode.FileMode
	hash  plumbing.Hash
	child *treeNode // the subtree's node once visited (trees only)
}

func (e *treeEntry) isDir() bool { return e.mode == filemode.Dir }

// EmptyTree is the id of git's empty tree.
var EmptyTree = Hash(plumbing.TreeObject, nil)

// errNotDir: a path runs through a file.
var errNotDir = errors.New("gitstore: a path component is a file")

// NewTree returns the model of the empty tree, reading what it loads from
// o (nil: a model that is only written, never Reset).
func NewTree(o *Store) *Tree {
	return &Tree{o: o, root: &treeNode{hash: EmptyTree, loaded: true}, Hints: map[plumbing.Hash]plumbing.Hash{}}
}

// Reset makes the model the tree of commit base, whose root tree is root
// (the zero hash for no commit), keeping its clean nodes for reuse.
func (m *Tree) Reset(base, root plumbing.Hash) {
	m.spare = map[plumbing.Hash][]*treeNode{}
	var collect func(n *treeNode)
	collect = func(n *treeNode) {
		for i := range n.entries {
			if c := n.entries[i].child; c != nil {
				collect(c)
			}
		}
		if n.loaded && !n.dirty {
			for i := range n.entries { // its children are spare nodes of their own
				n.entries[i].child = nil
			}
			m.spare[n.hash] = append(m.spare[n.hash], n)
		}
	}
	collect(m.root)
	m.Base = base
	if root.IsZero() {
		root = EmptyTree
	}
	m.root = m.node(root)
}

// node returns a node for tree h: a spare one, or an unloaded one.
func (m *Tree) node(h plumbing.Hash) *treeNode {
	if l := m.spare[h]; len(l) > 0 {
		n := l[len(l)-1]
		m.spare[h] = l[:len(l)-1]
		return n
	}
	if h == EmptyTree {
		return &treeNode{hash: h, loaded: true}
	}
	return &treeNode{hash: h}
}

func (m *Tree) load(n *treeNode) error {
	if n.loaded {
		return nil
	}
	if n.hash == EmptyTree {
		n.loaded = true
		return nil
	}
	es, err := m.o.Tree(n.hash)
	if err != nil {
		return err
	}
	n.entries = make([]treeEntry, len(es))
	for i, e := range es {
		n.entries[i] = treeEntry{name: e.Name, mode: e.Mode, hash: e.Hash}
	}
	n.loaded = true
	return nil
}

// child returns the loaded node of entry e (a tree).
func (m *Tree) child(e *treeEntry) (*treeNode, error) {
	if e.child == nil {
		e.child = m.node(e.hash)
	}
	return e.child, m.load(e.child)
}

// find returns the index of the entry named name, or -1, and where a new
// entry of that name and kind would go.
func (n *treeNode) find(name string, dir bool) (at, insert int) {
	for _, d := range [2]bool{dir, !dir} {
		i := sort.Search(len(n.entries), func(i int) bool {
			e := &n.entries[i]
			return !EntryLess(e.name, e.isDir(), name, d)
		})
		if d == dir {
			insert = i
		}
		if i < len(n.entries) && n.entries[i].name == name {
			return i, insert
		}
	}
	return -1, insert
}

// walk returns the node of directory path dir ("" for the root), creating
// missing directories when create is set (else nil when one is missing),
// and the nodes on the way, root first.
func (m *Tree) walk(dir string, create bool) (*treeNode, []*treeNode, error) {
	n := m.root
	if err := m.load(n); err != nil {
		return nil, nil, err
	}
	trail := []*treeNode{n}
	if dir == "" {
		return n, trail, nil
	}
	for _, name := range strings.Split(dir, "/") {
		at, ins := n.find(name, true)
		switch {
		case at >= 0 && n.entries[at].isDir():
		case at >= 0:
			return nil, nil, fmt.Errorf("%w: %s", errNotDir, dir)
		case !create:
			return nil, trail, nil
		default:
			n.entries = append(n.entries, treeEntry{})
			copy(n.entries[ins+1:], n.entries[ins:])
			n.entries[ins] = treeEntry{name: name, mode: filemode.Dir, child: &treeNode{loaded: true, dirty: true}}
			at = ins
		}
		c, err := m.child(&n.entries[at])
		if err != nil {
			return nil, nil, err
		}
		n = c
		trail = append(trail, n)
	}
	return n, trail, nil
}

func splitPath(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// Lookup returns the entry at path p (a file), if any.
func (m *Tree) Lookup(p string) (plumbing.Hash, filemode.FileMode, bool, error) {
	dir, name := splitPath(p)
	n, _, err := m.walk(dir, false)
	if err != nil || n == nil {
		if errors.Is(err, errNotDir) {
			err = nil
		}
		return plumbing.ZeroHash, 0, false, err
	}
	at, _ := n.find(name, false)
	if at < 0 || n.entries[at].isDir() {
		return plumbing.ZeroHash, 0, false, nil
	}
	e := n.entries[at]
	return e.hash, e.mode, true, nil
}

// Set puts blob h at path p with mode (an existing file keeps its mode
// when mode is 0).
func (m *Tree) Set(p string, h plumbing.Hash, mode filemode.FileMode) error {
	dir, name := splitPath(p)
	n, trail, err := m.walk(dir, true)
	if err != nil {
		return err
	}
	at, ins := n.find(name, false)
	if at >= 0 && n.entries[at].isDir() {
		return fmt.Errorf("gitstore: %s is a directory in the tree", p)
	}
	if mode == 0 {
		mode = filemode.Regular
		if at >= 0 && (n.entries[at].mode == filemode.Executable) {
			mode = filemode.Executable
		}
	}
	if at >= 0 {
		if n.entries[at].hash == h && n.entries[at].mode == mode {
			return nil
		}
		n.entries[at].hash, n.entries[at].mode = h, mode
	} else {
		n.entries = append(n.entries, treeEntry{})
		copy(n.entries[ins+1:], n.entries[ins:])
		n.entries[ins] = treeEntry{name: name, mode: mode, hash: h}
	}
	markDirty(trail)
	return nil
}

// markDirty marks the nodes on a changed path dirty, remembering the hash
// each had (the base of its next version's delta).
func markDirty(trail []*treeNode) {
	for _, t := range trail {
		if !t.dirty {
			t.prev = t.hash
		}
		t.dirty = true
	}
}

// Hint records that object h replaces base at the same path.
func (m *Tree) Hint(h, base plumbing.Hash) {
	if base.IsZero() || base == h || base == EmptyTree {
		return
	}
	if len(m.Hints) >= maxHints {
		m.Hints = map[plumbing.Hash]plumbing.Hash{}
	}
	m.Hints[h] = base
}

// maxHints bounds the delta hints kept (about 25 MB; a commit leaves one
// a changed tree or blob).
const maxHints = 1 << 18

// Remove deletes the file at path p, and the directories it leaves empty;
// it reports whether there was one.
func (m *Tree) Remove(p string) (bool, error) {
	dir, name := splitPath(p)
	n, trail, err := m.walk(dir, false)
	if err != nil || n == nil {
		if errors.Is(err, errNotDir) {
			err = nil
		}
		return false, err
	}
	at, _ := n.find(name, false)
	if at < 0 || n.entries[at].isDir() {
		return false, nil
	}
	n.entries = append(n.entries[:at], n.entries[at+1:]...)
	markDirty(trail)
	// Prune the directories left empty, deepest first.
	names := strings.Split(dir, "/")
	for i := len(trail) - 1; i > 0 && len(trail[i].entries) == 0; i-- {
		parent := trail[i-1]
		if at, _ := parent.find(names[i-1], true); at >= 0 {
			parent.entries = append(parent.entries[:at], parent.entries[at+1:]...)
		}
	}
	return true, nil
}

// Write encodes every dirty tree into b and returns the root tree's id.
func (m *Tree) Write(b Sink) (plumbing.Hash, error) {
	return m.writeNode(m.root, b)
}

func (m *Tree) writeNode(n *treeNode, b Sink) (plumbing.Hash, error) {
	if !n.dirty {
		return n.hash, nil
	}
	size := 0
	for i := range n.entries {
		e := &n.entries[i]
		if e.child != nil && e.child.dirty {
			h, err := m.writeNode(e.child, b)
			if err != nil {
				return h, err
			}
			e.hash = h
		}
		size += len(e.name) + 28
	}
	buf := slices.Grow(m.scratch[:0], size)
	for i := range n.entries {
		e := &n.entries[i]
		buf = AppendTreeEntry(buf, e.mode, e.name, e.hash)
	}
	m.scratch = buf
	h, err := b.PutTree(buf, n.prev)
	if err != nil {
		return h, err
	}
	m.Hint(h, n.prev)
	n.hash, n.dirty, n.prev = h, false, plumbing.ZeroHash
	return h, nil
}

// Files calls fn for every file below directory dir ("" for all), with
// its path; a missing dir has none.
func (m *Tree) Files(dir string, fn func(p string, h plumbing.Hash, mode filemode.FileMode) error) error {
	n, _, err := m.walk(dir, false)
	if err != nil || n == nil {
		if errors.Is(err, errNotDir) {
			err = nil
		}
		return err
	}
	var visit func(n *treeNode, prefix string) error
	visit = func(n *treeNode, prefix string) error {
		for i := range n.entries {
			e := &n.entries[i]
			p := prefix + e.name
			if !e.isDir() {
				if err := fn(p, e.hash, e.mode); err != nil {
					return err
				}
				continue
			}
			c, err := m.child(e)
			if err != nil {
				return err
			}
			if err := visit(c, p+"/"); err != nil {
				return err
			}
		}
		return nil
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	return visit(n, prefix)
}

// ClearWay removes what stands in the way of a file at tree path p: a
// file where one of p's directories must be, or a directory at p itself
// (a file a remote pushed and the shard rejected, or a person's commit).
// Entries of the first keep segments of p (the brain's prefix and its
// top directory) are not the writer's: one of them in the way is
// returned as blocker, and nothing more is removed. It returns the paths
// it removed.
func (m *Tree) ClearWay(p string, keep int) (removed []string, blocker string, err error) {
	segs := strings.Split(p, "/")
	n := m.root
	if err := m.load(n); err != nil {
		return nil, "", err
	}
	trail := []*treeNode{n}
	for i, name := range segs {
		last := i == len(segs)-1
		at, _ := n.find(name, !last) // a dir's name first on the way, a file's at the end
		if at < 0 {
			return removed, "", nil
		}
		if blocks := n.entries[at].isDir() == last; blocks {
			here := strings.Join(segs[:i+1], "/")
			if i < keep {
				return removed, here, nil
			}
			n.entries = append(n.entries[:at], n.entries[at+1:]...)
			markDirty(trail)
			removed = append(removed, here)
			if at, _ = n.find(name, !last); at < 0 || n.entries[at].isDir() == last {
				return removed, "", nil // nothing else of that name (a tree may hold both)
			}
		}
		if last {
			return removed, "", nil
		}
		c, err := m.child(&n.entries[at])
		if err != nil {
			return removed, "", err
		}
		n = c
		trail = append(trail, n)
	}
	return removed, "", nil
}
