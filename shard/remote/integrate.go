package remote

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/gitstore"
	"github.com/brainstem/brainstem/shard/layout"
)

// DefaultMaxFileBytes bounds a note file read from the remote (the
// store's default note limit).
const DefaultMaxFileBytes = 1 << 20

// Kinds of Rejected: why a file the remote changed is not loaded.
const (
	RejectOutside     = "outside"     // not under wiki/<wing>/ or inbox/<wing>/ of any wing
	RejectEscape      = "escape"      // a path segment that is empty, ".", ".." or carries '\' or NUL
	RejectName        = "name"        // under the wing but not a note's path or name
	RejectType        = "type"        // a symbolic link, a submodule or an executable
	RejectSize        = "size"        // over the size limit
	RejectFrontmatter = "frontmatter" // frontmatter the shard cannot parse
)

// ErrBadTree: a tree of the remote cannot be read (git's own parser
// refuses it: an empty name, a bad mode); the remote head is not
// integrated at all.
var ErrBadTree = errors.New("remote: the remote head holds a malformed tree; it is not integrated")

// Rejected is a file of the remote that is reported and never loaded. It
// stays in the merged tree exactly as the remote has it, so that a push
// never changes it.
type Rejected struct {
	Path, Kind, Reason string
}

// Conflict is a note both sides changed since their merge base: the
// remote's version (Remote, zero when it removed the note) is current,
// the local one (Local) stays a version in history, in the local parent.
type Conflict struct {
	Path          string
	Local, Remote plumbing.Hash
}

// Integration is the merge of the remote head into the wing's head.
type Integration struct {
	// Commit is the merge commit (parents: the local head, then the
	// remote head), stored but not on any branch.
	Commit plumbing.Hash
	// Changed lists the wing's note paths whose content the merge changes
	// (the store reloads them); Conflicts and Rejected what was settled.
	Changed   []string
	Conflicts []Conflict
	Rejected  []Rejected
	files     map[string]entry // the merged entry of each Changed path
}

// Integrate merges the remote head into the local head, as one merge
// commit by the service identity: outside the wing's directories the
// remote's tree is kept; under them each note takes the side that changed
// it since the merge base (none: the empty tree), the remote's when both
// did (a Conflict), and a file of the remote that may not be loaded is
// kept as the remote has it (a Rejected). A remote head whose new commits
// hold a purged blob is refused (ErrPurgedContent). maxFile bounds a file read (0:
// DefaultMaxFileBytes).
func (r *Remote) Integrate(local, remote plumbing.Hash, by Identity, maxFile int64) (Integration, error) {
	if maxFile <= 0 {
		maxFile = DefaultMaxFileBytes
	}
	lc, rc, base, err := r.sides(local, remote)
	if err != nil {
		return Integration{}, err
	}
	if err := r.refusePurged(local, remote); err != nil {
		return Integration{}, err
	}
	trees := [3]map[string]entry{}
	for i, c := range []*object.Commit{base, lc, rc} {
		h := plumbing.ZeroHash
		if c != nil {
			h = c.TreeHash
		}
		if trees[i], err = flatten(r.repo.Storer, h); err != nil {
			return Integration{}, fmt.Errorf("%w: %w", ErrBadTree, err)
		}
	}
	in, merged := r.merge(trees[0], trees[1], trees[2], maxFile)
	in.Commit, err = r.commitMerge(r.batch(), merged, by, r.mergeMessage(in.Conflicts), local, remote)
	return in, err
}

// batch starts a batch of the merge's objects, with the packs listed
// again (the history engine packs in the background), so that what the
// repository has is not written again.
func (r *Remote) batch() *gitstore.LooseBatch {
	r.objs.Reindex()
	return r.objs.Batch()
}

// commitMerge puts the merged tree and a commit of it by by (message
// msg, the non-zero parents) into b, and makes b durable and visible
// (with whatever was put in it before); it returns the commit's id.
func (r *Remote) commitMerge(b *gitstore.LooseBatch, merged map[string]entry, by Identity, msg string, parents ...plumbing.Hash) (plumbing.Hash, error) {
	tree, err := writeTree(b, merged)
	var id plumbing.Hash
	if err == nil {
		sig := object.Signature{Name: by.Name, Email: by.Email, When: r.now()}
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
		for _, p := range parents {
			if !p.IsZero() {
				c.ParentHashes = append(c.ParentHashes, p)
			}
		}
		if id, err = gitstore.PutCommit(b, c); err == nil {
			err = b.Commit()
		}
	}
	if err != nil {
		b.Abort()
		return plumbing.ZeroHash, fmt.Errorf("remote: store the merge: %w", err)
	}
	return id, nil
}

// Identity is the author and committer of a merge commit.
type Identity struct{ Name, Email string }

func (r *Remote) sides(local, remote plumbing.Hash) (lc, rc, base *object.Commit, err error) {
	if rc, err = r.repo.CommitObject(remote); err != nil {
		return nil, nil, nil, fmt.Errorf("remote: remote head: %w", err)
	}
	if local.IsZero() { // a wing with no commit yet
		return nil, rc, nil, nil
	}
	if lc, err = r.repo.CommitObject(local); err != nil {
		return nil, nil, nil, fmt.Errorf("remote: local head: %w", err)
	}
	bases, err := lc.MergeBase(rc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("remote: merge base: %w", err)
	}
	if len(bases) > 0 {
		base = bases[0]
	}
	return lc, rc, base, nil
}

// merge returns the merged flat tree and what it settled.
func (r *Remote) merge(base, local, remote map[string]entry, maxFile int64) (Integration, map[string]entry) {
	in := Integration{files: map[string]entry{}}
	merged := make(map[string]entry, len(remote))
	for p, e := range remote {
		merged[p] = e
	}
	paths := map[string]bool{}
	for _, t := range []map[string]entry{base, local, remote} {
		for p := range t {
			if r.ours(p) {
				paths[p] = true
			}
		}
	}
	for p, e := range remote {
		if b, ok := base[p]; (!ok || b != e) && !paths[p] {
			if rej, bad := r.check(p, e, maxFile); bad && rej.Kind != "" {
				in.Rejected = append(in.Rejected, rej)
			}
		}
	}
	for p := range paths {
		b, l, rm := base[p], local[p], remote[p]
		if rm != b {
			if rej, bad := r.check(p, rm, maxFile); bad {
				in.Rejected = append(in.Rejected, rej)
				continue // kept as the remote has it, never loaded
			}
		}
		take := l
		switch {
		case rm == b || rm == l:
		case l == b:
			take = rm
		default:
			take = rm
			in.Conflicts = append(in.Conflicts, Conflict{Path: p, Local: l.Hash, Remote: rm.Hash})
		}
		if take.Hash.IsZero() {
			delete(merged, p)
		} else {
			merged[p] = take
		}
		if take != l {
			in.Changed = append(in.Changed, p)
			in.files[p] = take
		}
	}
	r.settleShape(merged, &in)
	sort.Strings(in.Changed)
	sort.Slice(in.Conflicts, func(i, j int) bool { return in.Conflicts[i].Path < in.Conflicts[j].Path })
	sort.Slice(in.Rejected, func(i, j int) bool { return in.Rejected[i].Path < in.Rejected[j].Path })
	return in, merged
}

// settleShape makes the merged tree one git can hold: where a file and
// a directory would share a name (a directory the remote pushed at a
// note's path, a file where a hall's directory must be), the wing's note
// stays and the entry the shard never loaded goes, reported as Rejected
// (docs/history.md "Files a remote pushes that the wing does not load").
// Between two entries neither of which is a note, the directory's files
// stay.
func (r *Remote) settleShape(merged map[string]entry, in *Integration) {
	rejected := map[string]int{}
	for i, rej := range in.Rejected {
		rejected[rej.Path] = i
	}
	note := func(p string) bool {
		_, bad := rejected[p]
		return !bad && r.notePath(p)
	}
	const why = "dropped from the merged tree: a file and a directory of that name cannot both be, and a note of the wing (or the directory's files) stays"
	report := func(drop, reason string) {
		if at, ok := rejected[drop]; ok {
			in.Rejected[at].Reason += "; " + reason
			return
		}
		rejected[drop] = len(in.Rejected)
		in.Rejected = append(in.Rejected, Rejected{Path: drop, Kind: RejectName, Reason: reason})
	}
	for p := range merged {
		if r.aboveWing(p) {
			delete(merged, p)
			report(p, "dropped from the merged tree: a file where a wing's directory must be")
			continue
		}
		for i, c := range p {
			if c != '/' {
				continue
			}
			dir := p[:i]
			if _, file := merged[dir]; !file {
				continue
			}
			drop := dir // a file where p's directory is
			if note(dir) {
				drop = p
			}
			delete(merged, drop)
			report(drop, why)
			if drop == p {
				break
			}
		}
	}
}

// aboveWing reports whether a file at p would stand where one of the
// wing's directories (wiki/<wing>, inbox/<wing>, or their parents) must
// be: history refuses to replace one above the wing's own.
func (r *Remote) aboveWing(p string) bool {
	return slices.ContainsFunc(r.dirs, func(dir string) bool { return strings.HasPrefix(dir, p+"/") })
}

// notePath reports whether p is a note's path in one of the remote's wings.
func (r *Remote) notePath(p string) bool {
	_, wing, err := brain.ValidPath(p)
	return err == nil && r.ours(p) && escapes(p) == "" && layout.Tracked(p, wing)
}

// ours reports whether the slash path p lies textually under the
// directories of one of the remote's wings.
func (r *Remote) ours(p string) bool {
	return slices.ContainsFunc(r.dirs, func(dir string) bool { return strings.HasPrefix(p, dir) })
}

// check reports whether the remote's file e at p may not be loaded
// (a removal always may be). A bad file of another wing is its shard's
// business: bad with an empty Kind.
func (r *Remote) check(p string, e entry, maxFile int64) (Rejected, bool) {
	if e.Hash.IsZero() {
		return Rejected{}, false
	}
	if reason := escapes(p); reason != "" {
		return Rejected{Path: p, Kind: RejectEscape, Reason: reason}, true
	}
	top, wing, err := brain.ValidPath(p)
	switch {
	case err != nil || (top != brain.TopWiki && top != brain.TopInbox):
		if r.ours(p) {
			return Rejected{Path: p, Kind: RejectName, Reason: "not a note path of the wing"}, true
		}
		return Rejected{Path: p, Kind: RejectOutside, Reason: "not under wiki/<wing>/ or inbox/<wing>/"}, true
	case !slices.Contains(r.cfg.Wings(), wing):
		return Rejected{}, true
	case !layout.Tracked(p, wing):
		return Rejected{Path: p, Kind: RejectName, Reason: "not a note: wiki/<wing>/<hall>/<slug>.md or inbox/<wing>/<name>.md"}, true
	case e.Mode != filemode.Regular:
		return Rejected{Path: p, Kind: RejectType, Reason: fmt.Sprintf("mode %o: only regular files are notes", uint32(e.Mode))}, true
	}
	return r.checkContent(p, e, maxFile)
}

func escapes(p string) string {
	if strings.ContainsAny(p, "\\\x00") {
		return "a backslash or NUL in the path"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, ".git") {
			return fmt.Sprintf("path segment %q", seg)
		}
	}
	return ""
}

func (r *Remote) checkContent(p string, e entry, maxFile int64) (Rejected, bool) {
	blob, err := r.repo.BlobObject(e.Hash)
	if err != nil {
		return Rejected{Path: p, Kind: RejectType, Reason: "blob missing: " + err.Error()}, true
	}
	if blob.Size > maxFile {
		return Rejected{Path: p, Kind: RejectSize, Reason: fmt.Sprintf("%d bytes, the limit is %d", blob.Size, maxFile)}, true
	}
	rd, err := blob.Reader()
	if err != nil {
		return Rejected{Path: p, Kind: RejectType, Reason: err.Error()}, true
	}
	defer rd.Close()
	raw, err := io.ReadAll(io.LimitReader(rd, maxFile+1))
	if err != nil {
		return Rejected{Path: p, Kind: RejectType, Reason: err.Error()}, true
	}
	if _, err := frontmatter.Parse(raw); err != nil {
		return Rejected{Path: p, Kind: RejectFrontmatter, Reason: err.Error()}, true
	}
	return Rejected{}, false
}

func (r *Remote) mergeMessage(conflicts []Conflict) string {
	msg := fmt.Sprintf("Integrate %s of %s\n", r.cfg.Branch, r.cfg.Redacted())
	if len(conflicts) > 0 {
		msg += fmt.Sprintf("\n%d conflicting note(s): the remote's version is current, this wing's stays in history.\n\n", len(conflicts))
		for i, c := range conflicts {
			if i == maxRecent {
				msg += fmt.Sprintf("Conflict: … and %d more\n", len(conflicts)-i)
				break
			}
			msg += "Conflict: " + c.Path + "\n"
		}
	}
	return msg
}
