package gitstore

import (
	"container/heap"
	"errors"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrOldMissing: the commit a walk stops at cannot be read (a history
// rewritten and collected elsewhere).
var ErrOldMissing = errors.New("gitstore: the known head cannot be read")

// Walk is what NewCommits found.
type Walk struct {
	// Fresh are the commits reachable from the new head and not from the
	// old one, by id.
	Fresh map[plumbing.Hash]*object.Commit
	// Edges are the parents of Fresh commits outside Fresh, each once.
	Edges []*object.Commit
	// Ancestor reports whether the old head is an ancestor of the new
	// one (true for a zero old head).
	Ancestor bool
}

// Flags of the walk.
const (
	fromNew = 1 // reachable from the new head
	fromOld = 2 // reachable from the old head
)

// NewCommits returns the commits reachable from head but not from old
// (every commit reachable from head when old is zero). It walks both
// sides by commit time, as git's merge-base does, and stops as soon as
// every commit left to visit is reachable from old: a walk of the new
// commits, not of the whole history; with a limit, it also stops once it
// has read that many commits (Fresh is then a part of them). A failed
// read of old is ErrOldMissing (with the read's error).
func NewCommits(read func(plumbing.Hash) (*object.Commit, error), head, old plumbing.Hash, limit int) (*Walk, error) {
	flags := map[plumbing.Hash]uint8{}
	commits := map[plumbing.Hash]*object.Commit{}
	var q commitQueue
	push := func(id plumbing.Hash, f uint8) error {
		if flags[id]&f == f {
			return nil
		}
		flags[id] |= f
		c := commits[id]
		if c == nil {
			var err error
			if c, err = read(id); err != nil {
				return err
			}
			commits[id] = c
		}
		heap.Push(&q, c)
		return nil
	}
	if err := push(head, fromNew); err != nil {
		return nil, err
	}
	if !old.IsZero() {
		if err := push(old, fromOld); err != nil {
			return nil, errors.Join(ErrOldMissing, err)
		}
	}
	for q.Len() > 0 && !q.allOld(flags) && (limit <= 0 || len(commits) < limit) {
		c := heap.Pop(&q).(*object.Commit)
		for _, p := range c.ParentHashes {
			if err := push(p, flags[c.Hash]); err != nil {
				return nil, err
			}
		}
	}
	w := &Walk{Fresh: map[plumbing.Hash]*object.Commit{}, Ancestor: old.IsZero() || flags[old]&fromNew != 0}
	seen := map[plumbing.Hash]bool{}
	for id, f := range flags {
		if f != fromNew {
			continue
		}
		w.Fresh[id] = commits[id]
		for _, p := range commits[id].ParentHashes {
			if flags[p] != fromNew && !seen[p] {
				seen[p] = true
				w.Edges = append(w.Edges, commits[p])
			}
		}
	}
	return w, nil
}

// commitQueue is a max-heap of commits by committer time.
type commitQueue []*object.Commit

func (q commitQueue) Len() int           { return len(q) }
func (q commitQueue) Less(i, j int) bool { return q[i].Committer.When.After(q[j].Committer.When) }
func (q commitQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)        { *q = append(*q, x.(*object.Commit)) }
func (q *commitQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

// allOld reports whether every queued commit is reachable from old, so
// that the walk can stop.
func (q commitQueue) allOld(flags map[plumbing.Hash]uint8) bool {
	return !slices.ContainsFunc(q, func(c *object.Commit) bool { return flags[c.Hash]&fromOld == 0 })
}
