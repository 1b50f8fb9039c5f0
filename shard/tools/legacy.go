package tools

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	fm "github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/layout"
	"github.com/brainstem/brainstem/shard/store"
)

// The predecessor's call shapes (issue 35): how the callers of the earlier
// single-user brain server call the tools, each declared once here as the
// toolspec.Legacy of its tool's spec, with its mapping onto the tool's own
// arguments. Nothing else knows the predecessor's argument names: the spec
// decodes a call in either shape, the tool runs the mapped arguments, and
// the answer of a legacy call adds the predecessor's names for its fields
// (legacyMark). docs/tools.md shows each shape (TestDocsInSync), and
// docs/decisions.md ("The predecessor's call shapes") says why they map so.

// legacyMark is embedded in the arguments of a tool that has a legacy
// shape: the mapping sets it to the call as the predecessor's caller sent
// it (without wing and idempotency_key), so the answer can carry the
// predecessor's names and an idempotency key fingerprints the call as it
// was sent.
type legacyMark struct{ sentAs any }

func (m *legacyMark) legacy() bool { return m.sentAs != nil }

// fingerprinted is what an idempotency key of the call fingerprints: own
// (the tool's arguments) for a call in the tool's shape, else the call as
// the predecessor's caller sent it.
func (m *legacyMark) fingerprinted(own any) any {
	return cmp.Or(m.sentAs, own)
}

// ---- brain_write: {content, filename, type, domain} into the inbox

type legacyWriteArgs struct {
	Content  string `json:"content"`
	Filename string `json:"filename"`
	Type     string `json:"type"`
	Domain   string `json:"domain"`
	WingArg
	KeyArg
}

func (s *Set) writeLegacy() *toolspec.Legacy {
	return toolspec.LegacyShape([]toolspec.Arg{
		{Name: "content", Type: toolspec.String, Required: true, Min: toolspec.Int(1), MaxBytes: s.lim.MaxBodyBytes + fm.MaxHeaderBytes,
			TooLarge: "split it into several notes", Desc: "The whole note in markdown, optionally with its own frontmatter."},
		{Name: "filename", Type: toolspec.String, Check: checkLegacyFilename,
			Desc: "The inbox file's name, .md appended when missing; default <UTC yyyy-mm-dd-hhmmss>-auto.md."},
		{Name: "type", Type: toolspec.String, MaxBytes: s.lim.MaxTagBytes, Line: true, Desc: "Kept as the frontmatter key type."},
		{Name: "domain", Type: toolspec.String, MaxBytes: s.lim.MaxTagBytes, Line: true, Desc: "Kept as the frontmatter key domain."},
		wingArg(),
		s.keyArg(),
	}, "The predecessor's `brain_write` writes to the inbox. The title is the content's frontmatter `title`, else its first "+
		"`# ` heading, else the file name; the content's other frontmatter keys are kept (`tags` as the tags, `hall` as the "+
		"suggested hall when it is one, those the shard stamps itself dropped), and `type` and `domain` become frontmatter "+
		"keys. The inbox name is the filename without `.md`, lowercased, made a slug when it is none (`Retry_Budget.md` is "+
		"`retry-budget`); without a filename it is `<UTC yyyy-mm-dd-hhmmss>-auto` (`-2`, `-3`… appended if that second's is "+
		"taken). A filename with a path or a leading `.` is refused. The answer is the tool's "+
		"`{id, path, content_hash}`, `path` being the predecessor's field.",
		func(l *legacyWriteArgs, a *writeArgs) error {
			n, err := parseLegacyContent("content", l.Content)
			if err != nil {
				return err
			}
			name, title := legacyName(l.Filename), strings.TrimSuffix(l.Filename, ".md")
			if l.Filename == "" {
				a.autoName = true
				name = s.st.Now().UTC().Format("2006-01-02-150405") + "-auto"
				title = name
			}
			a.Title, a.Body, a.Hall, a.Tags = cmp.Or(n.title, title), n.body, n.hall, n.tags
			a.Slug, a.Inbox, a.Wing, a.IdempotencyKey = name, true, l.Wing, l.IdempotencyKey
			a.extra = withKeys(n.extra, "type", l.Type, "domain", l.Domain)
			sent := *l
			sent.WingArg, sent.KeyArg = WingArg{}, KeyArg{}
			a.sentAs = sent
			return nil
		})
}

// checkLegacyFilename refuses a file name that is not one file of the
// inbox (a path, a dot name) or that makes no inbox name.
func checkLegacyFilename(name, v string) error {
	if strings.ContainsAny(v, `/\`) || strings.HasPrefix(v, ".") {
		return invalid("%s %q is not a file name of the inbox: no path, no leading '.'", name, v)
	}
	if err := brain.ValidInboxName(legacyName(v)); err != nil {
		e, _ := brain.As(err)
		return brain.Wrap(err, e.Code, "%s %q: %s", name, v, e.Message)
	}
	return nil
}

// legacyName is the inbox name of a file name: without .md, lowercased,
// and made a slug when it is none (layout.Slugify: "Retry_Budget.md" is
// retry-budget).
func legacyName(file string) string {
	name := strings.ToLower(strings.TrimSuffix(file, ".md"))
	if brain.ValidInboxName(name) == nil {
		return name
	}
	return layout.Slugify(name)
}

// legacyNote is a note's content as the predecessor's caller gave it:
// the frontmatter's title, tags and hall, its other keys, and the body.
type legacyNote struct {
	title, hall, body string
	tags              []string
	extra             []store.Field
}

// parseLegacyContent splits content into its frontmatter and body. The
// title is the frontmatter's, else the first "# " heading's ("" when
// neither). Keys the store stamps itself, and values that are mappings,
// are dropped; a hall that is none is dropped.
func parseLegacyContent(arg, content string) (legacyNote, error) {
	doc, err := fm.Parse([]byte(content))
	if err != nil {
		return legacyNote{}, invalid("%s has a frontmatter that cannot be read: %v", arg, err)
	}
	n := legacyNote{body: doc.Body()}
	for _, k := range doc.Keys() {
		v, scalar := doc.Get(k)
		list := doc.Strings(k)
		switch {
		case k == store.KeyTitle && scalar:
			n.title = strings.TrimSpace(v)
		case k == store.KeyTags && list != nil:
			n.tags = list
		case k == store.KeyHall && scalar && brain.ValidHall(v) == nil:
			n.hall = v
		case store.OwnKey(k):
		case scalar:
			n.extra = append(n.extra, store.Field{Key: k, Value: v})
		case list != nil:
			n.extra = append(n.extra, store.Field{Key: k, IsList: true, List: list})
		}
	}
	if n.title == "" {
		n.title = firstHeading(n.body)
	}
	return n, nil
}

// firstHeading is the text of the body's first "# " heading, "" if none.
func firstHeading(body string) string {
	for line := range strings.Lines(body) {
		if h, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "# "); ok {
			return strings.TrimSpace(h)
		}
	}
	return ""
}

// withKeys sets the given key/value pairs (those with a value) in fields,
// replacing a field of the same key.
func withKeys(fields []store.Field, kv ...string) []store.Field {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		f := store.Field{Key: kv[i], Value: kv[i+1]}
		j := slices.IndexFunc(fields, func(f store.Field) bool { return f.Key == kv[i] })
		if j < 0 {
			fields = append(fields, f)
		} else {
			fields[j] = f
		}
	}
	return fields
}

// maxAutoNames bounds the names tried for one second's automatic name.
const maxAutoNames = 100

// freeAutoName is base, or base-2, base-3… the first not taken in the
// inbox.
func (s *Set) freeAutoName(n store.NewNote) string {
	base := n.Slug
	for i := 1; i <= maxAutoNames; i++ {
		if i > 1 {
			n.Slug = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := s.st.Plan(n); !errors.Is(err, store.ErrExists) {
			return n.Slug
		}
	}
	return base // taken: the write says already_exists
}

// ---- brain_update: target by wing + hall + slug, or a path in slug or path

type legacyUpdateArgs struct {
	Hall   string `json:"hall"`
	Slug   string `json:"slug"`
	Path   string `json:"path"`
	Body   string `json:"body"`
	Reason string `json:"reason"`
	WingArg
	KeyArg
}

// legacyNoReason is the supersede_reason of a legacy update without one
// (the predecessor's reason was optional; the tool's is required).
const legacyNoReason = "updated through the predecessor's brain_update, no reason given"

func (s *Set) updateLegacy() *toolspec.Legacy {
	return toolspec.LegacyShape([]toolspec.Arg{
		wingArg(),
		hallArg(descHall, false),
		{Name: "slug", Type: toolspec.String, Route: toolspec.RoutePath, Desc: "The note's slug (with wing and hall), or its brain-relative path wiki/<wing>/<hall>/<slug>.md."},
		{Name: "path", Type: toolspec.String, Route: toolspec.RoutePath, Desc: "The note's brain-relative path wiki/<wing>/<hall>/<slug>.md."},
		s.bodyArg(fmt.Sprintf("The complete new markdown body (at most %d bytes).", s.lim.MaxBodyBytes)),
		{Name: "reason", Type: toolspec.String, MaxBytes: s.lim.MaxReasonBytes, Line: true, Desc: "Why the note changes, recorded as supersede_reason."},
		s.keyArg(),
	}, "The predecessor's `brain_update` names the note by `wing` (default: this wing), `hall` and `slug`, or by its "+
		"brain-relative path `wiki/<wing>/<hall>/<slug>.md` in `slug` or `path`. Without a reason, supersede_reason says "+
		"none was given. The answer adds `superseded`, the content hash the update superseded.",
		func(l *legacyUpdateArgs, a *updateArgs) error {
			id, err := legacyTarget(l, s.Wing())
			if err != nil {
				return err
			}
			a.ID, a.Body, a.Reason, a.Wing, a.IdempotencyKey = id, l.Body, cmp.Or(l.Reason, legacyNoReason), l.Wing, l.IdempotencyKey
			sent := *l
			sent.WingArg, sent.KeyArg = WingArg{}, KeyArg{}
			a.sentAs = sent
			return nil
		})
}

// legacyTarget is the note id a legacy update names.
func legacyTarget(l *legacyUpdateArgs, wing string) (string, error) {
	path := l.Path
	if strings.Contains(l.Slug, "/") {
		if path != "" {
			return "", invalid("give the note's path in slug or in path, not both")
		}
		path = l.Slug
	}
	switch {
	case path != "" && l.Hall != "":
		return "", invalid("give the note by its path, or by wing, hall and slug, not both")
	case path != "":
		id, err := brain.ParseID(path)
		if err != nil {
			return "", err
		}
		return id.String(), nil
	case l.Slug == "":
		return "", invalid("name the note: wing, hall and slug, or its path wiki/<wing>/<hall>/<slug>.md in slug or path")
	case l.Hall == "":
		return "", invalid("hall is required with a slug: one of %s (or give the note's path)", brain.HallList)
	}
	id := brain.ID{Wing: cmp.Or(l.Wing, wing), Hall: l.Hall, Slug: l.Slug}
	if err := id.Validate(); err != nil {
		return "", err
	}
	return id.String(), nil
}

// ---- brain_ingest_raw: source, and pages of {title, type, content}

type legacyPage struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Content string `json:"content"`
}

type legacyIngestArgs struct {
	Source string       `json:"source"`
	Pages  []legacyPage `json:"pages"`
	DryRun bool         `json:"dry_run"`
	WingArg
	KeyArg
}

func (s *Set) ingestLegacy() *toolspec.Legacy {
	return toolspec.LegacyShape([]toolspec.Arg{
		{Name: "source", Type: toolspec.String, Required: true, Min: toolspec.Int(1), MaxBytes: s.lim.MaxTitleBytes, Line: true,
			Desc: "Where the pages come from, kept as the frontmatter key source of each."},
		{Name: "pages", Type: toolspec.Array, Required: true, Min: toolspec.Int(1), Max: toolspec.Int(s.lim.MaxPages),
			Missing: "at least one page {title, type, content}", TooLarge: "split the import", Desc: "The pages to write.",
			Items: &toolspec.Arg{Type: toolspec.Object, Desc: "A page.", Props: []toolspec.Arg{
				s.titleArg(true, "One-line title; the slug is made from it."),
				{Name: "type", Type: toolspec.String, MaxBytes: s.lim.MaxTagBytes, Line: true, Desc: "The page's kind: a hall (or its singular) is the hall, any other kind goes to facts; kept as the frontmatter key type."},
				{Name: "content", Type: toolspec.String, Required: true, Min: toolspec.Int(1), MaxBytes: s.lim.MaxBodyBytes + fm.MaxHeaderBytes,
					Desc: "The page in markdown, optionally with its own frontmatter."},
			}}},
		{Name: "dry_run", Type: toolspec.Boolean, Default: false, Desc: "Report the paths it would write, writing nothing."},
		wingArg(),
		s.keyArg(),
	}, "The predecessor's `brain_ingest_raw` puts each page in the hall its `type` names (`fact` or `facts`, `decision`…; "+
		"any other type, such as `concept`, in `facts`), keeps `type` and `source` as frontmatter keys, and slugs the title. "+
		"Its answer's `pages` is the predecessor's: the brain-relative paths written (with `dry_run`, those that would be); "+
		"the tool's per-page report is `report`, beside its counts.",
		func(l *legacyIngestArgs, a *ingestArgs) error {
			a.Pages = make([]ingestPage, len(l.Pages))
			for i, p := range l.Pages {
				n, err := parseLegacyContent(fmt.Sprintf("pages[%d].content", i), p.Content)
				if err != nil {
					return err
				}
				a.Pages[i] = ingestPage{Hall: hallOfType(p.Type), Title: p.Title, Body: n.body, Tags: n.tags,
					extra: withKeys(n.extra, "type", p.Type, "source", l.Source)}
			}
			a.DryRun, a.Wing, a.IdempotencyKey = l.DryRun, l.Wing, l.IdempotencyKey
			sent := *l
			sent.WingArg, sent.KeyArg = WingArg{}, KeyArg{}
			a.sentAs = sent
			return nil
		})
}

// hallOfType is the hall of a page of the predecessor's type: the hall
// the type names (plural or singular, any case), else facts.
func hallOfType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	for _, h := range brain.Halls() {
		if t == h || t+"s" == h || (t == "hypothesis" && h == "hypotheses") {
			return h
		}
	}
	return "facts"
}

// legacyIngestResult is the answer to a legacy brain_ingest_raw: the
// tool's counts, the paths written (the predecessor's pages) and the
// tool's per-page report.
type legacyIngestResult struct {
	ingestResult
	Pages  []string           `json:"pages"`
	Report []ingestPageResult `json:"report"`
}

// ingestAnswer is the shape of both of brain_ingest_raw's answers
// (ingestResult, and legacyIngestResult to a legacy call): its
// outputSchema, whose pages are a report per page or, for the predecessor,
// paths.
type ingestAnswer struct {
	DryRun  bool               `json:"dry_run"`
	Created int                `json:"created"`
	Exists  int                `json:"exists"`
	Invalid int                `json:"invalid"`
	Failed  int                `json:"failed"`
	Pages   []json.RawMessage  `json:"pages"`
	Report  []ingestPageResult `json:"report,omitempty"`
}

func legacyIngestAnswer(r ingestResult) legacyIngestResult {
	out := legacyIngestResult{ingestResult: r, Pages: []string{}, Report: r.Pages}
	for _, p := range r.Pages {
		if p.Status == StatusCreated {
			out.Pages = append(out.Pages, p.Path)
		}
	}
	return out
}

// ---- session_log: the flat fields

// legacyEntry is the predecessor's session log line, less its timestamp
// (the entry's at).
type legacyEntry struct {
	SessionID   string `json:"session_id"`
	Skill       string `json:"skill,omitempty"`
	Phase       string `json:"phase,omitempty"`
	ProjectRoot string `json:"project_root,omitempty"`
	FinalStatus string `json:"final_status,omitempty"`
	FilePath    string `json:"file_path,omitempty"`
	ModelUsed   string `json:"model_used,omitempty"`
	DurationMS  *int   `json:"duration_ms,omitempty"`
	Message     string `json:"message,omitempty"`
}

type legacySessionLogArgs struct {
	legacyEntry
	WingArg
	KeyArg
}

func legacySessionArg() toolspec.Arg {
	a := sessionArg()
	a.Name = "session_id"
	return a
}

func (s *Set) sessionLogLegacy() *toolspec.Legacy {
	line := func(name, desc string) toolspec.Arg {
		return toolspec.Arg{Name: name, Type: toolspec.String, Line: true, Desc: desc}
	}
	return toolspec.LegacyShape([]toolspec.Arg{
		legacySessionArg(),
		line("skill", "The skill that ran."),
		line("phase", "The phase of the work."),
		line("project_root", "The project's directory."),
		{Name: "final_status", Type: toolspec.String, Enum: []string{"ok", "error", "skipped"}, Desc: "How it ended."},
		line("file_path", "A file it concerns."),
		line("model_used", "The model that ran it."),
		{Name: "duration_ms", Type: toolspec.Integer, Desc: "How long it took, in milliseconds."},
		{Name: "message", Type: toolspec.String, Desc: "What happened."},
		wingArg(),
		s.keyArg(),
	}, "The predecessor's `session_log` gives the entry's fields flat: the entry is the JSON object of those given "+
		"(`session_id` first), in this order; the line's `at` is its timestamp.",
		func(l *legacySessionLogArgs, a *sessionArgs) error {
			entry, err := brain.Marshal(l.legacyEntry)
			if err != nil {
				return fmt.Errorf("tools: encode a legacy session entry: %w", err)
			}
			a.Session, a.Entry, a.Wing, a.IdempotencyKey = l.SessionID, entry, l.Wing, l.IdempotencyKey
			return nil
		})
}

// ---- session_read: session_id; a log that does not exist reads empty

type legacySessionReadArgs struct {
	SessionID string `json:"session_id"`
	WingArg
}

func (s *Set) sessionReadLegacy() *toolspec.Legacy {
	return toolspec.LegacyShape([]toolspec.Arg{legacySessionArg(), wingArg()},
		fmt.Sprintf("The predecessor read a session by `session_id`: the first %d entries, in file order; a log that "+
			"does not exist reads as no entries (`entries: []`, `total: 0`), not `not_found`.", SessionReadMaxLimit),
		func(l *legacySessionReadArgs, a *sessionReadArgs) error {
			a.Session, a.Offset, a.Limit, a.Wing = l.SessionID, 0, SessionReadMaxLimit, l.Wing
			a.sentAs = *l
			return nil
		})
}

// ---- brain_promote: filename, wing, hall, slug

type legacyPromoteArgs struct {
	Filename string `json:"filename"`
	Hall     string `json:"hall"`
	Slug     string `json:"slug"`
	WingArg
	KeyArg
}

func (s *Set) promoteLegacy() *toolspec.Legacy {
	wing := wingArg()
	wing.Required, wing.Missing = true, "the wing of the note"
	return toolspec.LegacyShape([]toolspec.Arg{
		{Name: "filename", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Missing: "the inbox file brain_pending lists",
			Check: func(name, v string) error {
				if err := brain.ValidInboxName(strings.TrimSuffix(v, ".md")); err != nil {
					e, _ := brain.As(err)
					return brain.Wrap(err, e.Code, "%s: %s", name, e.Message)
				}
				return nil
			}, Desc: "The inbox file, with or without .md."},
		wing,
		hallArg(descHall, true),
		{Name: "slug", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Check: slugCheck, Desc: "Slug of the wiki note."},
		s.keyArg(),
	}, "The predecessor's `brain_promote` names the inbox note by `filename` (with or without `.md`) and requires the "+
		"wing, hall and slug.",
		func(l *legacyPromoteArgs, a *promoteArgs) error {
			a.Name, a.Hall, a.Slug = strings.TrimSuffix(l.Filename, ".md"), l.Hall, l.Slug
			a.WingArg, a.KeyArg = l.WingArg, l.KeyArg
			return nil
		})
}

// ---- brain_pending and brain_get: the predecessor's calls are the tools' own

func pendingLegacy() *toolspec.Legacy {
	return &toolspec.Legacy{Doc: fmt.Sprintf("The predecessor's `brain_pending` is this call (`limit`, default %d). "+
		"Each note also carries `filename`, the predecessor's name for it: the inbox file's name.", PendingDefaultLimit)}
}

func getLegacy() *toolspec.Legacy {
	return &toolspec.Legacy{Doc: "The predecessor's `brain_get` is this call: `id` or `path`, the note's brain-relative " +
		"path `wiki/<wing>/<hall>/<slug>.md` in either."}
}
