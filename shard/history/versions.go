package history

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/brain"
)

// commitInfo is what every version a commit made shares.
type commitInfo struct {
	id                                plumbing.Hash
	at                                time.Time
	author, action, tool, reason, key string
	seq                               uint64
}

// version is one version of a lineage.
type version struct {
	c               *commitInfo
	path, from      string
	blob            plumbing.Hash
	sum             [32]byte
	removed, purged bool
}

// lineage is the versions of one note, oldest first, across its renames:
// its newest version is at the path the index files it under.
type lineage struct {
	vs []version
}

func (l *lineage) newest() *version { return &l.vs[len(l.vs)-1] }

// versionIndex is the history of the wing's tracked paths, as of commit
// head: every lineage by the path of its newest version, and the paths
// notes were moved away from.
type versionIndex struct {
	head    plumbing.Hash
	lastSeq uint64 // the highest Brainstem-Seq of this wing's commits
	commits map[plumbing.Hash]*commitInfo
	byPath  map[string]*lineage
	moved   map[string]*lineage
	// buried are lineages whose path another lineage took (a note moved
	// onto the path of a removed one): kept, but no longer found by path.
	buried []*lineage
}

func newVersionIndex() *versionIndex {
	return &versionIndex{commits: map[plumbing.Hash]*commitInfo{}, byPath: map[string]*lineage{}, moved: map[string]*lineage{}}
}

// pathChange is what one commit did to one tracked path.
type pathChange struct {
	path    string // brain-relative
	from    string // a rename: the path it left
	blob    plumbing.Hash
	sum     [32]byte
	removed bool
	purged  bool
}

// apply records the changes of commit c. A change that leaves a path as
// its lineage already has it (same blob) is no version.
func (ix *versionIndex) apply(c *commitInfo, changes []pathChange) {
	ix.lastSeq = max(ix.lastSeq, c.seq)
	added := false
	for _, ch := range changes {
		v := version{c: c, path: ch.path, from: ch.from, blob: ch.blob, sum: ch.sum, removed: ch.removed, purged: ch.purged}
		var l *lineage
		switch {
		case ch.removed:
			if l = ix.byPath[ch.path]; l == nil || l.newest().removed {
				continue
			}
			v.blob, v.sum = plumbing.ZeroHash, [32]byte{}
		case ch.from != "":
			if l = ix.byPath[ch.from]; l != nil && !l.newest().removed {
				delete(ix.byPath, ch.from)
				ix.moved[ch.from] = l
			} else {
				v.from = "" // the source is unknown: a creation
				if l = ix.byPath[ch.path]; l != nil && !l.newest().removed && l.newest().blob == ch.blob {
					continue
				}
			}
		default:
			l = ix.byPath[ch.path]
			if l != nil && !l.newest().removed && l.newest().blob == ch.blob {
				continue
			}
		}
		if l == nil {
			l = &lineage{}
		}
		l.vs = append(l.vs, v)
		if !ch.removed {
			if old := ix.byPath[ch.path]; old != nil && old != l {
				ix.buried = append(ix.buried, old)
			}
			ix.byPath[ch.path] = l
			delete(ix.moved, ch.path)
		}
		added = true
	}
	if added {
		ix.commits[c.id] = c
	}
}

func (v *version) public() Version {
	out := Version{
		ID: v.c.id.String(), Path: v.path, At: v.c.at.UTC(), Author: v.c.author, Action: v.c.action,
		Tool: v.c.tool, Reason: v.c.reason, Key: v.c.key, Removed: v.removed, Purged: v.purged, From: v.from,
	}
	if !v.removed {
		out.Blob = v.blob.String()
		out.ContentHash = hex.EncodeToString(v.sum[:])
	}
	return out
}

// Paging of Versions.
const (
	defaultPage = 20
	maxPage     = 1000
)

// page returns up to limit versions of path's lineage, newest first,
// starting before the position cursor names ("" for the newest).
func (ix *versionIndex) page(path, cursor string, limit int) ([]Version, string, error) {
	l, err := ix.lineageOf(path)
	if err != nil {
		return nil, "", err
	}
	end := len(l.vs)
	if cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor, "v"))
		if err != nil || !strings.HasPrefix(cursor, "v") || n <= 0 || n >= len(l.vs) {
			return nil, "", brain.Errorf(brain.CodeInvalidArgument, "cursor %q is not one the history of %s returned; list again without a cursor", cursor, path)
		}
		end = n
	}
	if limit <= 0 {
		limit = defaultPage
	}
	limit = min(limit, maxPage)
	start := max(0, end-limit)
	out := make([]Version, 0, end-start)
	for i := end - 1; i >= start; i-- {
		out = append(out, l.vs[i].public())
	}
	next := ""
	if start > 0 {
		next = "v" + strconv.Itoa(start)
	}
	return out, next, nil
}

// lineageOf returns the lineage whose newest version is at path.
func (ix *versionIndex) lineageOf(path string) (*lineage, error) {
	if l := ix.byPath[path]; l != nil {
		return l, nil
	}
	if l := ix.moved[path]; l != nil {
		return nil, brain.Errorf(brain.CodeNotFound, "%s has no history of its own: the note was moved to %s; ask for that path", path, l.newest().path)
	}
	return nil, brain.Errorf(brain.CodeNotFound, "%s has no history: no version of a note at that path was ever committed", path)
}

// find returns the version id of path's lineage.
func (ix *versionIndex) find(path, id string) (*version, error) {
	l, err := ix.lineageOf(path)
	if err != nil {
		return nil, err
	}
	if !plumbing.IsHash(id) {
		return nil, brain.Errorf(brain.CodeInvalidArgument, "version %q is not a version id: use a 40-hex id as the history of %s lists it", id, path)
	}
	h := plumbing.NewHash(strings.ToLower(id))
	for i := len(l.vs) - 1; i >= 0; i-- {
		if l.vs[i].c.id == h {
			return &l.vs[i], nil
		}
	}
	if ix.commits[h] != nil {
		return nil, brain.Errorf(brain.CodeInvalidArgument, "version %s is not a version of %s (it changed other notes); list the versions of %s and pick one of them", id, path, path)
	}
	return nil, brain.Errorf(brain.CodeNotFound, "no version %s in the history of this wing; list the versions of %s and pick one of them", id, path)
}

// movedTo follows a path a note was moved away from.
func (ix *versionIndex) movedTo(path string) (string, Version, bool) {
	if l := ix.byPath[path]; l != nil && !l.newest().removed {
		return "", Version{}, false
	}
	l := ix.moved[path]
	if l == nil {
		return "", Version{}, false
	}
	v := l.newest()
	return v.path, v.public(), true
}

// removed lists the lineages below prefix whose newest version removes
// the note.
func (ix *versionIndex) removed(prefix string) []Version {
	var out []Version
	for p, l := range ix.byPath {
		if v := l.newest(); v.removed && strings.HasPrefix(p, prefix) {
			out = append(out, v.public())
		}
	}
	return out
}

func (ix *versionIndex) remap(ids map[plumbing.Hash]plumbing.Hash) {
	for old, c := range ix.commits {
		if n, ok := ids[old]; ok {
			delete(ix.commits, old)
			c.id = n
		}
	}
	for _, c := range ix.allCommits() {
		ix.commits[c.id] = c
	}
}

// allCommits returns every commit a version refers to.
func (ix *versionIndex) allCommits() []*commitInfo {
	seen := map[*commitInfo]bool{}
	var out []*commitInfo
	for _, l := range ix.lineages() {
		for i := range l.vs {
			if c := l.vs[i].c; !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

func (ix *versionIndex) lineages() []*lineage {
	seen := map[*lineage]bool{}
	var out []*lineage
	for _, m := range []map[string]*lineage{ix.byPath, ix.moved} {
		for _, l := range m {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	for _, l := range ix.buried {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
