package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/layout"
	"github.com/brainstem/brainstem/shard/store/refusal"
)

// The changes history makes possible: restore an old version, archive a
// note, move it, purge a version from history. Each is one change of
// history, made like the others (store.go's writes): checked, hooked,
// begun, made durable, landed.

// Restoration describes a restore (Restore).
type Restoration struct {
	Ref     string // the note: id or path, now or before a move
	Version string // the version whose content comes back
	Reason  string // required
	// ExpectedHash, if set, must be the note's current content hash.
	ExpectedHash string
	By           string // the caller's verified email
	Hook         Hook
	Prov         Provenance
}

// Restore writes the content of an old version of a note as its newest
// version, at the note's path now (history is never rewritten): an
// archived note comes back. The content is the version's bytes; only when
// the version was at another path (before a move or a promotion) are its
// wing and hall fields set to the note's place now. A restore of the
// content the note already has changes nothing (unchanged is true).
func (s *Store) Restore(ctx context.Context, rs Restoration) (n *Note, from history.Version, unchanged bool, err error) {
	if err := s.checkOpen(); err != nil {
		return nil, history.Version{}, false, err
	}
	if strings.TrimSpace(rs.Reason) == "" {
		return nil, history.Version{}, false, refusal.Refuse(ErrInvalid, "a restore needs a reason (recorded in history)")
	}
	if rs.By == "" {
		return nil, history.Version{}, false, refusal.Refuse(ErrInvalid, "a restore needs its author's email")
	}
	r, err := s.lineage(ctx, rs.Ref)
	if err != nil {
		return nil, history.Version{}, false, err
	}
	defer s.locks.Lock(r.lockKey())()
	v, raw, err := s.hist.Read(ctx, r.rel, rs.Version)
	if err != nil {
		return nil, v, false, err
	}
	if v.Purged {
		return nil, v, false, refusal.Refuse(ErrInvalid, "version %s of %s was purged: its content is gone; restore another version", v.ID, r)
	}
	abs, err := s.abs(r.rel)
	if err != nil {
		return nil, v, false, err
	}
	old, err := s.restoreBase(r, abs, rs.ExpectedHash)
	if err != nil {
		return nil, v, false, err
	}
	if v.Path != r.rel {
		if raw, err = s.placed(raw, r); err != nil {
			return nil, v, false, err
		}
	}
	if len(raw) > s.maxNote {
		return nil, v, false, refusal.Refuse(ErrTooLarge, "the restored note would be %d bytes, over the %d-byte limit", len(raw), s.maxNote)
	}
	n = s.noteAt(r, r.rel, raw)
	if old != nil && HashOf(old) == n.Hash {
		return n, v, true, nil
	}
	mark := Mark{Op: MarkReplace, Path: r.rel, Hash: n.Hash}
	if old == nil {
		mark.Op = MarkCreate
	}
	if err := runHook(rs.Hook, Intent{Mark: mark, Note: n}); err != nil {
		return nil, v, false, err
	}
	prov := rs.Prov
	prov.Reason = cmp.Or(prov.Reason, rs.Reason)
	if err := s.restoreFile(r, abs, raw, old, rs.By, prov); err != nil {
		return nil, v, false, err
	}
	return n, v, false, nil
}

// restoreFile writes a restore's bytes raw over old (nil: the note is
// archived), recorded in history, and updates the memory state.
func (s *Store) restoreFile(r noteRef, abs string, raw, old []byte, by string, prov Provenance) error {
	exists := refusal.Refuse(ErrExists, "a note was created at %s meanwhile; read it, then restore again", r.rel)
	if err := s.writeNote(r, abs, raw, old, ActionRestore, by, prov, exists); err != nil || r.inbox() {
		return err
	}
	return s.tocChanged()
}

// restoreBase reads what a restore of note r replaces: its bytes, nil
// when it is archived; expected, if set, must be their content hash.
func (s *Store) restoreBase(r noteRef, abs, expected string) ([]byte, error) {
	old, _, err := readFileLimit(abs, s.maxNote)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if expected != "" {
			return nil, refusal.Refuse(ErrConflict, "%s is archived: it has no current content_hash to expect; retry without expected_hash", r)
		}
		return nil, nil
	case err != nil:
		return nil, s.readErr(r.String(), err)
	case expected != "" && expected != HashOf(old):
		cur := HashOf(old)
		return nil, refusal.Refuse(ErrConflict, "%s changed: expected_hash is %s but the current content_hash is %s; read the note again and retry with expected_hash %s",
			r, expected, cur, cur)
	}
	return old, nil
}

// placed is raw, a version of note r from another path, with the wing and
// hall fields of r's place (a wiki note; an inbox note keeps what it says).
func (s *Store) placed(raw []byte, r noteRef) ([]byte, error) {
	if r.inbox() {
		return raw, nil
	}
	doc, err := frontmatter.Parse(raw)
	if err != nil {
		return nil, refusal.Refuse(ErrInvalid, "that version of %s has a frontmatter the store cannot edit safely (%v)", r, err)
	}
	doc.Set(KeyWing, s.wing)
	doc.Set(KeyHall, r.id.Hall)
	if err := doc.Err(); err != nil {
		return nil, refusal.Refuse(ErrInvalid, "cannot edit the frontmatter of that version of %s: %v", r, err)
	}
	return doc.Bytes(), nil
}

// Archival describes an archive (Archive).
type Archival struct {
	Ref          string // a note id or wiki path, or an inbox path
	Reason       string // required
	ExpectedHash string // if set, must be the note's current content hash
	By           string
	Hook         Hook
	Prov         Provenance
}

// Archived is what an archive did.
type Archived struct {
	Ref, Path  string
	Hash       string   // the content hash of the version archived
	LinkedFrom []string // notes of the wing that link to it (their links now lead nowhere)
}

// Archive removes a note (or an inbox note) from the wing: its file goes,
// and with it the note leaves search, lists and _index.md; its versions
// stay in history, and Restore brings it back.
func (s *Store) Archive(ctx context.Context, a Archival) (Archived, error) {
	if err := s.checkOpen(); err != nil {
		return Archived{}, err
	}
	if strings.TrimSpace(a.Reason) == "" {
		return Archived{}, refusal.Refuse(ErrInvalid, "an archive needs a reason (recorded in history)")
	}
	if a.By == "" {
		return Archived{}, refusal.Refuse(ErrInvalid, "an archive needs its author's email")
	}
	r, err := s.parseRef(a.Ref)
	if err != nil {
		return Archived{}, err
	}
	if err := s.needHistory(); err != nil {
		return Archived{}, err // without history an archive could not be undone
	}
	defer s.locks.Lock(r.lockKey())()
	abs, err := s.abs(r.rel)
	if err != nil {
		return Archived{}, err
	}
	old, _, err := readFileLimit(abs, s.maxNote)
	if errors.Is(err, fs.ErrNotExist) {
		if v, ok := s.latest(ctx, r.rel); ok && v.Removed {
			return Archived{}, refusal.Refuse(ErrInvalid, "%s is already %s", r, removal(v))
		}
		return Archived{}, s.goneErr(r)
	}
	if err != nil {
		return Archived{}, s.readErr(r.String(), err)
	}
	cur := HashOf(old)
	if a.ExpectedHash != "" && a.ExpectedHash != cur {
		return Archived{}, refusal.Refuse(ErrConflict, "%s changed: expected_hash is %s but the current content_hash is %s; read the note again and retry with expected_hash %s",
			r, a.ExpectedHash, cur, cur)
	}
	res := Archived{Ref: r.String(), Path: r.rel, Hash: cur, LinkedFrom: []string{}}
	if !r.inbox() {
		res.LinkedFrom = s.linkersOf(r.id.String())
	}
	if err := runHook(a.Hook, Intent{Mark: Mark{Op: MarkRemove, Path: r.rel, Hash: cur}, Outcome: res}); err != nil {
		return Archived{}, err
	}
	prov := a.Prov
	prov.Reason = cmp.Or(prov.Reason, a.Reason)
	if err := s.removeFile(r, abs, old, ActionArchive, a.By, prov); err != nil {
		return Archived{}, err
	}
	return res, nil
}

// latest is the newest version of the lineage at rel, once what landed is
// committed.
func (s *Store) latest(ctx context.Context, rel string) (history.Version, bool) {
	if s.hist == nil || s.hist.Flush(ctx) != nil {
		return history.Version{}, false
	}
	return s.hist.Latest(rel)
}

// linkersOf lists the notes of the wing linking to id, sorted.
func (s *Store) linkersOf(id string) []string {
	s.mu.RLock()
	out := make([]string, 0, len(s.backlinks[id]))
	for src := range s.backlinks[id] {
		if src != id {
			out = append(out, src)
		}
	}
	s.mu.RUnlock()
	slices.Sort(out)
	return out
}

// removeFile removes note r's file (whose bytes are old) as one change of
// history, and forgets the note. The caller holds the note's lock.
func (s *Store) removeFile(r noteRef, abs string, old []byte, action, by string, prov Provenance) error {
	rec, err := s.begin(action, by, prov, subject(prov, action, r.String()), removeOp(r.rel, old))
	if err != nil {
		return err
	}
	err = os.Remove(abs)
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(abs))
		if err != nil {
			rec.done(nil) // removed: the next start settles the directory
			return fmt.Errorf("store: sync %s: %w", filepath.Dir(r.rel), err)
		}
	}
	rec.done(err)
	if err != nil {
		return fmt.Errorf("store: remove %s: %w", r.rel, err)
	}
	s.cache.Remove(r.rel)
	if r.inbox() {
		s.inboxWritten(r.name, nil, abs)
		return nil
	}
	s.forget(r.id)
	return s.tocChanged()
}

// Relocation describes a move (Move).
type Relocation struct {
	ID         string // the note's id or wiki path
	Hall, Slug string // where it goes: "" keeps the one it has
	Reason     string // required
	By         string
	Hook       Hook
	Prov       Provenance
}

// Moved is what a move did.
type Moved struct {
	Note *Note  // the note at its new place
	From string // its id before
	// Rewritten lists the notes of the wing whose links to it were
	// rewritten (the note itself included when it linked to itself).
	Rewritten []string
	Links     int // the number of links rewritten
}

// Move renames a wiki note (a new hall, a new slug, or both) in one change
// of history: the note is written at its new path with its hall field
// updated, every link to it from a note of the wing is rewritten to the
// new id, and the old file is removed. A read of the old id then answers
// ErrMoved with the new one. A move onto an existing note is ErrExists.
func (s *Store) Move(ctx context.Context, mv Relocation) (Moved, error) {
	if err := s.checkOpen(); err != nil {
		return Moved{}, err
	}
	from, _, err := s.wikiRef(mv.ID)
	if err != nil {
		return Moved{}, err
	}
	if strings.TrimSpace(mv.Reason) == "" {
		return Moved{}, refusal.Refuse(ErrInvalid, "a move needs a reason (recorded in history)")
	}
	if mv.By == "" {
		return Moved{}, refusal.Refuse(ErrInvalid, "a move needs its author's email")
	}
	to := brain.ID{Wing: s.wing, Hall: cmp.Or(mv.Hall, from.Hall), Slug: cmp.Or(mv.Slug, from.Slug)}
	if err := to.Validate(); err != nil {
		return Moved{}, refusal.Invalid(err)
	}
	if to == from {
		return Moved{}, refusal.Refuse(ErrInvalid, "%s is already there: give another hall or slug", from)
	}
	if err := s.needHistory(); err != nil {
		return Moved{}, err
	}
	if err := ctx.Err(); err != nil {
		return Moved{}, fmt.Errorf("store: %w", err)
	}
	linkers := s.linkersOf(from.String())
	defer s.lockAll(append([]string{from.String(), to.String()}, linkers...))()
	p, err := s.planMove(from, to, linkers)
	if err != nil {
		return Moved{}, err
	}
	mark := Mark{Op: MarkCreate, Path: to.Path(), Hash: p.res.Note.Hash, Remove: from.Path(), RemoveHash: HashOf(p.old)}
	if err := runHook(mv.Hook, Intent{Mark: mark, Note: p.res.Note, Outcome: p.res}); err != nil {
		return Moved{}, err
	}
	prov := mv.Prov
	prov.Reason = cmp.Or(prov.Reason, mv.Reason)
	return p.res, s.moveFiles(p, mv.By, prov)
}

// movePlan is a move checked and computed, before it touches the disk.
type movePlan struct {
	from, to       brain.ID
	fromAbs, toAbs string
	old, raw       []byte // the note's bytes, before and after
	rewrites       []rewrite
	res            Moved
}

// rewrite is a note whose links a move rewrites.
type rewrite struct {
	id       brain.ID
	abs      string
	old, raw []byte
}

// planMove reads the note and the notes linking to it (the caller holds
// their locks) and computes every file the move writes.
func (s *Store) planMove(from, to brain.ID, linkers []string) (*movePlan, error) {
	p := &movePlan{from: from, to: to}
	var err error
	if p.fromAbs, err = s.abs(from.Path()); err != nil {
		return nil, err
	}
	if p.toAbs, err = s.abs(to.Path()); err != nil {
		return nil, err
	}
	if p.old, err = s.readNoteFile(noteRef{id: from, rel: from.Path()}, p.fromAbs); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(p.toAbs); err == nil {
		return nil, refusal.Refuse(ErrExists, "%s already exists; nothing was moved: choose another hall or slug", to)
	}
	raw, links, err := s.relocated(p.old, from, to, true)
	if err != nil {
		return nil, err
	}
	p.raw = raw
	p.res = Moved{Note: s.noteOf(to.String(), "", to.Path(), raw, to.Slug), From: from.String(), Links: links, Rewritten: []string{}}
	if links > 0 {
		p.res.Rewritten = append(p.res.Rewritten, from.String())
	}
	for _, src := range linkers {
		id, _ := brain.ParseID(src)
		abs, err := s.abs(id.Path())
		if err != nil {
			continue
		}
		b, _, err := readFileLimit(abs, s.maxNote)
		if err != nil {
			continue // gone or unreadable meanwhile: nothing to rewrite
		}
		nb, k, err := s.relocated(b, from, to, false)
		if err != nil || k == 0 || len(nb) > s.maxNote {
			continue // a frontmatter the store cannot edit: its link keeps the old id, which answers moved
		}
		p.rewrites = append(p.rewrites, rewrite{id, abs, b, nb})
		p.res.Rewritten = append(p.res.Rewritten, src)
		p.res.Links += k
	}
	return p, nil
}

// moveFiles makes a planned move, recorded in history as one change: the
// note at its new place, the rewritten links, the old file removed.
func (s *Store) moveFiles(p *movePlan, by string, prov Provenance) error {
	op := put(p.to.Path(), p.raw, nil)
	op.From, op.Base, op.HadBase = p.from.Path(), sha256.Sum256(p.old), true
	ops := []history.Op{op}
	for _, rw := range p.rewrites {
		ops = append(ops, put(rw.id.Path(), rw.raw, rw.old))
	}
	rec, err := s.begin(ActionMove, by, prov, subject(prov, ActionMove, p.from.String()+" to "+p.to.String()), ops...)
	if err != nil {
		return err
	}
	if err := atomicfile.CreateFile(p.toAbs, p.raw, filePerm); err != nil {
		rec.done(err)
		if errors.Is(err, fs.ErrExist) {
			return refusal.Refuse(ErrExists, "%s already exists; nothing was moved: choose another hall or slug", p.to)
		}
		return fmt.Errorf("store: write %s: %w", p.to.Path(), err)
	}
	defer rec.done(nil) // the note is at its new place: whatever follows, the next start settles the rest
	if err := s.applyFile(p.to, p.toAbs, p.raw); err != nil {
		return err
	}
	for _, rw := range p.rewrites {
		if err := atomicfile.WriteFile(rw.abs, rw.raw, filePerm); err != nil {
			return fmt.Errorf("store: %s was moved to %s but the links of %s could not be rewritten: %w", p.from, p.to, rw.id, err)
		}
		if err := s.applyFile(rw.id, rw.abs, rw.raw); err != nil {
			return err
		}
	}
	if err := os.Remove(p.fromAbs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %s was written but %s could not be removed (remove it by hand): %w", p.to, p.from.Path(), err)
	}
	s.cache.Remove(p.from.Path())
	s.forget(p.from)
	if err := atomicfile.SyncDir(filepath.Dir(p.fromAbs)); err != nil {
		return fmt.Errorf("store: sync %s: %w", filepath.Dir(p.from.Path()), err)
	}
	return s.tocChanged()
}

// relocated is raw, a note of the wing, with its links to from pointing
// at to, and (self: the moved note itself) its hall field set to to's.
func (s *Store) relocated(raw []byte, from, to brain.ID, self bool) ([]byte, int, error) {
	doc, err := frontmatter.Parse(raw)
	if err != nil {
		return nil, 0, refusal.Refuse(ErrInvalid, "%s has a frontmatter the store cannot edit safely (%v); fix the file by hand first", from, err)
	}
	body, n := layout.RewriteLinks(doc.Body(), s.wing, from, to)
	if n > 0 {
		doc.SetBody(body)
	}
	if self {
		doc.Set(KeyHall, to.Hall)
	}
	if err := doc.Err(); err != nil {
		return nil, 0, refusal.Refuse(ErrInvalid, "cannot edit the frontmatter of %s: %v", from, err)
	}
	return doc.Bytes(), n, nil
}

// lockAll takes the locks of the notes ids in sorted order (every caller
// that holds more than one note lock takes them so, and none takes one
// while it holds another's otherwise, except Promote's inbox-then-note)
// and returns the function that releases them.
func (s *Store) lockAll(ids []string) (unlock func()) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = "w:" + id
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	unlocks := make([]func(), len(keys))
	for i, k := range keys {
		unlocks[i] = s.locks.Lock(k)
	}
	return func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
}

// Purging describes a purge (Purge).
type Purging struct {
	Ref     string // the note: id or path, now or before a move
	Version string // the version to purge; "" for every version
	Reason  string // required
	By      string
	Hook    Hook
	Prov    Provenance

	dropRefs []string // the held remote's (PurgeHold.DropRefs)
}

// Purged is what a purge did.
type Purged struct {
	Ref, Path string
	// Versions is the number of the note's versions whose content was
	// purged.
	Versions int
	// Removed: every version was purged, and the note is gone.
	Removed bool
}

// Purge removes a version's content (or every version's) from history,
// the one rewrite of history, when the operator enabled it
// (HistoryOptions.AllowPurge). A purge of every version first removes the
// note (recorded as action purge). Afterwards the bytes are on no file the
// store keeps: history's objects are repacked (shard/history), the index
// forgets the words no note holds any more and its snapshot is written
// again. See docs/history.md.
func (s *Store) Purge(ctx context.Context, p Purging) (Purged, error) {
	if err := s.checkOpen(); err != nil {
		return Purged{}, err
	}
	if err := s.needHistory(); err != nil {
		return Purged{}, err
	}
	if !s.purgeOK {
		return Purged{}, refusal.Refuse(ErrForbidden, "purging history is disabled for wing %q: an operator enables it with the shard's --allow-purge (Helm: shard.allowPurge); until then, update or archive the note", s.wing)
	}
	if strings.TrimSpace(p.Reason) == "" {
		return Purged{}, refusal.Refuse(ErrInvalid, "a purge needs a reason: it is recorded in the purge notice and the audit commit")
	}
	if p.By == "" {
		return Purged{}, refusal.Refuse(ErrInvalid, "a purge needs the curator's email")
	}
	hold, err := s.holdRemote(ctx)
	if err != nil {
		return Purged{}, err
	}
	var blobs []string
	if hold != nil {
		defer func() {
			if ferr := hold.Finish(context.WithoutCancel(ctx), blobs); ferr != nil {
				s.log.Error("store: the purge's remote state could not be recorded", "err", ferr)
			}
		}()
		p.dropRefs = hold.DropRefs()
	}
	res, blobs, err := s.purge(ctx, p)
	return res, err
}

// holdRemote holds the wing's remote, if it has one, for a purge.
func (s *Store) holdRemote(ctx context.Context) (PurgeHold, error) {
	if s.remote == nil {
		return nil, nil
	}
	hold, err := s.remote.HoldForPurge(ctx)
	if err != nil {
		s.log.Warn("store: purge refused: the remote cannot be synced first", "err", err)
		return nil, brain.Wrap(err, brain.CodeUnavailable, "the purge needs the wing's git remote reachable and in sync first, so that the remote holds nothing the wing lacks; nothing was changed: retry once brainstem check shows the wing in sync")
	}
	return hold, nil
}

// purge is Purge once the remote (if any) is held: it returns the ids of
// the blobs purged.
func (s *Store) purge(ctx context.Context, p Purging) (Purged, []string, error) {
	r, err := s.lineage(ctx, p.Ref)
	if err != nil {
		return Purged{}, nil, err
	}
	defer s.locks.Lock(r.lockKey())()
	victim := ""
	if p.Version != "" {
		v, _, err := s.hist.Read(ctx, r.rel, p.Version)
		if err != nil {
			return Purged{}, nil, err
		}
		if v.Purged {
			return Purged{}, nil, refusal.Refuse(ErrInvalid, "version %s of %s is already purged", v.ID, r)
		}
		victim = v.ContentHash
	}
	count, err := s.purgeCount(ctx, r.rel, victim)
	if err != nil {
		return Purged{}, nil, err
	}
	if count == 0 {
		return Purged{}, nil, refusal.Refuse(ErrInvalid, "%s has no content left in history to purge", r)
	}
	res := Purged{Ref: r.String(), Path: r.rel, Versions: count, Removed: p.Version == ""}
	if err := runHook(p.Hook, Intent{Mark: Mark{Op: MarkPurge, Path: r.rel, Hash: victim}, Outcome: res}); err != nil {
		return Purged{}, nil, err
	}
	prov := p.Prov
	prov.Reason = cmp.Or(prov.Reason, p.Reason)
	abs, err := s.abs(r.rel)
	if err != nil {
		return Purged{}, nil, err
	}
	if p.Version == "" {
		// The note leaves the brain first, as a change of its own: no
		// moment comes where history lacks what the disk holds.
		old, _, err := readFileLimit(abs, s.maxNote)
		switch {
		case err == nil:
			if err := s.removeFile(r, abs, old, history.ActionPurge, p.By, prov); err != nil {
				return Purged{}, nil, err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return Purged{}, nil, s.readErr(r.String(), err)
		}
	}
	hr, err := s.hist.Purge(ctx, history.PurgeRequest{Path: r.rel, Version: p.Version, Author: p.By, Tool: prov.Tool,
		Subject: subject(prov, history.ActionPurge, r.String()), Reason: prov.Reason, DropRefs: p.dropRefs})
	if err != nil {
		return Purged{}, hr.Blobs, err // Blobs set: the history was rewritten all the same
	}
	s.log.Info("store: purged from history", "path", r.rel, "versions", count, "rewritten_commits", hr.Rewritten, "curator", p.By)
	if err := s.scrub(); err != nil {
		return res, hr.Blobs, err
	}
	return res, hr.Blobs, nil
}

// purgeCount counts the versions of the lineage at rel that a purge of
// the content victim ("" for all content) replaces.
func (s *Store) purgeCount(ctx context.Context, rel, victim string) (int, error) {
	n := 0
	cursor := ""
	for {
		vs, next, err := s.hist.Versions(ctx, rel, cursor, 1000)
		if err != nil {
			return 0, err
		}
		for _, v := range vs {
			if !v.Removed && !v.Purged && (victim == "" || v.ContentHash == victim) {
				n++
			}
		}
		if next == "" {
			return n, nil
		}
		cursor = next
	}
}

// purgeSettled is Settle of a purge: it landed once no version of the
// lineage at m.Path holds the purged content any more.
func (s *Store) purgeSettled(m Mark) (bool, error) {
	if s.hist == nil {
		return false, fmt.Errorf("store: settle a purge of %s: no history: %w", m.Path, ErrInvalid)
	}
	n, err := s.purgeCount(context.Background(), m.Path, m.Hash)
	if err != nil {
		if e, ok := brain.As(err); ok && e.Code == brain.CodeNotFound {
			return false, nil
		}
		return false, err
	}
	return n == 0, nil
}

// scrub leaves nothing of content no note holds in what the store keeps:
// the indexes forget their unused words, the cache is emptied, and the
// snapshot is written again.
func (s *Store) scrub() error {
	s.ix.Scrub()
	s.inbox.mu.Lock()
	s.inbox.ix.Scrub()
	s.inbox.mu.Unlock()
	s.cache.Clear()
	s.hits.Clear()
	s.snap.dirty.Add(1)
	if err := s.saveSnapshot(); err != nil {
		return fmt.Errorf("store: write the index snapshot after the purge: %w", err)
	}
	return nil
}
