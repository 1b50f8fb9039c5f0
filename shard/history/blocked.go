package history

import (
	"errors"
	"fmt"
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
