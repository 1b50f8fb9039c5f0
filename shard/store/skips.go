package store

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/brainstem/brainstem/brain"
)

// Skipped is a file of the wing that the store does not load, and why.
// Nothing is skipped silently: each one is logged once as a warning (with
// its brain-relative path and the reason) when it is first seen, listed by
// Store.Skipped and counted by kind (the shard exports the counts as a
// metric).
type Skipped struct {
	Path   string // brain-relative slash path (a directory ends in "/")
	Kind   string // one of SkipKinds
	Reason string // what is wrong, in words a person can act on
}

// Kinds of Skipped.
const (
	SkipName  = "name"  // the file name is not <slug>.md with a valid slug
	SkipPlace = "place" // not in a hall directory (a loose file, a directory that is not a hall)
	SkipType  = "type"  // not a regular file (symbolic links are not followed)
	SkipSize  = "size"  // over MaxNoteBytes
	SkipRead  = "read"  // could not be read
)

// SkipKinds returns the kinds of Skipped, in a fixed order.
func SkipKinds() []string { return []string{SkipName, SkipPlace, SkipType, SkipSize, SkipRead} }

// skipSet holds the files the store does not load: those the last
// directory scan found, and those that failed to read since.
type skipSet struct {
	mu   sync.Mutex
	scan map[string]Skipped // by path, replaced by every scan
	read map[string]Skipped // by path, until the file loads or goes away
}

// setScan replaces the scan's skips, logging the ones not seen before (or
// seen for another reason).
func (k *skipSet) setScan(log *slog.Logger, list []Skipped) {
	k.mu.Lock()
	defer k.mu.Unlock()
	next := make(map[string]Skipped, len(list))
	for _, sk := range list {
		if old, ok := k.scan[sk.Path]; !ok || old.Reason != sk.Reason {
			if _, ok := k.read[sk.Path]; !ok {
				log.Warn("store: file not loaded", "path", sk.Path, "kind", sk.Kind, "reason", sk.Reason)
			}
		}
		next[sk.Path] = sk
	}
	k.scan = next
}

func (k *skipSet) setRead(log *slog.Logger, sk Skipped) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.read == nil {
		k.read = map[string]Skipped{}
	}
	if old, ok := k.read[sk.Path]; !ok || old.Reason != sk.Reason {
		if _, ok := k.scan[sk.Path]; !ok {
			log.Warn("store: file not loaded", "path", sk.Path, "kind", sk.Kind, "reason", sk.Reason)
		}
	}
	k.read[sk.Path] = sk
}

// clearRead forgets a read failure of path (it loaded, or it is gone).
func (k *skipSet) clearRead(path string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.read) > 0 {
		delete(k.read, path)
	}
}

// list returns every skipped file, sorted by path.
func (k *skipSet) list() []Skipped {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := slices.AppendSeq(make([]Skipped, 0, len(k.scan)+len(k.read)), maps.Values(k.scan))
	for p, sk := range k.read {
		if _, dup := k.scan[p]; !dup {
			out = append(out, sk)
		}
	}
	slices.SortFunc(out, func(a, b Skipped) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Skipped returns the files of the wing's wiki directory that are not
// loaded as notes, sorted by path: as of the last scan (Open, Rescan, the
// background rescanner) and the reads since.
func (s *Store) Skipped() []Skipped { return s.skips.list() }

// SkippedCount returns how many files of the given kind are not loaded.
func (s *Store) SkippedCount(kind string) int {
	n := 0
	for _, sk := range s.skips.list() {
		if sk.Kind == kind {
			n++
		}
	}
	return n
}

// reasonOf is an error's reason for Skipped: the message of a refusal
// (a *brain.Error), else the error's text.
func reasonOf(err error) string {
	if e, ok := brain.As(err); ok {
		return e.Message
	}
	return err.Error()
}

// sizeReason says a file is over the note size limit.
func sizeReason(size int64, limit int) string {
	return fmt.Sprintf("%d bytes, over the %d-byte limit of a note (the shard's --max-note-bytes)", size, limit)
}
