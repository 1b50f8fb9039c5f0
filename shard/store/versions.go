package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/store/refusal"
)

// Reading history: the versions of a note, one version's content, the
// diff of two, and the notes archived. A note is named by its id or its
// path now, or by an id or path it had before it was moved (or promoted,
// for an inbox path): its lineage is followed to where it lives now.

// noteRef is a note of the wing a call names: a wiki note (id set) or an
// inbox note (name set), with its brain-relative path.
type noteRef struct {
	id   brain.ID
	name string
	rel  string
}

func (r noteRef) inbox() bool { return r.name != "" }

// String is how messages name the note: its id, or its inbox path.
func (r noteRef) String() string {
	if r.inbox() {
		return r.rel
	}
	return r.id.String()
}

func (r noteRef) lockKey() string {
	if r.inbox() {
		return "i:" + r.name
	}
	return "w:" + r.id.String()
}

// parseRef resolves a note id, a wiki path or an inbox path of this wing.
func (s *Store) parseRef(ref string) (noteRef, error) {
	if strings.HasPrefix(ref, brain.TopInbox+"/") {
		wing, name, err := brain.ParseInboxPath(ref)
		if err != nil {
			return noteRef{}, refusal.Invalid(err)
		}
		if wing != s.wing {
			return noteRef{}, refusal.Refuse(ErrForbidden, "%s belongs to wing %q but this shard serves wing %q", ref, wing, s.wing)
		}
		return noteRef{name: name, rel: brain.InboxPath(s.wing, name)}, nil
	}
	id, _, err := s.wikiRef(ref)
	if err != nil {
		return noteRef{}, err
	}
	return noteRef{id: id, rel: id.Path()}, nil
}

// needHistory refuses a history call of a store that keeps none.
func (s *Store) needHistory() error {
	if s.hist == nil {
		return refusal.Refuse(ErrInvalid, "wing %q keeps no history on this shard (it runs with history off)", s.wing)
	}
	return nil
}

// lineage resolves ref to the note whose history it names: the note at
// that path, or, when a note was moved away from it, where the note went.
func (s *Store) lineage(ctx context.Context, ref string) (noteRef, error) {
	r, err := s.parseRef(ref)
	if err != nil {
		return noteRef{}, err
	}
	if err := s.needHistory(); err != nil {
		return noteRef{}, err
	}
	_, _, err = s.hist.Versions(ctx, r.rel, "", 1) // brings the index up to date
	if err == nil {
		return r, nil
	}
	if e, ok := brain.As(err); !ok || e.Code != brain.CodeNotFound {
		return noteRef{}, err
	}
	if to, _, ok := s.hist.MovedTo(r.rel); ok {
		return s.parseRef(to)
	}
	return noteRef{}, refusal.Refuse(ErrNotFound, "%s has no history in wing %q: no version of it was ever recorded", r, s.wing)
}

// goneErr is the refusal of a read of note r, whose file is not there: it
// says so, and when history knows the note, what became of it: moved
// (ErrMoved, naming where), archived or purged (ErrNotFound, by whom, when
// and why).
func (s *Store) goneErr(r noteRef) error {
	plain := refusal.Refuse(ErrNotFound, "no note %s in wing %q", r, s.wing)
	if r.inbox() {
		plain = refusal.Refuse(ErrNotFound, "no inbox note %s (it may have been promoted)", r.rel)
	}
	if s.hist == nil {
		return plain
	}
	if err := s.hist.Flush(context.Background()); err != nil {
		return plain
	}
	if to, v, ok := s.hist.MovedTo(r.rel); ok {
		dest, err := s.parseRef(to)
		if err != nil {
			return plain
		}
		if v.Removed {
			return refusal.Refuse(ErrNotFound, "%s was moved to %s, which was %s", r, dest, removal(v))
		}
		if r.inbox() && !dest.inbox() {
			return refusal.Refuse(ErrMoved, "inbox note %s was promoted to %s by %s at %s", r.rel, dest, v.Author, v.At.Format(time.RFC3339))
		}
		return refusal.Refuse(ErrMoved, "%s was moved to %s (its newest version is by %s at %s)", r, dest, v.Author, v.At.Format(time.RFC3339))
	}
	if v, ok := s.hist.Latest(r.rel); ok && v.Removed {
		return refusal.Refuse(ErrNotFound, "%s was %s; its versions are in history and a restore of one brings it back", r, removal(v))
	}
	return plain
}

// removal describes the version that removed a note.
func removal(v history.Version) string {
	what := "archived"
	switch v.Action {
	case ActionArchive:
	case history.ActionPurge:
		what = "purged"
	case history.ActionOutside:
		what = "deleted outside Brainstem"
	default:
		what = "removed (" + v.Action + ")"
	}
	s := fmt.Sprintf("%s by %s at %s", what, v.Author, v.At.Format(time.RFC3339))
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	return s
}

// NoteHistory is one page of a note's versions, newest first.
type NoteHistory struct {
	// Ref is the note as it is named now (its id, or its inbox path) and
	// Path its path now (where its last version is).
	Ref, Path string
	Versions  []history.Version
	Next      string // the cursor of the next page, "" after the oldest
}

// Versions lists the versions of the note ref names, newest first, a page
// of at most limit before cursor ("" for the newest), following moves.
func (s *Store) Versions(ctx context.Context, ref, cursor string, limit int) (NoteHistory, error) {
	if err := s.checkOpen(); err != nil {
		return NoteHistory{}, err
	}
	r, err := s.lineage(ctx, ref)
	if err != nil {
		return NoteHistory{}, err
	}
	vs, next, err := s.hist.Versions(ctx, r.rel, cursor, limit)
	if err != nil {
		return NoteHistory{}, err
	}
	return NoteHistory{Ref: r.String(), Path: r.rel, Versions: vs, Next: next}, nil
}

// GetVersion reads one version of the note ref names (following moves):
// the note as it was then (its ID is the note's id now, its Path the path
// it had then) and the version.
func (s *Store) GetVersion(ctx context.Context, ref, version string) (*Note, history.Version, error) {
	if err := s.checkOpen(); err != nil {
		return nil, history.Version{}, err
	}
	r, err := s.lineage(ctx, ref)
	if err != nil {
		return nil, history.Version{}, err
	}
	v, raw, err := s.hist.Read(ctx, r.rel, version)
	if err != nil {
		return nil, history.Version{}, err
	}
	return s.noteAt(r, v.Path, raw), v, nil
}

// noteAt is the Note of note r with the bytes raw, read at path.
func (s *Store) noteAt(r noteRef, path string, raw []byte) *Note {
	if r.inbox() {
		return s.noteOf("", r.name, path, raw, r.name)
	}
	return s.noteOf(r.id.String(), "", path, raw, r.id.Slug)
}

// NoteDiff is a unified diff between two versions of a note.
type NoteDiff struct {
	Ref      string
	From, To history.Version
	Text     string
	Cut      bool // Text was cut at the size limit
	// TooDifferent: the versions differ too much for a line diff
	// (history.ErrTooDifferent); Text is then one line saying so.
	TooDifferent bool
	// FromSize and ToSize are the bytes compared.
	FromSize, ToSize VersionSize
}

// VersionSize is the size and content hash of a version's bytes.
type VersionSize struct {
	Bytes, Lines int    // lines as the diff counts them (history.LineCount)
	Hash         string // HashOf the bytes; "" for a version that removed the note
}

func sizeOf(v history.Version, b []byte) VersionSize {
	sz := VersionSize{Bytes: len(b), Lines: history.LineCount(b)}
	if !v.Removed {
		sz.Hash = HashOf(b)
	}
	return sz
}

// Diff compares versions from and to ("" for the newest) of the note ref
// names, as a unified diff of at most maxBytes. A version that removed the
// note compares as empty. Versions that differ too much for a line diff
// (history.Diff's bounds) are no error: the NoteDiff says TooDifferent,
// with both versions' sizes and hashes. It stops with ctx's error when ctx
// ends.
func (s *Store) Diff(ctx context.Context, ref, from, to string, maxBytes int) (NoteDiff, error) {
	if err := s.checkOpen(); err != nil {
		return NoteDiff{}, err
	}
	r, err := s.lineage(ctx, ref)
	if err != nil {
		return NoteDiff{}, err
	}
	if to == "" {
		vs, _, err := s.hist.Versions(ctx, r.rel, "", 1)
		if err != nil {
			return NoteDiff{}, err
		}
		to = vs[0].ID
	}
	fv, fb, err := s.readVersion(ctx, r, from)
	if err != nil {
		return NoteDiff{}, err
	}
	tv, tb, err := s.readVersion(ctx, r, to)
	if err != nil {
		return NoteDiff{}, err
	}
	d := NoteDiff{Ref: r.String(), From: fv, To: tv, FromSize: sizeOf(fv, fb), ToSize: sizeOf(tv, tb)}
	fromName, toName := "a/"+fv.Path, "b/"+tv.Path
	d.Text, d.Cut, err = history.Diff(ctx, fb, tb, fromName, toName, maxBytes)
	switch {
	case errors.Is(err, history.ErrTooDifferent):
		d.TooDifferent, d.Text = true, history.TooDifferentText(fromName, toName)
	case err != nil:
		return NoteDiff{}, fmt.Errorf("store: diff of %s: %w", r, err)
	}
	return d, nil
}

// readVersion reads a version of r's lineage; a removal reads as empty.
func (s *Store) readVersion(ctx context.Context, r noteRef, version string) (history.Version, []byte, error) {
	v, b, err := s.hist.Read(ctx, r.rel, version)
	if err == nil {
		return v, b, nil
	}
	if v.Removed { // Read names the version and refuses it: it has no bytes
		return v, nil, nil
	}
	return v, nil, err
}

// ArchivedNote is a wiki note whose last version removed it.
type ArchivedNote struct {
	ID, Hall, Path string
	Title          string // the title of its last version with content
	Removal        history.Version
}

// Archived lists the wing's archived notes (and those purged or deleted
// outside Brainstem: every wiki note whose newest version removes it), of
// one hall or all, ordered by id, a page of at most limit after cursor
// (the last id of the previous page).
func (s *Store) Archived(ctx context.Context, hall, cursor string, limit int) ([]ArchivedNote, string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, "", err
	}
	if err := s.needHistory(); err != nil {
		return nil, "", err
	}
	prefix := brain.WingDir(brain.TopWiki, s.wing) + "/"
	if hall != "" {
		if err := brain.ValidHall(hall); err != nil {
			return nil, "", refusal.Invalid(err)
		}
		prefix = brain.HallDir(s.wing, hall) + "/"
	}
	if cursor != "" {
		if _, err := brain.ParseID(cursor); err != nil {
			return nil, "", refusal.Refuse(ErrInvalid, "cursor %q is not one a list of archived notes returned; list again without a cursor", cursor)
		}
	}
	if err := s.hist.Flush(ctx); err != nil {
		return nil, "", err
	}
	var all []ArchivedNote
	for i, v := range s.hist.Removed(prefix) {
		if i%256 == 0 && ctx.Err() != nil { // every archived note costs an lstat
			return nil, "", fmt.Errorf("store: %w", ctx.Err())
		}
		id, err := brain.ParseID(v.Path)
		if err != nil || !s.tracked(v.Path) || id.String() <= cursor {
			continue
		}
		if abs, err := s.abs(v.Path); err != nil {
			continue
		} else if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) {
			continue // a file is there again (not yet recorded)
		}
		all = append(all, ArchivedNote{ID: id.String(), Hall: id.Hall, Path: v.Path, Removal: v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	next := ""
	if len(all) > limit {
		all = all[:limit]
		next = all[limit-1].ID
	}
	for i := range all {
		all[i].Title = s.lastTitle(ctx, all[i].Path, all[i].ID)
	}
	return all, next, nil
}

// lastTitle is the title of the newest version with content of the note
// whose lineage ends at rel ("" if none can be read).
func (s *Store) lastTitle(ctx context.Context, rel, id string) string {
	vs, _, err := s.hist.Versions(ctx, rel, "", 8)
	if err != nil {
		return ""
	}
	for _, v := range vs {
		if v.Removed || v.Purged {
			continue
		}
		_, raw, err := s.hist.Read(ctx, rel, v.ID)
		if err != nil {
			return ""
		}
		return parseNote(raw, id).title
	}
	return ""
}
