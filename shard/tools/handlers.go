package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/layout"
	"github.com/brainstem/brainstem/shard/store"
)

// Argument descriptions shared by several tools.
const (
	descWing = "The wing to act on. Optional: this shard serves exactly one wing, and a different value is an error. Through the gateway it picks the shard."
	descHall = "One of facts, decisions, failures, hypotheses, sources."
)

func (s *Set) wingProp() prop { return prop{name: "wing", typ: "string", desc: descWing} }

// define lists the tools in their fixed descriptor order.
func (s *Set) define() []*spec {
	l := s.lim
	halls := brain.Halls()
	return []*spec{
		{
			name: brain.QueryTool, title: "Search the brain", needs: brain.CapRead, readOnly: true, idempotent: true,
			desc: "Full-text (BM25) search over the curated notes of the team brain. Use it first whenever you need " +
				"what the team already knows, decided or learned (facts, decisions, failures, hypotheses, sources) before " +
				"answering or writing. Returns {hits:[{id, wing, hall, title, score, snippet, path, content_hash}], total}, " +
				"best first; total is the number of notes that match (in every wing searched), however many hits are returned. " +
				"Fetch a hit's full text with brain_get. Without wing, the gateway searches every wing you can read.",
			props: []prop{
				{name: "query", typ: "string", required: true, min: ip(1), desc: fmt.Sprintf("Words to search for (at most %d bytes and %d searchable words; case and common English stop words are ignored).", l.MaxQueryBytes, l.MaxQueryTerms)},
				s.wingProp(),
				{name: "hall", typ: "string", enum: halls, desc: "Only search notes of this hall."},
				{name: "limit", typ: "integer", min: ip(1), max: ip(brain.QueryMaxLimit), def: brain.QueryDefaultLimit, desc: "Maximum number of hits."},
			},
			run: s.query,
		},
		{
			name: "brain_get", title: "Read a note", needs: brain.CapRead, readOnly: true, idempotent: true,
			desc: "Read one note in full: a curated note by id (wing/hall/slug) or path (wiki/wing/hall/slug.md), or an " +
				"inbox note by path (inbox/wing/name.md). Returns {id, path, content_hash, frontmatter, body}; frontmatter " +
				"keeps the file's key order, values are strings or arrays of strings. Pass content_hash as expected_hash " +
				"to brain_update to avoid overwriting someone else's change.",
			props: []prop{
				{name: "id", typ: "string", desc: "Note id wing/hall/slug (or its wiki path). Give id or path, not both."},
				{name: "path", typ: "string", desc: "Brain-relative path: wiki/wing/hall/slug.md or inbox/wing/name.md."},
				s.wingProp(),
			},
			run: s.get,
		},
		{
			name: "brain_list", title: "List notes", needs: brain.CapRead, readOnly: true, idempotent: true,
			desc: "List the curated notes of the wing, ordered by id, optionally of one hall, a page at a time. Returns " +
				"{notes:[{id, hall, title, path, updated_at}], next_cursor}; pass next_cursor back as cursor for the next " +
				"page (it is \"\" on the last page). Use brain_query to find notes by content.",
			props: []prop{
				s.wingProp(),
				{name: "hall", typ: "string", enum: halls, desc: "Only list notes of this hall."},
				{name: "cursor", typ: "string", desc: "The next_cursor of the previous page; omit for the first page."},
				{name: "limit", typ: "integer", min: ip(1), max: ip(ListMaxLimit), def: ListDefaultLimit, desc: "Maximum number of notes."},
			},
			run: s.list,
		},
		{
			name: "brain_links", title: "Links of a note", needs: brain.CapRead, readOnly: true, idempotent: true,
			desc: "Show how a note connects to others through [[wing/hall/slug]] wikilinks. Returns {id, outbound, " +
				"backlinks, tunnels}: outbound = every note it links to, backlinks = notes of the same wing linking to it, " +
				"tunnels = its outbound links into other wings. Follow them with brain_get.",
			props: []prop{
				{name: "id", typ: "string", required: true, min: ip(1), desc: "Note id wing/hall/slug."},
				s.wingProp(),
			},
			run: s.links,
		},
		{
			name: "brain_pending", title: "Inbox of the wing", needs: brain.CapRead, readOnly: true, idempotent: true,
			desc: "List the notes waiting in the wing's inbox for a curator, oldest first. Returns {pending:[{name, path, " +
				"title, hall, created_by, created_at, excerpt}]} (hall is the author's suggestion, excerpt the first 200 " +
				"characters of the body); [] when the inbox is empty. Curators promote them with brain_promote.",
			props: []prop{
				s.wingProp(),
				{name: "limit", typ: "integer", min: ip(1), max: ip(PendingMaxLimit), def: PendingDefaultLimit, desc: "Maximum number of notes."},
			},
			run: s.pending,
		},
		{
			name: "brain_write", title: "Write a new note", needs: brain.CapWrite,
			desc: "Create a new note, recording you as its author. Write to the inbox (inbox: true) when a curator should " +
				"review it, or straight into the wiki under a hall. Link related notes with [[wing/hall/slug]]. Never " +
				"overwrites: if the slug is taken you get already_exists (change an existing note with brain_update). " +
				"Returns {id, path, content_hash} (id is \"\" for an inbox note).",
			props: []prop{
				{name: "title", typ: "string", required: true, min: ip(1), desc: fmt.Sprintf("One-line title (at most %d bytes).", l.MaxTitleBytes)},
				{name: "body", typ: "string", required: true, min: ip(1), desc: fmt.Sprintf("Markdown body (at most %d bytes).", l.MaxBodyBytes)},
				{name: "hall", typ: "string", enum: halls, desc: "Hall of the note: required for the wiki, a suggestion for the curator in the inbox."},
				{name: "slug", typ: "string", desc: "File name without .md: lowercase letters, digits and single hyphens, at most 96 bytes. Default: made from the title."},
				{name: "tags", typ: "array", max: ip(l.MaxTags), items: &prop{typ: "string"}, desc: fmt.Sprintf("Tags (each at most %d bytes).", l.MaxTagBytes)},
				{name: "inbox", typ: "boolean", def: false, desc: "Write to the inbox for review instead of the wiki."},
				s.wingProp(),
				s.keyProp(),
			},
			run: s.write,
		},
		{
			name: "brain_update", title: "Supersede a note's body", needs: brain.CapWrite, destructive: true,
			desc: "Replace the body (and optionally the title) of an existing curated note, recording who, when, why " +
				"(reason) and the content hash it supersedes; every other frontmatter field is kept. Never creates a note " +
				"(not_found). Pass the content_hash you read as expected_hash: if the note changed since, you get conflict " +
				"with the current hash and nothing is written. Returns {id, path, content_hash}.",
			props: []prop{
				{name: "id", typ: "string", required: true, min: ip(1), desc: "Note id wing/hall/slug."},
				{name: "body", typ: "string", required: true, min: ip(1), desc: fmt.Sprintf("The complete new markdown body (at most %d bytes).", l.MaxBodyBytes)},
				{name: "reason", typ: "string", required: true, min: ip(1), desc: fmt.Sprintf("Why the note changes, recorded as supersede_reason (one line, at most %d bytes).", l.MaxReasonBytes)},
				{name: "expected_hash", typ: "string", desc: "The content_hash the change is based on (64 hex digits); the update fails with conflict if the note changed."},
				{name: "title", typ: "string", desc: "New title; omit to keep it."},
				s.wingProp(),
				s.keyProp(),
			},
			run: s.update,
		},
		{
			name: "brain_ingest_raw", title: "Import pages", needs: brain.CapWrite,
			desc: fmt.Sprintf("Import up to %d pre-structured pages into the wiki in one call, e.g. a document split into notes. "+
				"Every page is validated before any is written; each is reported as created, exists (never overwritten), "+
				"invalid (with error; skipped) or failed (with error: not written, e.g. the disk or the call's time ran out). "+
				"Exactly the pages reported created were written. With an idempotency_key, calling again with the same "+
				"arguments and key writes only the pages not written yet (pages written by the first call stay created) "+
				"and, once none failed, answers the same report every time. dry_run reports what would happen and writes "+
				"nothing. Returns {dry_run, created, exists, invalid, failed, pages:[{id, path, status, content_hash?, error?}]}.", l.MaxPages),
			props: []prop{
				{name: "pages", typ: "array", required: true, min: ip(1), max: ip(l.MaxPages), desc: "The pages to write.",
					items: &prop{typ: "object", desc: "A page.", props: []prop{
						{name: "hall", typ: "string", required: true, enum: halls, desc: "Hall of the page."},
						{name: "slug", typ: "string", desc: "File name without .md; default: made from the title."},
						{name: "title", typ: "string", required: true, min: ip(1), desc: "One-line title."},
						{name: "body", typ: "string", required: true, min: ip(1), desc: "Markdown body."},
						{name: "tags", typ: "array", items: &prop{typ: "string"}, desc: "Tags."},
					}}},
				{name: "dry_run", typ: "boolean", def: false, desc: "Validate and report without writing anything."},
				s.wingProp(),
				s.keyProp(),
			},
			run: s.ingest,
		},
		{
			name: "session_log", title: "Log to a session", needs: brain.CapWrite,
			desc: "Append one JSON object to the wing's append-only log of a work session (sessions/<wing>/<session>.jsonl), " +
				"stamped with the time and your email: use it to keep a trail of what you did and found. Returns " +
				"{session, path, line} where line is the entry's line number in the log.",
			props: []prop{
				{name: "session", typ: "string", required: true, min: ip(1), desc: "Session id: letters, digits, '.', '_' and '-', at most 128 bytes, not starting with '.'."},
				{name: "entry", typ: "object", required: true, desc: fmt.Sprintf("Any JSON object (at most %d bytes as compact JSON).", l.MaxEntryBytes)},
				s.wingProp(),
				s.keyProp(),
			},
			run: s.sessionLog,
		},
		{
			name: "brain_promote", title: "Promote an inbox note", needs: brain.CapCurate, destructive: true,
			desc: "Curators only: move a reviewed inbox note into the wiki as wiki/<wing>/<hall>/<slug>.md, recording you " +
				"as promoter. If the slug is taken you get already_exists and the inbox note is left untouched (choose " +
				"another slug). Returns {id, path, content_hash, tunnels} where tunnels are its links into other wings.",
			props: []prop{
				{name: "name", typ: "string", required: true, min: ip(1), desc: "Inbox name, as brain_pending lists it."},
				{name: "hall", typ: "string", required: true, enum: halls, desc: descHall},
				{name: "slug", typ: "string", desc: "Slug of the wiki note; default: the inbox name."},
				s.wingProp(),
				s.keyProp(),
			},
			run: s.promote,
		},
	}
}

// checkWing enforces the optional wing argument.
func (s *Set) checkWing(w string) error {
	if w != "" && w != s.Wing() {
		return invalid("this shard serves wing %q, not %q: omit wing or pass %q", s.Wing(), w, s.Wing())
	}
	return nil
}

// checkLimit validates an optional limit.
func checkLimit(v *int, lo, hi, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, invalid("limit must be between %d and %d, got %d", lo, hi, *v)
	}
	return *v, nil
}

// checkText validates a one-line text argument.
func checkText(what, v string, max int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return invalid("%s is required and must not be blank", what)
	}
	if len(v) > max {
		return tooLarge("%s is %d bytes, over the %d-byte limit", what, len(v), max)
	}
	if !utf8.ValidString(v) {
		return invalid("%s is not valid UTF-8", what)
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return invalid("%s must be one line without control characters (found %q at byte %d)", what, v[i:i+1], i)
	}
	return nil
}

func (s *Set) checkBody(what, v string) error {
	if strings.TrimSpace(v) == "" {
		return invalid("%s is required and must not be blank", what)
	}
	if len(v) > s.lim.MaxBodyBytes {
		return tooLarge("%s is %d bytes, over the %d-byte limit: split it into several notes", what, len(v), s.lim.MaxBodyBytes)
	}
	if !utf8.ValidString(v) {
		return invalid("%s is not valid UTF-8", what)
	}
	return nil
}

func (s *Set) checkTags(what string, tags []string) error {
	if len(tags) > s.lim.MaxTags {
		return tooLarge("%s has %d tags, the limit is %d", what, len(tags), s.lim.MaxTags)
	}
	for i, t := range tags {
		if err := checkText(fmt.Sprintf("%s[%d]", what, i), t, s.lim.MaxTagBytes, true); err != nil {
			return err
		}
	}
	return nil
}

func checkHall(h string, required bool) error {
	if h == "" {
		if required {
			return invalid("hall is required: one of %s", brain.HallList)
		}
		return nil
	}
	return brain.ValidHall(h)
}

func checkSlug(what, v string) error {
	if v == "" {
		return nil
	}
	err := brain.ValidSlug(v)
	if e, ok := brain.As(err); ok && what != "slug" {
		return brain.Wrap(err, e.Code, "%s: %s", what, e.Message)
	}
	return err
}

// ---- brain_query

type queryArgs struct {
	Query string `json:"query"`
	Wing  string `json:"wing"`
	Hall  string `json:"hall"`
	Limit *int   `json:"limit"`
}

// queryOptions validates brain_query's arguments.
func (s *Set) queryOptions(raw []byte, stats *index.Stats) (string, store.SearchOptions, error) {
	var a queryArgs
	if err := decode(raw, &a, s.byName[brain.QueryTool].props); err != nil {
		return "", store.SearchOptions{}, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return "", store.SearchOptions{}, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return "", store.SearchOptions{}, invalid("query is required and must not be blank")
	}
	if len(a.Query) > s.lim.MaxQueryBytes {
		return "", store.SearchOptions{}, tooLarge("query is %d bytes, over the %d-byte limit: use fewer, more specific words", len(a.Query), s.lim.MaxQueryBytes)
	}
	if n := len(index.Tokenize(a.Query)); n > s.lim.MaxQueryTerms {
		return "", store.SearchOptions{}, tooLarge("query has %d searchable words, the limit is %d: use fewer, more specific words", n, s.lim.MaxQueryTerms)
	}
	if err := checkHall(a.Hall, false); err != nil {
		return "", store.SearchOptions{}, err
	}
	limit, err := checkLimit(a.Limit, 1, brain.QueryMaxLimit, brain.QueryDefaultLimit)
	if err != nil {
		return "", store.SearchOptions{}, err
	}
	return a.Query, store.SearchOptions{Hall: a.Hall, Limit: limit, Stats: stats, SnippetRunes: SnippetRunes}, nil
}

func (s *Set) hitsOf(hits []store.Hit) []brain.Hit {
	out := make([]brain.Hit, len(hits))
	for i, h := range hits {
		out[i] = brain.Hit{ID: h.ID, Wing: s.Wing(), Hall: h.Hall, Title: h.Title, Score: h.Score, Snippet: h.Snippet, Path: h.Path, ContentHash: h.Hash}
	}
	return out
}

// query answers brain_query: the best hits, rendered, and total, the
// number of notes of the wing that match (however many are returned).
func (s *Set) query(ctx context.Context, _ Caller, raw []byte, stats *index.Stats) (any, error) {
	q, opt, err := s.queryOptions(raw, stats)
	if err != nil {
		return nil, err
	}
	r, err := s.st.Query(ctx, q, opt)
	if err != nil {
		return nil, err
	}
	return brain.QueryResult{Hits: s.hitsOf(r.Hits), Total: int64(r.Total)}, nil
}

// queryRank answers the rank step of a cross-wing brain_query:
// {"ranked":[{"id","score"}],"total"}, from the index alone.
func (s *Set) queryRank(_ context.Context, raw []byte, stats *index.Stats) (any, error) {
	q, opt, err := s.queryOptions(raw, stats)
	if err != nil {
		return nil, err
	}
	ranked, total, err := s.st.Rank(q, opt)
	if err != nil {
		return nil, err
	}
	res := brain.RankResult{Ranked: make([]brain.HitKey, len(ranked)), Total: int64(total)}
	for i, r := range ranked {
		res.Ranked[i] = brain.HitKey{ID: r.ID, Score: r.Score}
	}
	return res, nil
}

// queryFetch answers the fetch step of a cross-wing brain_query: the hits
// of the given ids, rendered exactly as brain_query renders them,
// {"hits":[...]}.
func (s *Set) queryFetch(ctx context.Context, raw []byte, stats *index.Stats, ids []string) (any, error) {
	q, opt, err := s.queryOptions(raw, stats)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		pid, err := brain.ParseID(id)
		if err != nil || pid.Wing != s.Wing() {
			return nil, invalid("fetch names %q, which is not a note id of wing %q", id, s.Wing())
		}
	}
	hits, err := s.st.Fetch(ctx, q, ids, opt)
	if err != nil {
		return nil, err
	}
	return brain.FetchResult{Hits: s.hitsOf(hits)}, nil
}

// ---- brain_get

type getArgs struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	Wing string `json:"wing"`
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
}

func (s *Set) get(ctx context.Context, _ Caller, raw []byte, _ *index.Stats) (any, error) {
	var a getArgs
	if err := decode(raw, &a, s.byName["brain_get"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
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
	n, err := s.st.Get(ctx, ref)
	if err != nil {
		if strings.HasPrefix(ref, brain.TopInbox+"/") {
			return nil, hint(err, store.ErrNotFound, "brain_pending lists the inbox")
		}
		return nil, hint(err, store.ErrNotFound, "brain_query or brain_list find existing ids")
	}
	return getResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash, Frontmatter: frontmatter(n.Fields), Body: n.Body}, nil
}

// ---- brain_list

type listArgs struct {
	Wing   string `json:"wing"`
	Hall   string `json:"hall"`
	Cursor string `json:"cursor"`
	Limit  *int   `json:"limit"`
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

func (s *Set) list(_ context.Context, _ Caller, raw []byte, _ *index.Stats) (any, error) {
	var a listArgs
	if err := decode(raw, &a, s.byName["brain_list"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if err := checkHall(a.Hall, false); err != nil {
		return nil, err
	}
	limit, err := checkLimit(a.Limit, 1, ListMaxLimit, ListDefaultLimit)
	if err != nil {
		return nil, err
	}
	entries, next, err := s.st.List(a.Hall, a.Cursor, limit)
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

type linksArgs struct {
	ID   string `json:"id"`
	Wing string `json:"wing"`
}

type linksResult struct {
	ID        string   `json:"id"`
	Outbound  []string `json:"outbound"`
	Backlinks []string `json:"backlinks"`
	Tunnels   []string `json:"tunnels"`
}

func (s *Set) links(_ context.Context, _ Caller, raw []byte, _ *index.Stats) (any, error) {
	var a linksArgs
	if err := decode(raw, &a, s.byName["brain_links"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, invalid("id is required: a note id wing/hall/slug")
	}
	l, err := s.st.Links(a.ID)
	if err != nil {
		return nil, hint(err, store.ErrNotFound, "brain_query or brain_list find existing ids")
	}
	return linksResult{ID: l.ID, Outbound: l.Outbound, Backlinks: l.Backlinks, Tunnels: l.Tunnels}, nil
}

// ---- brain_pending

type pendingArgs struct {
	Wing  string `json:"wing"`
	Limit *int   `json:"limit"`
}

type pendingNote struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Title     string `json:"title"`
	Hall      string `json:"hall"`
	CreatedBy string `json:"created_by"`
	CreatedAt string `json:"created_at"`
	Excerpt   string `json:"excerpt"`
}

type pendingResult struct {
	Pending []pendingNote `json:"pending"`
}

func (s *Set) pending(ctx context.Context, _ Caller, raw []byte, _ *index.Stats) (any, error) {
	var a pendingArgs
	if err := decode(raw, &a, s.byName["brain_pending"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	limit, err := checkLimit(a.Limit, 1, PendingMaxLimit, PendingDefaultLimit)
	if err != nil {
		return nil, err
	}
	ps, err := s.st.Pending(ctx, limit)
	if err != nil {
		return nil, err
	}
	res := pendingResult{Pending: make([]pendingNote, len(ps))}
	for i, p := range ps {
		res.Pending[i] = pendingNote{Name: p.Name, Path: p.Path, Title: p.Title, Hall: p.Hall, CreatedBy: p.CreatedBy, CreatedAt: p.CreatedAt, Excerpt: p.Excerpt}
	}
	return res, nil
}

// ---- brain_write

type writeArgs struct {
	Title          string   `json:"title"`
	Body           string   `json:"body"`
	Hall           string   `json:"hall"`
	Slug           string   `json:"slug"`
	Tags           []string `json:"tags"`
	Inbox          bool     `json:"inbox"`
	Wing           string   `json:"wing"`
	IdempotencyKey string   `json:"idempotency_key"`
}

type writeResult struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	ContentHash string `json:"content_hash"`
}

func writeResultOf(n *store.Note) writeResult {
	return writeResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash}
}

func writeIntent(in store.Intent) any { return writeResultOf(in.Note) }

// checkNote validates the fields of a note to create.
func (s *Set) checkNote(prefix, title, body, hall, slug string, tags []string, inbox bool) error {
	if err := checkText(prefix+"title", title, s.lim.MaxTitleBytes, true); err != nil {
		return err
	}
	if err := s.checkBody(prefix+"body", body); err != nil {
		return err
	}
	if err := checkHall(hall, !inbox); err != nil {
		return err
	}
	if err := checkSlug(prefix+"slug", slug); err != nil {
		return err
	}
	if slug == "" && layout.Slugify(title) == "" {
		return invalid("%stitle %q has no letters or digits to make a slug from: pass a slug", prefix, title)
	}
	return s.checkTags(prefix+"tags", tags)
}

func (s *Set) write(ctx context.Context, c Caller, raw []byte, _ *index.Stats) (any, error) {
	var a writeArgs
	if err := decode(raw, &a, s.byName["brain_write"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if err := s.checkNote("", a.Title, a.Body, a.Hall, a.Slug, a.Tags, a.Inbox); err != nil {
		return nil, err
	}
	key := a.IdempotencyKey
	a.IdempotencyKey, a.Wing = "", "" // not part of what the call does
	return s.keyed(ctx, c, "brain_write", key, a, func(k *keyCall) (any, error) {
		n, err := s.st.Create(ctx, store.NewNote{Title: a.Title, Body: a.Body, Hall: a.Hall, Slug: a.Slug, Tags: a.Tags, Inbox: a.Inbox, By: c.Email,
			Hook: k.hook(idempotency.Whole, writeIntent)})
		if err != nil {
			return nil, hint(err, store.ErrExists, "brain_update changes an existing note")
		}
		return writeResultOf(n), nil
	})
}

// ---- brain_update

type updateArgs struct {
	ID             string `json:"id"`
	Body           string `json:"body"`
	Reason         string `json:"reason"`
	ExpectedHash   string `json:"expected_hash"`
	Title          string `json:"title"`
	Wing           string `json:"wing"`
	IdempotencyKey string `json:"idempotency_key"`
}

func isHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Set) update(ctx context.Context, c Caller, raw []byte, _ *index.Stats) (any, error) {
	var a updateArgs
	if err := decode(raw, &a, s.byName["brain_update"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, invalid("id is required: the note id wing/hall/slug (brain_write creates new notes)")
	}
	if err := s.checkBody("body", a.Body); err != nil {
		return nil, err
	}
	if err := checkText("reason", a.Reason, s.lim.MaxReasonBytes, true); err != nil {
		return nil, err
	}
	if a.Title != "" {
		if err := checkText("title", a.Title, s.lim.MaxTitleBytes, true); err != nil {
			return nil, err
		}
	}
	if a.ExpectedHash != "" && !isHash(a.ExpectedHash) {
		return nil, invalid("expected_hash must be a content_hash: 64 lowercase hex digits, as brain_get returns it")
	}
	key := a.IdempotencyKey
	a.IdempotencyKey, a.Wing = "", ""
	return s.keyed(ctx, c, "brain_update", key, a, func(k *keyCall) (any, error) {
		n, err := s.st.Update(ctx, store.Change{ID: a.ID, Body: a.Body, Reason: a.Reason, ExpectedHash: a.ExpectedHash, Title: a.Title, By: c.Email,
			Hook: k.hook(idempotency.Whole, writeIntent)})
		if err != nil {
			return nil, hint(err, store.ErrNotFound, "brain_update never creates a note: brain_write does")
		}
		return writeResultOf(n), nil
	})
}

// ---- brain_ingest_raw

type ingestPage struct {
	Hall  string   `json:"hall"`
	Slug  string   `json:"slug"`
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
}

type ingestArgs struct {
	Pages          []ingestPage `json:"pages"`
	DryRun         bool         `json:"dry_run"`
	Wing           string       `json:"wing"`
	IdempotencyKey string       `json:"idempotency_key"`
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

func (s *Set) ingest(ctx context.Context, c Caller, raw []byte, _ *index.Stats) (any, error) {
	var a ingestArgs
	if err := decode(raw, &a, s.byName["brain_ingest_raw"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if len(a.Pages) == 0 {
		return nil, invalid("pages is required: at least one page {hall, title, body}")
	}
	if len(a.Pages) > s.lim.MaxPages {
		return nil, tooLarge("%d pages, the limit is %d per call: split the import", len(a.Pages), s.lim.MaxPages)
	}
	key := a.IdempotencyKey
	a.IdempotencyKey, a.Wing = "", ""
	return s.keyed(ctx, c, "brain_ingest_raw", key, a, func(k *keyCall) (any, error) {
		return s.ingestPages(ctx, c, a, k)
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
	for _, pr := range res.Pages {
		switch pr.Status {
		case StatusCreated:
			res.Created++
		case StatusExists:
			res.Exists++
		case StatusInvalid:
			res.Invalid++
		case StatusFailed:
			res.Failed++
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
		prefix := fmt.Sprintf("pages[%d].", i)
		if err := s.checkNote(prefix, p.Title, p.Body, p.Hall, p.Slug, p.Tags, false); err != nil {
			_, msg := s.classify("brain_ingest_raw", err)
			pr.Status, pr.Error = StatusInvalid, msg
			continue
		}
		notes[i] = store.NewNote{Title: p.Title, Body: p.Body, Hall: p.Hall, Slug: p.Slug, Tags: p.Tags, By: c.Email}
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
		n, err := s.st.Create(ctx, withHook(notes[i], k.hook(i, func(in store.Intent) any {
			return ingestPageResult{ID: in.Note.ID, Path: in.Note.Path, Status: StatusCreated, ContentHash: in.Note.Hash}
		})))
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

func withHook(n store.NewNote, h store.Hook) store.NewNote {
	n.Hook = h
	return n
}

// ---- session_log

type sessionArgs struct {
	Session        string          `json:"session"`
	Entry          json.RawMessage `json:"entry"`
	Wing           string          `json:"wing"`
	IdempotencyKey string          `json:"idempotency_key"`
}

type sessionResult struct {
	Session string `json:"session"`
	Path    string `json:"path"`
	Line    int    `json:"line"`
}

func (s *Set) sessionLog(ctx context.Context, c Caller, raw []byte, _ *index.Stats) (any, error) {
	var a sessionArgs
	if err := decode(raw, &a, s.byName["session_log"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if a.Session == "" {
		return nil, invalid("session is required: an id for your work session, e.g. 2026-11-30-fix-login")
	}
	entry := bytes.TrimSpace(a.Entry)
	if len(entry) == 0 || entry[0] != '{' {
		return nil, invalid("entry is required and must be a JSON object, e.g. {\"did\":\"...\"}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, entry); err == nil && compact.Len() > s.lim.MaxEntryBytes {
		return nil, tooLarge("entry is %d bytes, over the %d-byte limit", compact.Len(), s.lim.MaxEntryBytes)
	}
	key := a.IdempotencyKey
	fp := sessionArgs{Session: a.Session, Entry: entry}
	if key != "" || c.IdempotencyKey != "" {
		canon, err := canonicalJSON(entry)
		if err != nil {
			return nil, invalid("entry is not valid JSON: %v", err)
		}
		fp.Entry = canon
	}
	return s.keyed(ctx, c, "session_log", key, fp, func(k *keyCall) (any, error) {
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

type promoteArgs struct {
	Name           string `json:"name"`
	Hall           string `json:"hall"`
	Slug           string `json:"slug"`
	Wing           string `json:"wing"`
	IdempotencyKey string `json:"idempotency_key"`
}

type promoteResult struct {
	ID          string   `json:"id"`
	Path        string   `json:"path"`
	ContentHash string   `json:"content_hash"`
	Tunnels     []string `json:"tunnels"`
}

func (s *Set) promote(ctx context.Context, c Caller, raw []byte, _ *index.Stats) (any, error) {
	var a promoteArgs
	if err := decode(raw, &a, s.byName["brain_promote"].props); err != nil {
		return nil, err
	}
	if err := s.checkWing(a.Wing); err != nil {
		return nil, err
	}
	if err := checkHall(a.Hall, true); err != nil {
		return nil, err
	}
	if a.Name == "" {
		return nil, invalid("name is required: the inbox name brain_pending lists")
	}
	if err := checkSlug("slug", a.Slug); err != nil {
		return nil, err
	}
	key := a.IdempotencyKey
	a.IdempotencyKey, a.Wing = "", ""
	return s.keyed(ctx, c, "brain_promote", key, a, func(k *keyCall) (any, error) {
		n, tunnels, err := s.st.Promote(ctx, a.Name, a.Hall, a.Slug, c.Email, k.hook(idempotency.Whole, func(in store.Intent) any {
			return promoteResult{ID: in.Note.ID, Path: in.Note.Path, ContentHash: in.Note.Hash, Tunnels: in.Tunnels}
		}))
		if err != nil {
			return nil, hint(err, store.ErrNotFound, "brain_pending lists the inbox")
		}
		return promoteResult{ID: n.ID, Path: n.Path, ContentHash: n.Hash, Tunnels: tunnels}, nil
	})
}
