package history

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBlocked: a change's path runs through an entry of the tree above the
// wing's own directories (a file named "wiki" in the brain's repository,
// say), which the wing may not replace. It is permanent: retrying never
// commits the change, so the committer stops and reports it (Stuck).
var ErrBlocked = errors.New("history: an entry above the wing's directories blocks the path")

// BlockedError is an ErrBlocked for one path.
type BlockedError struct {
	Path    string // the tree path of the change
	Blocker string // the tree path of the file that stands where a directory must be
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("history: %s cannot be committed: %s is a file in the tree where a directory must be", e.Path, e.Blocker)
}

// Unwrap makes a BlockedError an ErrBlocked.
func (e *BlockedError) Unwrap() error { return ErrBlocked }

// Stuck describes a committer that stopped on a permanent error: the wing
// serves reads from the history it has, refuses writes, and says why in
// /readyz, its metrics and `brainstem check`. The pending log keeps the
// changes for the next start.
type Stuck struct {
	Path  string    // the tree path the change could not be committed at
	Err   string    // the error
	Fix   string    // what an operator does about it
	Since time.Time // when the committer stopped
}

func (s *Stuck) String() string {
	return fmt.Sprintf("history stuck at %s since %s: %s; fix: %s", s.Path, s.Since.UTC().Format(time.RFC3339), s.Err, s.Fix)
}

// stuckOf returns the Stuck of a permanent error, nil for any other.
func stuckOf(err error, branch string, at time.Time) *Stuck {
	var b *BlockedError
	if !errors.As(err, &b) {
		return nil
	}
	return &Stuck{Path: b.Path, Err: err.Error(), Since: at,
		Fix: fmt.Sprintf("remove %s from branch %s of the brain's repository (git rm, commit), then restart the shard: the pending log keeps the changes", b.Blocker, branch)}
}

// Stuck reports the committer's permanent failure, nil while it commits.
func (h *History) Stuck() *Stuck {
	return h.stuck.Load()
}

// clearWay removes what stands in the way of a file at tree path p: a
// file where one of p's directories must be, or a directory at p itself
// (a file a remote pushed and the shard rejected, or a person's commit).
// Entries of the first keep segments of p (the brain's prefix and its
// top directory) are not the wing's: one of them in the way is a
// *BlockedError. It returns the paths it removed.
func (m *treeModel) clearWay(p string, keep int) ([]string, error) {
	segs := strings.Split(p, "/")
	n := m.root
	if err := m.load(n); err != nil {
		return nil, err
	}
	trail := []*treeNode{n}
	var removed []string
	for i, name := range segs {
		last := i == len(segs)-1
		at, _ := n.find(name, !last) // a dir's name first on the way, a file's at the end
		if at < 0 {
			return removed, nil
		}
		if blocks := n.entries[at].isDir() == last; blocks {
			here := strings.Join(segs[:i+1], "/")
			if i < keep {
				return removed, &BlockedError{Path: p, Blocker: here}
			}
			n.entries = append(n.entries[:at], n.entries[at+1:]...)
			markDirty(trail)
			removed = append(removed, here)
			if at, _ = n.find(name, !last); at < 0 || n.entries[at].isDir() == last {
				return removed, nil // nothing else of that name (a tree may hold both)
			}
		}
		if last {
			return removed, nil
		}
		c, err := m.child(&n.entries[at])
		if err != nil {
			return removed, err
		}
		n = c
		trail = append(trail, n)
	}
	return removed, nil
}
