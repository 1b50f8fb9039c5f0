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
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/layout"
	"github.com/brainstem/brainstem/shard/store/refusal"
)

// NewNote describes a note to create with Create.
type NewNote struct {
	Title string
	Body  string
	// Hall is required for a wiki note; for an inbox note it is optional
	// and stored as the suggested hall.
	Hall string
	// Slug names the file (the inbox name for an inbox note); "" means
	// layout.Slugify(Title).
	Slug string
	Tags []string
	// Inbox creates inbox/<wing>/<slug>.md instead of a wiki note.
	Inbox bool
	// By is the verified email of the author (created_by).
	By string
	// Extra are frontmatter keys of the caller's own (the predecessor's
	// type, domain, source), written after the store's in this order; a
	// key the store writes itself (OwnKey) is refused.
	Extra []Field
	// Hook, if set, is called before the note is written (see Hook).
	Hook Hook
	// Prov is what history records of the change besides the file.
	Prov Provenance
}

// OwnKey reports whether the store writes the frontmatter key itself when
// it creates, updates or promotes a note: a caller cannot set it.
func OwnKey(key string) bool {
	switch key {
	case KeyTitle, KeyWing, KeyHall, KeyTags, KeyCreatedBy, KeyCreatedAt, KeyUpdatedBy, KeyUpdatedAt,
		KeySupersedes, KeySupersedeReason, KeyPromotedBy, KeyPromotedAt:
		return true
	}
	return false
}

// Target is where a NewNote goes.
type Target struct {
	ID   string // "wing/hall/slug" for a wiki note, "" for an inbox note
	Name string // inbox name, "" for a wiki note
	Path string // brain-relative slash path
	abs  string
}

// Plan validates n and returns where it would be written, without touching
// the filesystem except to check that no file is there (ErrExists).
func (s *Store) Plan(n NewNote) (Target, error) {
	t, err := s.target(n)
	if err != nil {
		return Target{}, err
	}
	if _, err := os.Lstat(t.abs); err == nil {
		return t, s.createErr(t.Path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return t, fmt.Errorf("store: %s: %w", t.Path, err)
	}
	return t, nil
}

func (s *Store) target(n NewNote) (Target, error) {
	if strings.TrimSpace(n.Title) == "" {
		return Target{}, refusal.Refuse(ErrInvalid, "a note needs a non-empty title")
	}
	if n.By == "" {
		return Target{}, refusal.Refuse(ErrInvalid, "a note needs its author's email")
	}
	slug := n.Slug
	if slug == "" {
		slug = layout.Slugify(n.Title)
		if slug == "" {
			return Target{}, refusal.Refuse(ErrInvalid, "cannot derive a slug from title %q (no letters or digits): pass a slug", n.Title)
		}
	}
	var t Target
	if n.Inbox {
		if n.Hall != "" {
			if err := brain.ValidHall(n.Hall); err != nil {
				return Target{}, refusal.Invalid(err)
			}
		}
		if err := brain.ValidInboxName(slug); err != nil {
			return Target{}, refusal.Invalid(err)
		}
		t = Target{Name: slug, Path: brain.InboxPath(s.wing, slug)}
	} else {
		if n.Hall == "" {
			return Target{}, refusal.Refuse(ErrInvalid, "a wiki note needs a hall (one of %s)", brain.HallList)
		}
		id := brain.ID{Wing: s.wing, Hall: n.Hall, Slug: slug}
		if err := id.Validate(); err != nil {
			return Target{}, refusal.Invalid(err)
		}
		t = Target{ID: id.String(), Path: id.Path()}
	}
	abs, err := s.abs(t.Path)
	if err != nil {
		return Target{}, err
	}
	t.abs = abs
	return t, nil
}

// newFile is the file of a new note: its frontmatter (title, wing, hall,
// tags, created_by, created_at, then the caller's Extra keys) and body.
func (s *Store) newFile(n NewNote, createdAt string) ([]byte, error) {
	doc := frontmatter.New(nil, n.Body)
	doc.Set(KeyTitle, n.Title)
	doc.Set(KeyWing, s.wing)
	if n.Hall != "" {
		doc.Set(KeyHall, n.Hall)
	}
	if len(n.Tags) > 0 {
		doc.SetStrings(KeyTags, n.Tags)
	}
	doc.Set(KeyCreatedBy, n.By)
	doc.Set(KeyCreatedAt, createdAt)
	for _, f := range n.Extra {
		switch {
		case OwnKey(f.Key):
			return nil, refusal.Refuse(ErrInvalid, "frontmatter key %q is the store's own: it cannot be given", f.Key)
		case f.IsList:
			doc.SetStrings(f.Key, f.List)
		default:
			doc.Set(f.Key, f.Value)
		}
	}
	if err := doc.Err(); err != nil {
		return nil, refusal.Refuse(ErrInvalid, "cannot write the frontmatter: %v", err)
	}
	return doc.Bytes(), nil
}

// Create writes a new note durably and indexes it. It never replaces a
// file: if the note exists the error wraps ErrExists.
func (s *Store) Create(ctx context.Context, n NewNote) (*Note, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	t, err := s.target(n)
	if err != nil {
		return nil, err
	}
	createdAt := rfc3339(s.now())
	raw, err := s.newFile(n, createdAt)
	if err != nil {
		return nil, err
	}
	if len(raw) > s.maxNote {
		return nil, refusal.Refuse(ErrTooLarge, "the note would be %d bytes, over the %d-byte limit", len(raw), s.maxNote)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}

	mark := Mark{Op: MarkCreate, Path: t.Path, Hash: HashOf(raw), Stamp: StampCreated, By: n.By, At: createdAt}
	r, fallback := noteRef{name: t.Name, rel: t.Path}, t.Name
	if !n.Inbox {
		r.id, _ = brain.ParseID(t.ID)
		fallback = r.id.Slug
	}
	unlock := s.locks.Lock(r.lockKey())
	note := s.noteOf(t.ID, t.Name, t.Path, raw, fallback)
	err = s.hookCreate(n.Hook, t, mark, note)
	if err == nil {
		err = s.writeNote(r, t.abs, raw, nil, ActionCreate, n.By, n.Prov, s.createErr(t.Path, fs.ErrExist))
	}
	unlock()
	if err == nil && !n.Inbox {
		err = s.tocChanged()
	}
	if err != nil {
		return nil, err
	}
	return note, nil
}

// writeNote writes raw as note r's file abs (over old; nil: a new file,
// never replacing one, and a file there is the error exists) as one change
// of history, and applies it to the memory state. The caller holds r's
// lock; for a wiki note it calls tocChanged after.
func (s *Store) writeNote(r noteRef, abs string, raw, old []byte, action, by string, prov Provenance, exists error) error {
	rec, err := s.begin(action, by, prov, subject(prov, action, r.String()), put(r.rel, raw, old))
	if err != nil {
		return err
	}
	if old == nil {
		err = atomicfile.CreateFile(abs, raw, filePerm)
	} else {
		err = atomicfile.WriteFile(abs, raw, filePerm)
	}
	rec.done(err)
	switch {
	case old == nil && errors.Is(err, fs.ErrExist):
		return exists
	case err != nil:
		return fmt.Errorf("store: write %s: %w", r.rel, err)
	case r.inbox():
		s.inboxWritten(r.name, raw, abs)
		return nil
	}
	return s.applyFile(r.id, abs, raw)
}

// hookCreate runs a create's hook once the target is known to be free: a
// note that already exists fails with ErrExists before the hook runs, so a
// hook never records a write that cannot happen.
func (s *Store) hookCreate(h Hook, t Target, m Mark, note *Note) error {
	if h == nil {
		return nil
	}
	if _, err := os.Lstat(t.abs); err == nil {
		return s.createErr(t.Path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %s: %w", t.Path, err)
	}
	return runHook(h, Intent{Mark: m, Note: note})
}

func (s *Store) createErr(path string, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return refusal.Refuse(ErrExists, "%s already exists (notes are never overwritten): choose another slug", path)
	}
	return fmt.Errorf("store: write %s: %w", path, err)
}

// applyFile stats the file just written and applies raw to the memory state.
func (s *Store) applyFile(id brain.ID, abs string, raw []byte) error {
	at := s.wallNow()
	fi, err := os.Lstat(abs)
	if err != nil {
		return fmt.Errorf("store: stat %s: %w", id.Path(), err)
	}
	s.apply(id, raw, sigOf(fi), at)
	return nil
}

// noteOf builds the Note for bytes the store just wrote.
func (s *Store) noteOf(id, name, path string, raw []byte, fallback string) *Note {
	p := parseNote(raw, fallback)
	return &Note{ID: id, Name: name, Path: path, Hash: HashOf(raw), Title: p.title, Fields: p.fields, Body: p.body, FrontmatterErr: p.err, Raw: raw,
		Flags: injection.Scan(raw)}
}

// Change describes an update of an existing wiki note.
type Change struct {
	ID   string // note id or wiki path
	Body string // the new body
	// Reason is recorded as supersede_reason; required.
	Reason string
	// ExpectedHash, if set, must equal the note's current content hash,
	// else the update fails with ErrConflict and changes nothing.
	ExpectedHash string
	// Title, if set, replaces the title.
	Title string
	// By is the verified email of the author (updated_by).
	By string
	// Hook, if set, is called before the new version is written (see Hook).
	Hook Hook
	// Prov is what history records of the change besides the file (its
	// Reason is Reason when empty).
	Prov Provenance
}

// Update supersedes the body of an existing wiki note. It stamps
// updated_by, updated_at, supersedes (the prior content hash) and
// supersede_reason, and keeps every other frontmatter line as it was.
// It never creates a note (ErrNotFound).
func (s *Store) Update(ctx context.Context, c Change) (*Note, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	id, abs, err := s.wikiRef(c.ID)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Reason) == "" {
		return nil, refusal.Refuse(ErrInvalid, "an update needs a reason (recorded as supersede_reason)")
	}
	if c.By == "" {
		return nil, refusal.Refuse(ErrInvalid, "an update needs its author's email")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	unlock := s.locks.Lock("w:" + id.String())
	old, err := s.readNoteFile(noteRef{id: id, rel: id.Path()}, abs)
	if err != nil {
		unlock()
		return nil, err
	}
	cur := HashOf(old)
	if c.ExpectedHash != "" && c.ExpectedHash != cur {
		unlock()
		return nil, refusal.Refuse(ErrConflict, "%s changed: expected_hash is %s but the current content_hash is %s; get the note again, merge your change and retry with expected_hash %s",
			id, c.ExpectedHash, cur, cur)
	}
	doc, err := frontmatter.Parse(old)
	if err != nil {
		unlock()
		return nil, refusal.Refuse(ErrInvalid, "%s has a frontmatter the store cannot edit safely (%v); fix the file by hand first", id, err)
	}
	doc.SetBody(c.Body)
	if c.Title != "" {
		doc.Set(KeyTitle, c.Title)
	}
	doc.Set(KeyUpdatedBy, c.By)
	doc.Set(KeyUpdatedAt, rfc3339(s.now()))
	doc.Set(KeySupersedes, cur)
	doc.Set(KeySupersedeReason, c.Reason)
	if err := doc.Err(); err != nil {
		unlock()
		return nil, refusal.Refuse(ErrInvalid, "cannot edit the frontmatter of %s: %v", id, err)
	}
	raw := doc.Bytes()
	if len(raw) > s.maxNote {
		unlock()
		return nil, refusal.Refuse(ErrTooLarge, "the note would be %d bytes, over the %d-byte limit", len(raw), s.maxNote)
	}
	note := s.noteOf(id.String(), "", id.Path(), raw, id.Slug)
	if err := runHook(c.Hook, Intent{Mark: Mark{Op: MarkReplace, Path: id.Path(), Hash: note.Hash}, Note: note}); err != nil {
		unlock()
		return nil, err
	}
	prov := c.Prov
	prov.Reason = cmp.Or(prov.Reason, c.Reason)
	err = s.writeNote(noteRef{id: id, rel: id.Path()}, abs, raw, old, ActionUpdate, c.By, prov, nil)
	unlock()
	if err == nil {
		err = s.tocChanged()
	}
	if err != nil {
		return nil, err
	}
	return note, nil
}

// Promotion describes a promotion of an inbox note (Promote).
type Promotion struct {
	Name, Hall string
	Slug       string // "" → Name
	Title      string // "" keeps the note's title (or derives one)
	By         string // the curator's verified email (promoted_by)
	// AcknowledgeFlags promotes a note the injection audit flags: without
	// it such a note is refused (ErrFlagged) and left in the inbox.
	AcknowledgeFlags bool
	Hook             Hook // if set, called before the wiki note is written (see Hook)
	Prov             Provenance
}

// Promote moves inbox note p.Name into the wiki as
// wiki/<wing>/<hall>/<slug>.md. It validates the hall before touching the
// filesystem, refuses an existing target (ErrExists) leaving the inbox file
// untouched, writes the wiki note (stamping wing, hall, promoted_by and
// promoted_at, and the title when given, keeping every other frontmatter
// line), then deletes the inbox file and rewrites _index.md. It returns
// the new note and its tunnels. In history the inbox note becomes the wiki
// note: one lineage.
func (s *Store) Promote(ctx context.Context, p Promotion) (*Note, []string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	id, err := s.promotionID(p.Name, p.Hall, p.Slug, p.By)
	if err != nil {
		return nil, nil, err
	}
	inRel := brain.InboxPath(s.wing, p.Name)
	inAbs, err := s.abs(inRel)
	if err != nil {
		return nil, nil, err
	}
	wikiAbs, err := s.abs(id.Path())
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}

	// Lock order: inbox name, then note. Nothing locks them the other way.
	unlockIn := s.locks.Lock("i:" + p.Name)
	defer unlockIn()
	defer s.locks.Lock("w:" + id.String())()
	old, _, err := readFileLimit(inAbs, s.maxNote)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, refusal.Refuse(ErrNotFound, "no inbox note %q (%s)", p.Name, inRel)
		}
		return nil, nil, s.readErr(inRel, err)
	}
	if _, err := os.Lstat(wikiAbs); err == nil {
		return nil, nil, refusal.Refuse(ErrExists, "%s already exists; the inbox note was left untouched: promote it with another slug", id)
	}
	raw, promotedAt, err := s.promoted(old, p, inRel)
	if err != nil {
		return nil, nil, err
	}
	n := s.noteOf(id.String(), "", id.Path(), raw, id.Slug)
	if len(n.Flags) > 0 && !p.AcknowledgeFlags {
		return nil, nil, flaggedErr(inRel, n.Flags)
	}
	tunnels := s.tunnelsOf(s.parseLinks(n.Body))
	mark := Mark{Op: MarkCreate, Path: id.Path(), Hash: n.Hash, Stamp: StampPromoted, By: p.By, At: promotedAt, Remove: inRel, RemoveHash: HashOf(old)}
	if err := runHook(p.Hook, Intent{Mark: mark, Note: n, Tunnels: tunnels}); err != nil {
		return nil, nil, err
	}
	if err := s.promoteFiles(id, p, inRel, inAbs, wikiAbs, old, raw); err != nil {
		return nil, nil, err
	}
	if err := s.tocChanged(); err != nil {
		return nil, nil, err
	}
	return n, tunnels, nil
}

// promoteFiles writes the promoted note, removes the inbox file and
// records both in history as one change. Callers hold both locks.
func (s *Store) promoteFiles(id brain.ID, p Promotion, inRel, inAbs, wikiAbs string, old, raw []byte) error {
	op := put(id.Path(), raw, nil)
	op.From, op.Base, op.HadBase = inRel, sha256.Sum256(old), true
	rec, err := s.begin(ActionPromote, p.By, p.Prov, subject(p.Prov, ActionPromote, id.String()), op)
	if err != nil {
		return err
	}
	if err := atomicfile.CreateFile(wikiAbs, raw, filePerm); err != nil {
		rec.done(err)
		if errors.Is(err, fs.ErrExist) {
			return refusal.Refuse(ErrExists, "%s already exists; the inbox note was left untouched: promote it with another slug", id)
		}
		return fmt.Errorf("store: write %s: %w", id.Path(), err)
	}
	defer rec.done(nil) // the wiki note landed: whatever follows, the next start settles the inbox file
	if err := s.applyFile(id, wikiAbs, raw); err != nil {
		return err
	}
	if err := os.Remove(inAbs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %s was written but the inbox file %s could not be removed (remove it by hand): %w", id, inRel, err)
	}
	s.inboxWritten(p.Name, nil, inAbs)
	if err := atomicfile.SyncDir(filepath.Dir(inAbs)); err != nil {
		return fmt.Errorf("store: sync inbox: %w", err)
	}
	return nil
}

// promotionID checks a promotion's arguments and returns the note it
// creates (slug defaults to the inbox name).
func (s *Store) promotionID(name, hall, slug, by string) (brain.ID, error) {
	if err := brain.ValidHall(hall); err != nil {
		return brain.ID{}, refusal.Invalid(err)
	}
	if err := brain.ValidInboxName(name); err != nil {
		return brain.ID{}, refusal.Invalid(err)
	}
	id := brain.ID{Wing: s.wing, Hall: hall, Slug: cmp.Or(slug, name)}
	if err := id.Validate(); err != nil {
		return brain.ID{}, refusal.Invalid(err)
	}
	if by == "" {
		return brain.ID{}, refusal.Refuse(ErrInvalid, "a promotion needs the curator's email")
	}
	return id, nil
}

// promoted is the inbox note old (at inRel) as the wiki note it becomes:
// its title kept or derived, its wing and hall set, and stamped promoted by
// by now.
func (s *Store) promoted(old []byte, p Promotion, inRel string) (raw []byte, promotedAt string, err error) {
	doc, err := frontmatter.Parse(old)
	if err != nil {
		return nil, "", refusal.Refuse(ErrInvalid, "inbox note %s has a frontmatter the store cannot edit safely (%v); fix the file first", inRel, err)
	}
	if p.Title != "" {
		doc.Set(KeyTitle, p.Title)
	} else if _, ok := doc.Get(KeyTitle); !ok {
		doc.Set(KeyTitle, parseNote(old, p.Name).title)
	}
	doc.Set(KeyWing, s.wing)
	doc.Set(KeyHall, p.Hall)
	promotedAt = rfc3339(s.now())
	doc.Set(KeyPromotedBy, p.By)
	doc.Set(KeyPromotedAt, promotedAt)
	if err := doc.Err(); err != nil {
		return nil, "", refusal.Refuse(ErrInvalid, "cannot edit the frontmatter of %s: %v", inRel, err)
	}
	raw = doc.Bytes()
	if len(raw) > s.maxNote {
		return nil, "", refusal.Refuse(ErrTooLarge, "the note would be %d bytes, over the %d-byte limit", len(raw), s.maxNote)
	}
	return raw, promotedAt, nil
}

// readErr maps a read failure of what (a note id or a brain-relative
// path): a missing file is ErrNotFound, a refusal of readFileLimit (not a
// regular file, too large) says what it is about, anything else is
// internal.
func (s *Store) readErr(what string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refusal.Refuse(ErrNotFound, "%s does not exist", what)
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrInvalid):
		return about(what, err)
	default:
		return fmt.Errorf("store: read %s: %w", what, err)
	}
}

// readNoteFile reads note r's file at abs: a missing file is goneErr
// (what became of the note), any other failure readErr.
func (s *Store) readNoteFile(r noteRef, abs string) ([]byte, error) {
	raw, _, err := readFileLimit(abs, s.maxNote)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, s.goneErr(r)
	case err != nil:
		return nil, s.readErr(r.String(), err)
	}
	return raw, nil
}

// wikiRef parses a note id or wiki path of this wing and resolves it.
func (s *Store) wikiRef(ref string) (brain.ID, string, error) {
	id, err := brain.ParseID(ref)
	if err != nil {
		return brain.ID{}, "", refusal.Invalid(err)
	}
	if id.Wing != s.wing {
		return brain.ID{}, "", refusal.Refuse(ErrForbidden, "note %s belongs to wing %q but this shard serves wing %q", id, id.Wing, s.wing)
	}
	abs, err := s.abs(id.Path())
	if err != nil {
		return brain.ID{}, "", err
	}
	return id, abs, nil
}
