package console

import (
	"cmp"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/gateway/oauth"
)

// wingOf reads the {wing} of the path and answers as for a missing page
// when it is malformed or the person cannot reach it.
func (rq *request) wingOf() (string, bool) {
	w := rq.r.PathValue("wing")
	if brain.ValidWing(w) != nil || rq.caps(w) == nil {
		return "", false
	}
	return w, true
}

// inboxRef is the {wing}/inbox/{name} of a path.
type inboxRef struct{ wing, name string }

// inboxOf reads {wing}/inbox/{name}.
func (rq *request) inboxOf() (inboxRef, bool) {
	w, ok := rq.wingOf()
	name := rq.r.PathValue("name")
	return inboxRef{w, name}, ok && brain.ValidInboxName(name) == nil
}

// noteOf reads {wing}/{hall}/{slug}.
func (rq *request) noteOf() (brain.ID, bool) {
	w, ok := rq.wingOf()
	if !ok {
		return brain.ID{}, false
	}
	id, err := brain.ParseID(w + "/" + rq.r.PathValue("hall") + "/" + rq.r.PathValue("slug"))
	return id, err == nil
}

// of adapts h to the wing, note or inbox note of the path, as pathOf reads
// it: a path the person cannot reach answers as a missing page.
func of[T any](pathOf func(*request) (T, bool), h func(*request, T) answer) pageHandler {
	return func(rq *request) answer {
		v, ok := pathOf(rq)
		if !ok {
			return notFound()
		}
		return h(rq, v)
	}
}

func (c *Console) noteURL(id string) string { return c.prefix + "n/" + id }

// home lists the wings the person reaches and their capabilities.
func (c *Console) home(rq *request) answer {
	return answer{status: http.StatusOK, page: "home", title: "Your wings", data: rq.myWings()}
}

type hit struct {
	ID         string `json:"id"`
	Wing       string `json:"wing"`
	Hall       string `json:"hall"`
	Title      string `json:"title"`
	Snippet    string `json:"snippet"`
	Path       string `json:"path"`
	Unreviewed bool   `json:"unreviewed"`
	URL        string `json:"-"`
}

type searchData struct {
	Query, Scope, Wing string
	Scopes             []string
	Searched           bool
	Hits               []hit
	Total              int
	Unavailable        []struct {
		Wing  string `json:"wing"`
		Error string `json:"error"`
	}
	Error string
}

// search is brain_query across the wings (or one), scope wiki, inbox or all.
func (c *Console) search(rq *request) answer {
	q := rq.r.URL.Query()
	d := searchData{Query: q.Get("q"), Scope: q.Get("scope"), Wing: q.Get("wing"), Scopes: []string{"wiki", "inbox", "all"}}
	d.Scope = cmp.Or(d.Scope, "wiki")
	if d.Query == "" {
		return answer{status: http.StatusOK, page: "search", title: "Search", data: d}
	}
	if _, err := text("query", d.Query, MaxQueryBytes, true, true); err != nil {
		return failed(err)
	}
	if d.Scope != "wiki" && d.Scope != "inbox" && d.Scope != "all" {
		return failed(&InputError{"scope", ErrInvalid, "scope is wiki, inbox or all"})
	}
	args := map[string]any{"query": d.Query, "scope": d.Scope, "limit": 50}
	if d.Wing != "" {
		if brain.ValidWing(d.Wing) != nil || rq.caps(d.Wing) == nil {
			return notFound()
		}
		args["wing"] = d.Wing
	}
	var out struct {
		Hits        []hit `json:"hits"`
		Total       int   `json:"total"`
		Unavailable []struct {
			Wing  string `json:"wing"`
			Error string `json:"error"`
		} `json:"unavailable"`
	}
	d.Searched = true
	if err := rq.call("brain_query", args, &out); err != nil {
		var te *toolError
		if errors.As(err, &te) && (te.Code == brain.CodeInvalidArgument || te.Code == brain.CodeTooLarge) {
			d.Error = te.Message
			return answer{status: http.StatusBadRequest, page: "search", title: "Search", data: d}
		}
		return failed(err)
	}
	for i, h := range out.Hits {
		if h.Unreviewed {
			if wing, name, err := brain.ParseInboxPath(h.Path); err == nil {
				out.Hits[i].URL = c.prefix + "w/" + wing + "/inbox/" + name
			}
		} else {
			out.Hits[i].URL = c.noteURL(h.ID)
		}
	}
	d.Hits, d.Total, d.Unavailable = out.Hits, out.Total, out.Unavailable
	return answer{status: http.StatusOK, page: "search", title: "Search: " + d.Query, data: d}
}

type listed struct {
	ID         string `json:"id"`
	Hall       string `json:"hall"`
	Title      string `json:"title"`
	UpdatedAt  string `json:"updated_at"`
	ArchivedAt string `json:"archived_at"`
	ArchivedBy string `json:"archived_by"`
	Reason     string `json:"reason"`
}

type wingData struct {
	Wing  string
	Caps  []string
	Notes []listed
	Next  string
}

// list is brain_list of the wing ({archived}), a page from ?cursor.
func (c *Console) list(rq *request, w string, archived bool) (wingData, error) {
	cursor, err := token("cursor", rq.r.URL.Query().Get("cursor"), MaxCursorBytes)
	if err != nil {
		return wingData{}, err
	}
	args := map[string]any{"wing": w, "limit": 100}
	if archived {
		args["archived"] = true
	}
	if cursor != "" {
		args["cursor"] = cursor
	}
	var out struct {
		Notes []listed `json:"notes"`
		Next  string   `json:"next_cursor"`
	}
	if err := rq.call("brain_list", args, &out); err != nil {
		return wingData{}, err
	}
	return wingData{Wing: w, Caps: rq.caps(w), Notes: out.Notes, Next: out.Next}, nil
}

// listPage is the wing's page of notes, or with archived its archive's.
func (c *Console) listPage(archived bool) pageHandler {
	page, title := "wing", "Wing "
	if archived {
		page, title = "archive", "Archive of "
	}
	return of((*request).wingOf, func(rq *request, w string) answer {
		d, err := c.list(rq, w, archived)
		if err != nil {
			return readFailed(err)
		}
		return answer{status: http.StatusOK, page: page, title: title + w, data: d}
	})
}

type pendingNote struct {
	Name      string           `json:"name"`
	Title     string           `json:"title"`
	Hall      string           `json:"hall"`
	CreatedBy string           `json:"created_by"`
	CreatedAt string           `json:"created_at"`
	Excerpt   string           `json:"excerpt"`
	Flags     []injection.Flag `json:"flags"` // the injection audit's, shown with why
}

func (c *Console) inbox(rq *request, w string) answer {
	var out struct {
		Pending []pendingNote `json:"pending"`
	}
	if err := rq.call("brain_pending", map[string]any{"wing": w, "limit": 200}, &out); err != nil {
		return readFailed(err)
	}
	return answer{status: http.StatusOK, page: "inbox", title: "Inbox of " + w,
		data: struct {
			Wing    string
			Caps    []string
			Pending []pendingNote
		}{w, rq.caps(w), out.Pending}}
}

// got is brain_get's answer.
type got struct {
	ID          string           `json:"id"`
	Path        string           `json:"path"`
	ContentHash string           `json:"content_hash"`
	Frontmatter json.RawMessage  `json:"frontmatter"`
	Body        string           `json:"body"`
	Version     string           `json:"version"`
	Flags       []injection.Flag `json:"flags"` // the injection audit's findings, none for a clean note
}

// shown is a note ready for a page.
type shown struct {
	got
	Wing   string
	Title  string
	Fields []field
	HTML   template.HTML
}

func (c *Console) show(wing string, g got) (shown, error) {
	fields, err := orderedFrontmatter(g.Frontmatter)
	if err != nil {
		return shown{}, err
	}
	s := shown{got: g, Wing: wing, Fields: fields}
	for _, f := range fields {
		if f.Key == "title" && len(f.Values) == 1 {
			s.Title = f.Values[0]
		}
	}
	s.Title = cmp.Or(s.Title, g.Path)
	s.HTML, err = c.rd.render(g.Body, wing)
	return s, err
}

type inboxNoteData struct {
	Note       shown
	Name       string
	Caps       []string
	Hall, Slug string
	Key        string
}

func (c *Console) inboxNote(rq *request, in inboxRef) answer {
	w, name := in.wing, in.name
	var g got
	if err := rq.call("brain_get", map[string]any{"path": brain.InboxPath(w, name)}, &g); err != nil {
		return readFailed(err)
	}
	s, err := c.show(w, g)
	if err != nil {
		return failed(err)
	}
	d := inboxNoteData{Note: s, Name: name, Caps: rq.caps(w), Slug: name, Key: formKey()}
	for _, f := range s.Fields {
		if f.Key == "hall" && len(f.Values) == 1 && brain.ValidHall(f.Values[0]) == nil {
			d.Hall = f.Values[0]
		}
	}
	return answer{status: http.StatusOK, page: "inboxnote", title: s.Title, data: d}
}

// promote is brain_promote with the form's title, hall and slug.
func (c *Console) promote(rq *request, in inboxRef) answer {
	w, nm := in.wing, in.name
	f := rq.r.PostForm
	hall, err := name("hall", f.Get("hall"), brain.ValidHall)
	if err != nil {
		return failed(err)
	}
	args := map[string]any{"wing": w, "name": nm, "hall": hall}
	if err := optional(args, "slug", f.Get("slug"), brain.ValidSlug); err != nil {
		return failed(err)
	}
	if t := f.Get("title"); strings.TrimSpace(t) != "" {
		if _, err := text("title", t, MaxTitleBytes, true, true); err != nil {
			return failed(err)
		}
		args["title"] = t
	}
	if f.Get("acknowledge_flags") != "" {
		args["acknowledge_flags"] = true // the curator ticked that they read the injection audit's flags
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := rq.send("brain_promote", args, &out); err != nil {
		return failed(err)
	}
	return answer{redirect: c.noteURL(out.ID)}
}

// send is rq.call of a change with the form's idempotency key: a form
// sent twice (a reload, a double click) is applied once and answered the
// same.
func (rq *request) send(tool string, args map[string]any, out any) error {
	if k := rq.r.PostForm.Get("key"); k != "" {
		if _, err := token("key", k, MaxKeyBytes); err != nil {
			return err
		}
		args["idempotency_key"] = k
	}
	return rq.call(tool, args, out)
}

// formKey is a fresh idempotency key for a page's form.
func formKey() string { return "console-" + oauth.RandomString(18) }

// optional puts v in args under key, checked by rule, unless it is empty.
func optional(args map[string]any, key, v string, rule func(string) error) error {
	if v == "" {
		return nil
	}
	if _, err := name(key, v, rule); err != nil {
		return err
	}
	args[key] = v
	return nil
}

func reasonOf(f url.Values) (string, error) {
	return text("reason", f.Get("reason"), MaxReasonBytes, true, true)
}

// archiveInbox rejects an inbox note: brain_archive of its inbox path.
func (c *Console) archiveInbox(rq *request, in inboxRef) answer {
	w, nm := in.wing, in.name
	reason, err := reasonOf(rq.r.PostForm)
	if err != nil {
		return failed(err)
	}
	args := map[string]any{"id": brain.InboxPath(w, nm), "reason": reason}
	if err := rq.send("brain_archive", args, nil); err != nil {
		return failed(err)
	}
	return answer{redirect: c.prefix + "w/" + w + "/inbox"}
}

type links struct {
	Outbound  []string `json:"outbound"`
	Backlinks []string `json:"backlinks"`
	Tunnels   []string `json:"tunnels"`
}

type noteData struct {
	Note  shown
	Links links
	// TunnelsIn are the notes of the person's other readable wings that
	// link to this one (brain_links with their wing).
	TunnelsIn []string
	Caps      []string
	Key       string
}

// note is brain_get (at ?version=) and brain_links of a wiki note.
func (c *Console) note(rq *request, id brain.ID) answer {
	args := map[string]any{"id": id.String()}
	if err := optional(args, "version", rq.r.URL.Query().Get("version"), brain.ValidVersion); err != nil {
		return failed(err)
	}
	var g got
	if err := rq.call("brain_get", args, &g); err != nil {
		return readFailed(err)
	}
	s, err := c.show(id.Wing, g)
	if err != nil {
		return failed(err)
	}
	d := noteData{Note: s, Caps: rq.caps(id.Wing), Key: formKey()}
	if g.Version == "" {
		if err := rq.call("brain_links", map[string]any{"id": id.String()}, &d.Links); err != nil {
			return readFailed(err)
		}
		d.TunnelsIn = tunnelsIn(rq, id)
	}
	return answer{status: http.StatusOK, page: "note", title: s.Title, data: d}
}

type version struct {
	Version string `json:"version"`
	At      string `json:"at"`
	By      string `json:"by"`
	Action  string `json:"action"`
	Tool    string `json:"tool"`
	Reason  string `json:"reason"`
	Removed bool   `json:"removed"`
	Purged  bool   `json:"purged"`
	// Prev is the next older version on this page whose content can be
	// compared ("" for the oldest): the diff of this version's change.
	Prev string `json:"-"`
}

func (c *Console) history(rq *request, id brain.ID) answer {
	cursor, err := token("cursor", rq.r.URL.Query().Get("cursor"), MaxCursorBytes)
	if err != nil {
		return failed(err)
	}
	args := map[string]any{"id": id.String(), "limit": 50}
	if cursor != "" {
		args["cursor"] = cursor
	}
	var out struct {
		ID       string    `json:"id"`
		Versions []version `json:"versions"`
		Next     string    `json:"next_cursor"`
	}
	if err := rq.call("brain_history", args, &out); err != nil {
		return readFailed(err)
	}
	for i := range out.Versions {
		for _, older := range out.Versions[i+1:] {
			if !older.Removed && !older.Purged {
				out.Versions[i].Prev = older.Version
				break
			}
		}
	}
	return answer{status: http.StatusOK, page: "history", title: "History of " + id.String(), data: struct {
		ID       string
		Current  string
		Versions []version
		Next     string
		Caps     []string
		Key      string
	}{id.String(), out.ID, out.Versions, out.Next, rq.caps(id.Wing), formKey()}}
}

// diffLine is one line of a unified diff, with its kind for the style.
type diffLine struct {
	Kind, Text string
}

func (c *Console) diff(rq *request, id brain.ID) answer {
	q := rq.r.URL.Query()
	from, err := name("from", q.Get("from"), brain.ValidVersion)
	if err != nil {
		return failed(err)
	}
	args := map[string]any{"id": id.String(), "from": from}
	if err := optional(args, "to", q.Get("to"), brain.ValidVersion); err != nil {
		return failed(err)
	}
	var out struct {
		From string `json:"from"`
		To   string `json:"to"`
		Diff string `json:"diff"`
		Cut  bool   `json:"cut"`
	}
	if err := rq.call("brain_diff", args, &out); err != nil {
		return readFailed(err)
	}
	var lines []diffLine
	for _, l := range strings.SplitAfter(out.Diff, "\n") {
		if l == "" {
			continue
		}
		kind := "ctx"
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "@@"):
			kind = "hdr"
		case strings.HasPrefix(l, "+"):
			kind = "add"
		case strings.HasPrefix(l, "-"):
			kind = "del"
		}
		lines = append(lines, diffLine{kind, l})
	}
	return answer{status: http.StatusOK, page: "diff", title: "Changes of " + id.String(), data: struct {
		ID, From, To string
		Lines        []diffLine
		Cut          bool
	}{id.String(), out.From, out.To, lines, out.Cut}}
}

// restore is brain_restore of a version, with a reason.
func (c *Console) restore(rq *request, id brain.ID) answer {
	f := rq.r.PostForm
	v, err := name("version", f.Get("version"), brain.ValidVersion)
	if err != nil {
		return failed(err)
	}
	reason, err := reasonOf(f)
	if err != nil {
		return failed(err)
	}
	args := map[string]any{"id": id.String(), "version": v, "reason": reason}
	var out struct {
		ID string `json:"id"`
	}
	if err := rq.send("brain_restore", args, &out); err != nil {
		return failed(err)
	}
	return answer{redirect: c.noteURL(out.ID)}
}

// archiveNote is brain_archive of a wiki note, with a reason.
func (c *Console) archiveNote(rq *request, id brain.ID) answer {
	reason, err := reasonOf(rq.r.PostForm)
	if err != nil {
		return failed(err)
	}
	args := map[string]any{"id": id.String(), "reason": reason}
	if err := rq.send("brain_archive", args, nil); err != nil {
		return failed(err)
	}
	return answer{redirect: c.prefix + "w/" + id.Wing + "/archive"}
}

type newData struct {
	Wing string
	Caps []string
	Key  string
}

func (c *Console) newNote(rq *request, w string) answer {
	return answer{status: http.StatusOK, page: "new", title: "New note in " + w, data: newData{w, rq.caps(w), formKey()}}
}

// writeNote is brain_write from the new-note form.
func (c *Console) writeNote(rq *request, w string) answer {
	f := rq.r.PostForm
	title, err := text("title", f.Get("title"), MaxTitleBytes, true, true)
	if err != nil {
		return failed(err)
	}
	body, err := text("body", f.Get("body"), MaxBodyBytes, true, false)
	if err != nil {
		return failed(err)
	}
	inbox := f.Get("inbox") == "on"
	args := map[string]any{"wing": w, "title": title, "body": strings.ReplaceAll(body, "\r\n", "\n"), "inbox": inbox}
	if err := optional(args, "hall", f.Get("hall"), brain.ValidHall); err != nil {
		return failed(err)
	}
	if err := optional(args, "slug", f.Get("slug"), brain.ValidSlug); err != nil {
		return failed(err)
	}
	tg, err := tags(f.Get("tags"))
	if err != nil {
		return failed(err)
	}
	if len(tg) > 0 {
		args["tags"] = tg
	}
	var out struct {
		ID   string `json:"id"`
		Path string `json:"path"`
	}
	if err := rq.send("brain_write", args, &out); err != nil {
		return failed(err)
	}
	if out.ID == "" {
		if wing, nm, err := brain.ParseInboxPath(out.Path); err == nil {
			return answer{redirect: c.prefix + "w/" + wing + "/inbox/" + nm}
		}
	}
	return answer{redirect: c.noteURL(out.ID)}
}

// tunnelsIn asks each other wing the person reads which of its notes link
// to id; a wing that cannot answer is left out (the page is about the note).
func tunnelsIn(rq *request, id brain.ID) []string {
	var in []string
	for _, w := range rq.myWings() {
		if w.Wing == id.Wing || !slices.Contains(w.Capabilities, "read") {
			continue
		}
		var l links
		if rq.call("brain_links", map[string]any{"wing": w.Wing, "id": id.String()}, &l) == nil {
			in = append(in, l.Backlinks...)
		}
	}
	return in
}
