package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/layout"
	"github.com/brainstem/brainstem/shard/store"
)

// Argument descriptions shared by several tools.
const (
	descWing = "The wing to act on. Optional: this shard serves exactly one wing, and a different value is an error. Through the gateway it picks the shard."
	descHall = "One of facts, decisions, failures, hypotheses, sources."
)

// wingArg is the optional wing argument; it routes the call at the gateway.
func wingArg() toolspec.Arg {
	return toolspec.Arg{Name: "wing", Type: toolspec.String, Desc: descWing, Route: toolspec.RouteWing}
}

// idArg is a required note id, which also routes the call.
func idArg(missing string) toolspec.Arg {
	return toolspec.Arg{Name: "id", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Missing: missing, Route: toolspec.RouteRef,
		Desc: "Note id wing/hall/slug."}
}

func hallArg(desc string, required bool) toolspec.Arg {
	return toolspec.Arg{Name: "hall", Type: toolspec.String, Enum: brain.Halls(), Required: required, Desc: desc,
		Missing: "one of " + brain.HallList}
}

func limitArg(def, max int) toolspec.Arg {
	return toolspec.Arg{Name: "limit", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(max), Default: def, Desc: "Maximum number of notes."}
}

// slugCheck applies the slug rule, naming the argument when it is not
// "slug" itself.
func slugCheck(name, v string) error {
	err := brain.ValidSlug(v)
	if e, ok := brain.As(err); ok && name != "slug" {
		return brain.Wrap(err, e.Code, "%s: %s", name, e.Message)
	}
	return err
}

func (s *Set) titleArg(required bool, desc string) toolspec.Arg {
	return toolspec.Arg{Name: "title", Type: toolspec.String, Required: required, Min: minOne(required), MaxBytes: s.lim.MaxTitleBytes, Line: true, Desc: desc}
}

func (s *Set) bodyArg(desc string) toolspec.Arg {
	return toolspec.Arg{Name: "body", Type: toolspec.String, Required: true, Min: toolspec.Int(1), MaxBytes: s.lim.MaxBodyBytes,
		TooLarge: "split it into several notes", Desc: desc}
}

func (s *Set) tagsArg(desc string) toolspec.Arg {
	return toolspec.Arg{Name: "tags", Type: toolspec.Array, Max: toolspec.Int(s.lim.MaxTags), Desc: desc,
		Items: &toolspec.Arg{Name: "tag", Type: toolspec.String, Required: true, MaxBytes: s.lim.MaxTagBytes, Line: true}}
}

func minOne(required bool) *int {
	if required {
		return toolspec.Int(1)
	}
	return nil
}

// define lists the tools in their fixed descriptor order.
func (s *Set) define() []Tool {
	return []Tool{
		Define(search.Spec(s.lim.Search()), s.query),
		Define(s.getSpec(), s.get),
		Define(s.listSpec(), s.list),
		Define(s.linksSpec(), s.links),
		Define(s.pendingSpec(), s.pending),
		Define(s.writeSpec(), s.write),
		Define(s.updateSpec(), s.update),
		Define(s.ingestSpec(), s.ingest),
		Define(s.sessionLogSpec(), s.sessionLog),
		Define(s.promoteSpec(), s.promote),
		Define(s.sessionListSpec(), s.sessionList),
		Define(s.sessionReadSpec(), s.sessionRead),
		Define(s.historySpec(), s.history),
		Define(s.diffSpec(), s.diff),
		Define(s.restoreSpec(), s.restore),
		Define(s.archiveSpec(), s.archive),
		Define(s.moveSpec(), s.move),
		onlyIf(s.st.PurgeAllowed(), Define(s.purgeSpec(), s.purge)),
	}
}

func (s *Set) checkWing(w string) error {
	if w != "" && w != s.Wing() {
		return invalid("this shard serves wing %q, not %q: omit wing or pass %q", s.Wing(), w, s.Wing())
	}
	return nil
}

// ---- brain_query (its declaration and its query are the search package's)

type queryArgs struct{ search.Args }

func (a *queryArgs) wingName() string { return a.Wing }

func (s *Set) query(ctx context.Context, _ Caller, a *queryArgs) (any, error) {
	q := a.Tokenized()
	if err := search.Check(q, s.lim.Search()); err != nil {
		return nil, err
	}
	res, err := s.st.QueryHits(ctx, q)
	if err != nil {
		return nil, err
	}
	return rawResult{b: res.AppendAnswer(nil, q)}, nil
}

// ---- brain_get

func (s *Set) getSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_get", Title: "Read a note", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: getResult{},
		Description: "Read one note in full: a curated note by id (wing/hall/slug) or path (wiki/wing/hall/slug.md), or an " +
			"inbox note by path (inbox/wing/name.md). Returns {id, path, content_hash, frontmatter, body}; frontmatter " +
			"keeps the file's key order, values are strings or arrays of strings. Pass content_hash as expected_hash " +
			"to brain_update to avoid overwriting someone else's change. With version, the note as it was at that version " +
			"(brain_history lists them; the answer adds version, and path is where the note was then). A note that was " +
			"moved answers moved with its new id; an archived one not_found saying who archived it and why.",
		Args: []toolspec.Arg{
			{Name: "id", Type: toolspec.String, Route: toolspec.RouteRef, Desc: "Note id wing/hall/slug (or its wiki path). Give id or path, not both."},
			{Name: "path", Type: toolspec.String, Route: toolspec.RoutePath, Desc: "Brain-relative path: wiki/wing/hall/slug.md or inbox/wing/name.md."},
			versionArg("version", false, "A version of the note, as brain_history lists it; omit for the current one."),
			wingArg(),
		},
		Legacy: getLegacy(),
	}
}

type getArgs struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Version string `json:"version"`
	WingArg
}

// frontmatter marshals fields as a JSON object in file order.
type frontmatter []store.Field

func (f frontmatter) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, fd := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := brain.Marshal(fd.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		var v []byte
		if fd.IsList {
			v, err = brain.Marshal(fd.List)
		} else {
			v, err = brain.Marshal(fd.Value)
		}
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type getResult struct {
	ID          string      `json:"id"`
	Path        string      `json:"path"`
	ContentHash string      `json:"content_hash"`
	Frontmatter frontmatter `json:"frontmatter"`
	Body        string      `json:"body"`
	Version     string      `json:"version,omitempty"`
	// Flags are the injection audit's findings on the note's bytes,
	// omitted when there are none.
	Flags []injection.Flag `json:"flags,omitempty"`
}

func (s *Set) get(ctx context.Context, _ Caller, a *getArgs) (any, error) {
	ref := a.ID
	switch {
	case a.ID != "" && a.Path != "":
		return nil, invalid("give id or path, not both")
	case a.ID == "" && a.Path == "":
		return nil, invalid("id or path is required: an id wing/hall/slug, a path wiki/wing/hall/slug.md or inbox/wing/name.md")
	case a.Path != "":
		ref = a.Path
		if !strings.HasPrefix(ref, brain.TopWiki+"/") && !strings.HasPrefix(ref, brain.TopInbox+"/") {
			return nil, invalid("path %q must start with wiki/ or inbox/ (for an id wing/hall/slug use the id argument)", a.Path)
		}
	}
	if a.Version != "" {
		n, v, err := s.st.GetVersion(ctx, ref, a.Version)
		if err != nil {
			return nil, historyHint(err)
		}
		return getResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash, Frontmatter: frontmatter(n.Fields), Body: n.Body, Version: v.ID, Flags: injection.Flags(n.Flags)}, nil
	}
	n, err := s.st.Get(ctx, ref)
	if err != nil {
		err = hint(err, store.ErrMoved, "brain_get that id")
		if strings.HasPrefix(ref, brain.TopInbox+"/") {
			return nil, hint(err, store.ErrNotFound, "brain_pending lists the inbox")
		}
		return nil, hint(err, store.ErrNotFound, "brain_query or brain_list find existing ids; brain_history lists what history knows of it")
	}
	return getResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash, Frontmatter: frontmatter(n.Fields), Body: n.Body, Flags: injection.Flags(n.Flags)}, nil
}

// ---- brain_list

func (s *Set) listSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_list", Title: "List notes", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: listAnswer{},
		Description: "List the curated notes of the wing, ordered by id, optionally of one hall, a page at a time. Returns " +
			"{notes:[{id, hall, title, path, updated_at}], next_cursor}; pass next_cursor back as cursor for the next " +
			"page (it is \"\" on the last page). Use brain_query to find notes by content. With archived true, the " +
			"archived notes instead: {notes:[{id, hall, title, path, archived_at, archived_by, reason}], next_cursor} " +
			"(title is that of the last version; brain_restore brings one back).",
		Args: []toolspec.Arg{wingArg(), hallArg("Only list notes of this hall.", false),
			{Name: "cursor", Type: toolspec.String, Desc: "The next_cursor of the previous page; omit for the first page."},
			limitArg(ListDefaultLimit, ListMaxLimit),
			{Name: "archived", Type: toolspec.Boolean, Default: false, Desc: "List the archived notes instead of the current ones."}},
	}
}

type listArgs struct {
	WingArg
	Hall     string `json:"hall"`
	Cursor   string `json:"cursor"`
	Limit    int    `json:"limit"`
	Archived bool   `json:"archived"`
}

type listNote struct {
	ID        string `json:"id"`
	Hall      string `json:"hall"`
	Title     string `json:"title"`
	Path      string `json:"path"`
	UpdatedAt string `json:"updated_at"`
}

type listResult struct {
	Notes      []listNote `json:"notes"`
	NextCursor string     `json:"next_cursor"`
}

// listAnswer is the shape of both of brain_list's answers (listResult,
// and archivedResult with archived:true): its outputSchema.
type listAnswer struct {
	Notes []struct {
		ID         string `json:"id"`
		Hall       string `json:"hall"`
		Title      string `json:"title"`
		Path       string `json:"path"`
		UpdatedAt  string `json:"updated_at,omitempty"`
		ArchivedAt string `json:"archived_at,omitempty"`
		ArchivedBy string `json:"archived_by,omitempty"`
		Reason     string `json:"reason,omitempty"`
	} `json:"notes"`
	NextCursor string `json:"next_cursor"`
}

type archivedNote struct {
	ID         string `json:"id"`
	Hall       string `json:"hall"`
	Title      string `json:"title"`
	Path       string `json:"path"`
	ArchivedAt string `json:"archived_at"`
	ArchivedBy string `json:"archived_by"`
	Reason     string `json:"reason"`
}

type archivedResult struct {
	Notes      []archivedNote `json:"notes"`
	NextCursor string         `json:"next_cursor"`
}

func (s *Set) list(ctx context.Context, _ Caller, a *listArgs) (any, error) {
	if a.Archived {
		notes, next, err := s.st.Archived(ctx, a.Hall, a.Cursor, a.Limit)
		if err != nil {
			return nil, err
		}
		res := archivedResult{Notes: make([]archivedNote, len(notes)), NextCursor: next}
		for i, n := range notes {
			res.Notes[i] = archivedNote{ID: n.ID, Hall: n.Hall, Title: n.Title, Path: n.Path, ArchivedAt: n.Removal.At.UTC().Format(time.RFC3339),
				ArchivedBy: n.Removal.Author, Reason: n.Removal.Reason}
		}
		return res, nil
	}
	entries, next, err := s.st.List(a.Hall, a.Cursor, a.Limit)
	if err != nil {
		return nil, err
	}
	res := listResult{Notes: make([]listNote, len(entries)), NextCursor: next}
	for i, e := range entries {
		res.Notes[i] = listNote{ID: e.ID, Hall: e.Hall, Title: e.Title, Path: e.Path, UpdatedAt: e.UpdatedAt}
	}
	return res, nil
}

// ---- brain_links

func (s *Set) linksSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_links", Title: "Links of a note", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: linksResult{},
		Description: "Show how a note connects to others through [[wing/hall/slug]] wikilinks. Returns {id, outbound, " +
			"backlinks, tunnels}: outbound = every note it links to, backlinks = notes of the same wing linking to it, " +
			"tunnels = its outbound links into other wings. Follow them with brain_get. With wing naming another " +
			"wing than the id's, backlinks = the notes of that wing linking to the id (the tunnels into it), and " +
			"outbound and tunnels are empty.",
		// wing routes first: {wing, id} of a note elsewhere asks that wing.
		Args: []toolspec.Arg{wingArg(), idArg("a note id wing/hall/slug")},
	}
}

type linksArgs struct {
	ID string `json:"id"`
	WingArg
}

type linksResult struct {
	ID        string   `json:"id"`
	Outbound  []string `json:"outbound"`
	Backlinks []string `json:"backlinks"`
	Tunnels   []string `json:"tunnels"`
}

func (s *Set) links(_ context.Context, _ Caller, a *linksArgs) (any, error) {
	if w, _ := brain.RefWing(a.ID); a.Wing != "" && w != a.Wing { // the links into a note of another wing
		from, err := s.st.LinkersOf(a.ID)
		if err != nil {
			return nil, err
		}
		id, _ := brain.ParseID(a.ID)
		return linksResult{ID: id.String(), Outbound: []string{}, Backlinks: from, Tunnels: []string{}}, nil
	}
	l, err := s.st.Links(a.ID)
	if err != nil {
		return nil, hint(err, store.ErrNotFound, "brain_query or brain_list find existing ids")
	}
	return linksResult{ID: l.ID, Outbound: l.Outbound, Backlinks: l.Backlinks, Tunnels: l.Tunnels}, nil
}

// ---- brain_pending

func (s *Set) pendingSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_pending", Title: "Inbox of the wing", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: pendingResult{},
		Description: "List the notes waiting in the wing's inbox for a curator, oldest first. Returns {pending:[{name, filename, path, " +
			"title, hall, created_by, created_at, excerpt}]} (filename is the file's name, name.md; hall is the author's suggestion, " +
			"excerpt the first 200 characters of the body); [] when the inbox is empty. Curators promote them with brain_promote.",
		Args:   []toolspec.Arg{wingArg(), limitArg(PendingDefaultLimit, PendingMaxLimit)},
		Legacy: pendingLegacy(),
	}
}

type pendingArgs struct {
	WingArg
	Limit int `json:"limit"`
}

type pendingNote struct {
	Name      string `json:"name"`
	Filename  string `json:"filename"` // the predecessor's name for the note: the file's
	Path      string `json:"path"`
	Title     string `json:"title"`
	Hall      string `json:"hall"`
	CreatedBy string `json:"created_by"`
	CreatedAt string `json:"created_at"`
	Excerpt   string `json:"excerpt"`
	// Flags are the injection audit's findings (rule and why), omitted
	// when there are none: a curator reads such a note before promoting it.
	Flags []injection.Flag `json:"flags,omitempty"`
}

type pendingResult struct {
	Pending []pendingNote `json:"pending"`
}

func (s *Set) pending(ctx context.Context, _ Caller, a *pendingArgs) (any, error) {
	ps, err := s.st.Pending(ctx, a.Limit)
	if err != nil {
		return nil, err
	}
	res := pendingResult{Pending: make([]pendingNote, len(ps))}
	for i, p := range ps {
		res.Pending[i] = pendingNote{Name: p.Name, Filename: p.Name + brain.NoteExt, Path: p.Path, Title: p.Title, Hall: p.Hall, CreatedBy: p.CreatedBy, CreatedAt: p.CreatedAt, Excerpt: p.Excerpt, Flags: injection.Flags(p.Flags)}
	}
	return res, nil
}

// ---- brain_write

func (s *Set) writeSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_write", Title: "Write a new note", Needs: brain.CapWrite, Result: writeResult{},
		Description: "Create a new note, recording you as its author. Write to the inbox (inbox: true) when a curator should " +
			"review it, or straight into the wiki under a hall. Link related notes with [[wing/hall/slug]]. Never " +
			"overwrites: if the slug is taken you get already_exists (change an existing note with brain_update). " +
			"Returns {id, path, content_hash} (id is \"\" for an inbox note).",
		Args: []toolspec.Arg{
			s.titleArg(true, fmt.Sprintf("One-line title (at most %d bytes).", s.lim.MaxTitleBytes)),
			s.bodyArg(fmt.Sprintf("Markdown body (at most %d bytes).", s.lim.MaxBodyBytes)),
			hallArg("Hall of the note: required for the wiki, a suggestion for the curator in the inbox.", false),
			{Name: "slug", Type: toolspec.String, Check: slugCheck, Desc: "File name without .md: lowercase letters, digits and single hyphens, at most 96 bytes. Default: made from the title."},
			s.tagsArg(fmt.Sprintf("Tags (each at most %d bytes).", s.lim.MaxTagBytes)),
			{Name: "inbox", Type: toolspec.Boolean, Default: false, Desc: "Write to the inbox for review instead of the wiki."},
			wingArg(),
			s.keyArg(),
		},
		Legacy: s.writeLegacy(),
	}
}

type writeArgs struct {
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Hall  string   `json:"hall"`
	Slug  string   `json:"slug"`
	Tags  []string `json:"tags"`
	Inbox bool     `json:"inbox"`
	WingArg
	KeyArg
	legacyMark
	extra    []store.Field // the predecessor's frontmatter keys
	autoName bool          // Slug is the predecessor's automatic name: take the first free one
}

type writeResult struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	ContentHash string `json:"content_hash"`
	// Flags are the injection audit's findings on the note written,
	// omitted when there are none.
	Flags []injection.Flag `json:"flags,omitempty"`
}

func writeResultOf(n *store.Note) writeResult {
	return writeResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash, Flags: injection.Flags(n.Flags)}
}

func writeIntent(in store.Intent) any { return writeResultOf(in.Note) }

// checkPlacement is what the spec cannot say of a note to create: a wiki
// note needs a hall, and a title without letters or digits needs a slug.
func checkPlacement(prefix, title, hall, slug string, inbox bool) error {
	if hall == "" && !inbox {
		return invalid("%shall is required: one of %s", prefix, brain.HallList)
	}
	if slug == "" && layout.Slugify(title) == "" {
		return invalid("%stitle %q has no letters or digits to make a slug from: pass a slug", prefix, title)
	}
	return nil
}

func (s *Set) write(ctx context.Context, c Caller, a *writeArgs) (any, error) {
	if err := checkPlacement("", a.Title, a.Hall, a.Slug, a.Inbox); err != nil {
		return nil, err
	}
	return s.keyed(ctx, c, "brain_write", &a.KeyArg, &a.WingArg, a.fingerprinted(a), func(k *keyCall) (any, error) {
		note := store.NewNote{Title: a.Title, Body: a.Body, Hall: a.Hall, Slug: a.Slug, Tags: a.Tags, Inbox: a.Inbox, By: c.Email, Extra: a.extra}
		if a.autoName {
			note.Slug = s.freeAutoName(note)
		}
		note.Hook, note.Prov = k.hook(idempotency.Whole, writeIntent), k.prov("brain_write", "")
		n, err := s.st.Create(ctx, note)
		if err != nil {
			return nil, hint(err, store.ErrExists, "brain_update changes an existing note")
		}
		return writeResultOf(n), nil
	})
}

// ---- brain_update

func (s *Set) updateSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_update", Title: "Supersede a note's body", Needs: brain.CapWrite, Destructive: true, Result: updateResult{},
		Description: "Replace the body (and optionally the title) of an existing curated note, recording who, when, why " +
			"(reason) and the content hash it supersedes; every other frontmatter field is kept. Never creates a note " +
			"(not_found). Pass the content_hash you read as expected_hash: if the note changed since, you get conflict " +
			"with the current hash and nothing is written. Returns {id, path, content_hash}.",
		Args: []toolspec.Arg{idArg("the note id wing/hall/slug (brain_write creates new notes)"),
			s.bodyArg(fmt.Sprintf("The complete new markdown body (at most %d bytes).", s.lim.MaxBodyBytes)),
			s.reasonArg("Why the note changes, recorded as supersede_reason"),
			expectedHashArg("the update fails with conflict if the note changed."), s.titleArg(false, "New title; omit to keep it."),
			wingArg(), s.keyArg()},
		Legacy: s.updateLegacy(),
	}
}

func (s *Set) reasonArg(why string) toolspec.Arg {
	return toolspec.Arg{Name: "reason", Type: toolspec.String, Required: true, Min: toolspec.Int(1), MaxBytes: s.lim.MaxReasonBytes, Line: true,
		Desc: fmt.Sprintf("%s (one line, at most %d bytes).", why, s.lim.MaxReasonBytes)}
}

func expectedHashArg(effect string) toolspec.Arg {
	return toolspec.Arg{Name: "expected_hash", Type: toolspec.String, Check: checkHash,
		Desc: "The content_hash the change is based on (64 hex digits); " + effect}
}

func checkHash(name, h string) error {
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return invalid("%s must be a content_hash: 64 lowercase hex digits, as brain_get returns it", name)
	}
	return nil
}

type updateArgs struct {
	ID           string `json:"id"`
	Body         string `json:"body"`
	Reason       string `json:"reason"`
	ExpectedHash string `json:"expected_hash"`
	Title        string `json:"title"`
	WingArg
	KeyArg
	legacyMark
}

// updateResult is brain_update's answer; a legacy call's adds superseded,
// the content hash it superseded (the predecessor's field).
type updateResult struct {
	writeResult
	Superseded string `json:"superseded,omitempty"`
}

func (s *Set) update(ctx context.Context, c Caller, a *updateArgs) (any, error) {
	intent := writeIntent
	if a.legacy() {
		intent = func(in store.Intent) any {
			return updateResult{writeResultOf(in.Note), in.Note.Get(store.KeySupersedes)}
		}
	}
	return s.keyed(ctx, c, "brain_update", &a.KeyArg, &a.WingArg, a.fingerprinted(a), func(k *keyCall) (any, error) {
		n, err := s.st.Update(ctx, store.Change{ID: a.ID, Body: a.Body, Reason: a.Reason, ExpectedHash: a.ExpectedHash, Title: a.Title, By: c.Email,
			Hook: k.hook(idempotency.Whole, intent), Prov: k.prov("brain_update", a.Reason)})
		if err != nil {
			return nil, hint(err, store.ErrNotFound, "brain_update never creates a note: brain_write does")
		}
		return intent(store.Intent{Note: n}), nil
	})
}

// ---- brain_ingest_raw

func (s *Set) ingestSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_ingest_raw", Title: "Import pages", Needs: brain.CapWrite, Result: ingestAnswer{},
		Description: fmt.Sprintf("Import up to %d pre-structured pages into the wiki in one call, e.g. a document split into notes. "+
			"Every page is validated before any is written; each is reported as created, exists (never overwritten), "+
			"invalid (with error; skipped) or failed (with error: not written, e.g. the disk or the call's time ran out). "+
			"Exactly the pages reported created were written. With an idempotency_key, calling again with the same "+
			"arguments and key writes only the pages not written yet (pages written by the first call stay created) "+
			"and, once none failed, answers the same report every time. dry_run reports what would happen and writes "+
			"nothing. Returns {dry_run, created, exists, invalid, failed, pages:[{id, path, status, content_hash?, error?}]}.", s.lim.MaxPages),
		Args: []toolspec.Arg{
			{Name: "pages", Type: toolspec.Array, Required: true, Min: toolspec.Int(1), Max: toolspec.Int(s.lim.MaxPages), Reported: true,
				Missing: "at least one page {hall, title, body}", TooLarge: "split the import", Desc: "The pages to write.",
				Items: &toolspec.Arg{Type: toolspec.Object, Desc: "A page.", Props: []toolspec.Arg{
					hallArg("Hall of the page.", true),
					{Name: "slug", Type: toolspec.String, Check: slugCheck, Desc: "File name without .md; default: made from the title."},
					s.titleArg(true, "One-line title."),
					s.bodyArg("Markdown body."),
					s.tagsArg("Tags."),
				}}},
			{Name: "dry_run", Type: toolspec.Boolean, Default: false, Desc: "Validate and report without writing anything."},
			wingArg(),
			s.keyArg(),
		},
		Legacy: s.ingestLegacy(),
	}
}

type ingestPage struct {
	Hall  string        `json:"hall"`
	Slug  string        `json:"slug"`
	Title string        `json:"title"`
	Body  string        `json:"body"`
	Tags  []string      `json:"tags"`
	extra []store.Field // the predecessor's frontmatter keys
}

type ingestArgs struct {
	Pages  []ingestPage `json:"pages"`
	DryRun bool         `json:"dry_run"`
	WingArg
	KeyArg
	legacyMark
}

// Page statuses of brain_ingest_raw.
const (
	StatusCreated = "created"
	StatusExists  = "exists"
	StatusInvalid = "invalid"
	StatusFailed  = "failed"
)

type ingestPageResult struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Status      string `json:"status"`
	ContentHash string `json:"content_hash,omitempty"`
	Error       string `json:"error,omitempty"`
}

type ingestResult struct {
	DryRun  bool               `json:"dry_run"`
	Created int                `json:"created"`
	Exists  int                `json:"exists"`
	Invalid int                `json:"invalid"`
	Failed  int                `json:"failed"`
	Pages   []ingestPageResult `json:"pages"`
}

// incomplete: some pages were not written; the report is not the key's
// final answer, so a retry with the key writes them.
func (r ingestResult) incomplete() bool { return r.Failed > 0 }

func (s *Set) ingest(ctx context.Context, c Caller, a *ingestArgs) (any, error) {
	return s.keyed(ctx, c, "brain_ingest_raw", &a.KeyArg, &a.WingArg, a.fingerprinted(a), func(k *keyCall) (any, error) {
		res, err := s.ingestPages(ctx, c, *a, k)
		if a.legacy() {
			return legacyIngestAnswer(res), err
		}
		return res, err
	})
}

// ingestPages validates every page, then writes the ones to create, one
// change (and, with a key, one intent) per page. A page whose write fails
// is reported failed and the others are still attempted, so the report
// says exactly which pages are on disk. Pages committed under the key by
// an earlier call are reported created as they were then.
func (s *Set) ingestPages(ctx context.Context, c Caller, a ingestArgs, k *keyCall) (ingestResult, error) {
	res := ingestResult{DryRun: a.DryRun, Pages: make([]ingestPageResult, len(a.Pages))}
	notes, done, err := s.planPages(ctx, c, a, k, &res)
	if err != nil {
		return res, err
	}
	s.writePages(ctx, a, k, &res, notes, done)
	counts := map[string]*int{StatusCreated: &res.Created, StatusExists: &res.Exists, StatusInvalid: &res.Invalid, StatusFailed: &res.Failed}
	for _, pr := range res.Pages {
		if n, ok := counts[pr.Status]; ok {
			*n++
		}
	}
	return res, nil
}

// planPages is ingestPages' first pass: it validates every page and plans
// its note, writing nothing, and fills res.Pages; done marks the pages an
// earlier call with the key wrote.
func (s *Set) planPages(ctx context.Context, c Caller, a ingestArgs, k *keyCall, res *ingestResult) (notes []store.NewNote, done []bool, err error) {
	notes = make([]store.NewNote, len(a.Pages))
	done = make([]bool, len(a.Pages)) // written by an earlier call with the key
	firstOf := map[string]int{}
	for i, p := range a.Pages {
		pr := &res.Pages[i]
		if b, ok := k.committed(i); ok && !a.DryRun {
			if err := json.Unmarshal(b, pr); err == nil {
				done[i] = true
				firstOf[pr.ID] = i
				continue
			}
		}
		err := s.byName["brain_ingest_raw"].Spec.CheckItem("pages", i, &a.Pages[i])
		if err == nil {
			err = checkPlacement(fmt.Sprintf("pages[%d].", i), p.Title, p.Hall, p.Slug, false)
		}
		if err != nil {
			_, msg := s.classify("brain_ingest_raw", err)
			pr.Status, pr.Error = StatusInvalid, msg
			continue
		}
		notes[i] = store.NewNote{Title: p.Title, Body: p.Body, Hall: p.Hall, Slug: p.Slug, Tags: p.Tags, Extra: p.extra, By: c.Email,
			Prov: k.prov("brain_ingest_raw", "")}
		t, err := s.st.Plan(notes[i])
		switch {
		case errors.Is(err, store.ErrExists):
			pr.ID, pr.Path, pr.Status = t.ID, t.Path, StatusExists
			if n, gerr := s.st.Get(ctx, t.ID); gerr == nil {
				pr.ContentHash = n.Hash
			}
		case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrTooLarge):
			_, msg := s.classify("brain_ingest_raw", err)
			pr.Status, pr.Error = StatusInvalid, fmt.Sprintf("pages[%d]: %s", i, msg)
		case err != nil:
			return nil, nil, err
		default:
			pr.ID, pr.Path, pr.Status = t.ID, t.Path, StatusCreated
			if j, dup := firstOf[t.ID]; dup {
				pr.Status, pr.Error = StatusInvalid, fmt.Sprintf("pages[%d]: %s is also pages[%d]: give one of them another slug", i, t.ID, j)
			} else {
				firstOf[t.ID] = i
			}
		}
	}
	return notes, done, nil
}

// writePages is ingestPages' second pass: it writes the pages that would
// be created, each under its part of the idempotency key.
func (s *Set) writePages(ctx context.Context, a ingestArgs, k *keyCall, res *ingestResult, notes []store.NewNote, done []bool) {
	for i := range res.Pages {
		pr := &res.Pages[i]
		if pr.Status != StatusCreated || a.DryRun || done[i] {
			continue
		}
		notes[i].Hook = k.hook(i, func(in store.Intent) any {
			return ingestPageResult{ID: in.Note.ID, Path: in.Note.Path, Status: StatusCreated, ContentHash: in.Note.Hash}
		})
		n, err := s.st.Create(ctx, notes[i])
		v, landed, err := k.settle(i, err)
		switch {
		case landed && v != nil:
			*pr = v.(ingestPageResult)
		case landed:
			pr.ContentHash = n.Hash
		case errors.Is(err, store.ErrExists): // created by someone else meanwhile
			pr.Status = StatusExists
			if n, gerr := s.st.Get(ctx, pr.ID); gerr == nil {
				pr.ContentHash = n.Hash
			}
		default:
			_, msg := s.classify("brain_ingest_raw", err)
			pr.Status, pr.Error = StatusFailed, fmt.Sprintf("pages[%d] was not written: %s", i, msg)
		}
	}
}

// ---- session_log

func (s *Set) sessionLogSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "session_log", Title: "Log to a session", Needs: brain.CapWrite, Result: sessionResult{},
		Description: "Append one JSON object to the wing's append-only log of a work session (sessions/<wing>/<session>.jsonl), " +
			"stamped with the time and your email: use it to keep a trail of what you did and found. Returns " +
			"{session, path, line} where line is the entry's line number in the log.",
		Args: []toolspec.Arg{
			sessionArg(),
			{Name: "entry", Type: toolspec.Object, Required: true, Missing: `a JSON object, e.g. {"did":"..."}`,
				Desc: fmt.Sprintf("Any JSON object (at most %d bytes as compact JSON).", s.lim.MaxEntryBytes)},
			wingArg(),
			s.keyArg(),
		},
		Legacy: s.sessionLogLegacy(),
	}
}

func sessionArg() toolspec.Arg {
	return toolspec.Arg{Name: "session", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Missing: "an id for your work session, e.g. 2026-11-30-fix-login",
		Check: func(_, v string) error { return brain.ValidSession(v) },
		Desc:  "Session id: letters, digits, '.', '_' and '-', at most 128 bytes, not starting with '.'."}
}

type sessionArgs struct {
	Session string          `json:"session"`
	Entry   json.RawMessage `json:"entry"`
	WingArg
	KeyArg
}

type sessionResult struct {
	Session string `json:"session"`
	Path    string `json:"path"`
	Line    int    `json:"line"`
}

func (s *Set) sessionLog(ctx context.Context, c Caller, a *sessionArgs) (any, error) {
	entry := bytes.TrimSpace(a.Entry)
	var compact bytes.Buffer
	if err := json.Compact(&compact, entry); err == nil && compact.Len() > s.lim.MaxEntryBytes {
		return nil, tooLarge("entry is %d bytes, over the %d-byte limit", compact.Len(), s.lim.MaxEntryBytes)
	}
	fp := sessionArgs{Session: a.Session, Entry: entry} // wing and key are not part of what the call does
	if a.IdempotencyKey != "" || c.IdempotencyKey != "" {
		canon, err := canonicalJSON(entry)
		if err != nil {
			return nil, invalid("entry is not valid JSON: %v", err)
		}
		fp.Entry = canon
	}
	return s.keyed(ctx, c, "session_log", &a.KeyArg, &a.WingArg, fp, func(k *keyCall) (any, error) {
		path, line, err := s.st.AppendSession(ctx, a.Session, c.Email, entry, k.hook(idempotency.Whole, func(in store.Intent) any {
			return sessionResult{Session: a.Session, Path: in.Mark.Path, Line: in.Line}
		}))
		if err != nil {
			return nil, err
		}
		return sessionResult{Session: a.Session, Path: path, Line: line}, nil
	})
}

// ---- brain_promote

func (s *Set) promoteSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_promote", Title: "Promote an inbox note", Needs: brain.CapCurate, Destructive: true, Result: promoteResult{},
		Description: "Curators only: move a reviewed inbox note into the wiki as wiki/<wing>/<hall>/<slug>.md, recording you " +
			"as promoter. If the slug is taken you get already_exists and the inbox note is left untouched (choose " +
			"another slug). Returns {id, path, content_hash, tunnels} where tunnels are its links into other wings.",
		Args: []toolspec.Arg{
			{Name: "name", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Missing: "the inbox name brain_pending lists",
				Check: func(_, v string) error { return brain.ValidInboxName(v) }, Desc: "Inbox name, as brain_pending lists it."},
			hallArg(descHall, true),
			{Name: "slug", Type: toolspec.String, Check: slugCheck, Desc: "Slug of the wiki note; default: the inbox name."},
			s.titleArg(false, "New title of the wiki note; omit to keep the inbox note's."),
			{Name: "acknowledge_flags", Type: toolspec.Boolean, Default: false, Desc: "Promote the note although the injection audit flags it " +
				"(brain_pending and brain_get show its flags and why); without it a flagged note is refused with conflict and stays in the inbox."},
			wingArg(),
			s.keyArg(),
		},
		Legacy: s.promoteLegacy(),
	}
}

type promoteArgs struct {
	Name  string `json:"name"`
	Hall  string `json:"hall"`
	Slug  string `json:"slug"`
	Title string `json:"title"`
	WingArg
	KeyArg
	AcknowledgeFlags bool `json:"acknowledge_flags"`
}

type promoteResult struct {
	ID          string   `json:"id"`
	Path        string   `json:"path"`
	ContentHash string   `json:"content_hash"`
	Tunnels     []string `json:"tunnels"`
}

func (s *Set) promote(ctx context.Context, c Caller, a *promoteArgs) (any, error) {
	return s.keyed(ctx, c, "brain_promote", &a.KeyArg, &a.WingArg, a, func(k *keyCall) (any, error) {
		n, tunnels, err := s.st.Promote(ctx, store.Promotion{Name: a.Name, Hall: a.Hall, Slug: a.Slug, Title: a.Title, By: c.Email, AcknowledgeFlags: a.AcknowledgeFlags,
			Hook: k.hook(idempotency.Whole, func(in store.Intent) any {
				return promoteResult{ID: in.Note.ID, Path: in.Note.Path, ContentHash: in.Note.Hash, Tunnels: in.Tunnels}
			}), Prov: k.prov("brain_promote", "")})
		if err != nil {
			err = hint(err, store.ErrFlagged, "brain_get with the inbox path shows the note in full")
			return nil, hint(err, store.ErrNotFound, "brain_pending lists the inbox")
		}
		return promoteResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash, Tunnels: tunnels}, nil
	})
}

// ---- session_list

func (s *Set) sessionListSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "session_list", Title: "Session logs of the wing", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: sessionListResult{},
		Description: "List the wing's session logs (what agents logged with session_log), most recently written first, a page " +
			"at a time. Returns {sessions:[{session, path, size, updated_at, last_by}], next_cursor} (updated_at and last_by " +
			"are the time and author of the log's last entry; next_cursor is \"\" on the last page). Read one with session_read.",
		Args: []toolspec.Arg{
			wingArg(),
			{Name: "cursor", Type: toolspec.String, Desc: "The next_cursor of the previous page; omit for the first page."},
			{Name: "limit", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(SessionListMaxLimit), Default: SessionListDefaultLimit, Desc: "Maximum number of logs."},
		},
	}
}

type sessionListArgs struct {
	WingArg
	Cursor string `json:"cursor"`
	Limit  int    `json:"limit"`
}

type sessionInfo struct {
	Session   string `json:"session"`
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	UpdatedAt string `json:"updated_at"`
	LastBy    string `json:"last_by"`
}

type sessionListResult struct {
	Sessions   []sessionInfo `json:"sessions"`
	NextCursor string        `json:"next_cursor"`
}

func (s *Set) sessionList(ctx context.Context, _ Caller, a *sessionListArgs) (any, error) {
	logs, next, err := s.st.ListSessions(ctx, a.Cursor, a.Limit)
	if err != nil {
		return nil, err
	}
	res := sessionListResult{Sessions: make([]sessionInfo, len(logs)), NextCursor: next}
	for i, l := range logs {
		res.Sessions[i] = sessionInfo{Session: l.Session, Path: l.Path, Size: l.Size, UpdatedAt: l.UpdatedAt, LastBy: l.LastBy}
	}
	return res, nil
}

// ---- session_read

func (s *Set) sessionReadSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "session_read", Title: "Read a session log", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: sessionReadResult{},
		Description: "Read the entries of one session log in order, a page at a time. Returns {session, path, entries:[{line, " +
			"at, by, entry}], total, next_offset}: total is the log's number of lines, next_offset the offset of the next " +
			"page (-1 after the last). A line that is not a session entry (edited by hand, cut short by a crash) comes " +
			"with entry null, so line numbers are the file's.",
		Args: []toolspec.Arg{
			{Name: "session", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Missing: "the session id, as session_list lists it",
				Check: func(_, v string) error { return brain.ValidSession(v) }, Desc: "Session id, as session_list lists it."},
			wingArg(),
			{Name: "offset", Type: toolspec.Integer, Min: toolspec.Int(0), Max: toolspec.Int(math.MaxInt32), Default: 0, Desc: "Lines to skip: 0 for the first page, else the previous page's next_offset."},
			{Name: "limit", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(SessionReadMaxLimit), Default: SessionReadDefaultLimit, Desc: "Maximum number of entries."},
		},
		Legacy: s.sessionReadLegacy(),
	}
}

type sessionReadArgs struct {
	Session string `json:"session"`
	WingArg
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	legacyMark
}

type sessionEntry struct {
	Line  int             `json:"line"`
	At    string          `json:"at"`
	By    string          `json:"by"`
	Entry json.RawMessage `json:"entry"`
}

type sessionReadResult struct {
	Session    string         `json:"session"`
	Path       string         `json:"path"`
	Entries    []sessionEntry `json:"entries"`
	Total      int            `json:"total"`
	NextOffset int            `json:"next_offset"`
}

func (s *Set) sessionRead(ctx context.Context, _ Caller, a *sessionReadArgs) (any, error) {
	entries, total, err := s.st.ReadSession(ctx, a.Session, a.Offset, a.Limit)
	if a.legacy() && errors.Is(err, store.ErrNotFound) {
		entries, total, err = nil, 0, nil // the predecessor read a log that does not exist as []
	}
	if err != nil {
		return nil, hint(err, store.ErrNotFound, "session_list lists the wing's logs")
	}
	res := sessionReadResult{Session: a.Session, Path: brain.SessionPath(s.Wing(), a.Session), Entries: make([]sessionEntry, len(entries)), Total: total, NextOffset: -1}
	for i, e := range entries {
		entry := e.Entry
		if entry == nil {
			entry = json.RawMessage("null")
		}
		res.Entries[i] = sessionEntry{Line: e.Line, At: e.At, By: e.By, Entry: entry}
	}
	if next := a.Offset + len(entries); next < total {
		res.NextOffset = next
	}
	return res, nil
}
