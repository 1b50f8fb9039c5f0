package check

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/layout"
)

// DefaultMaxNoteBytes is the largest note file a shard loads by default
// (the shard's --max-note-bytes).
const DefaultMaxNoteBytes = 1 << 20

// maxSessionLine bounds a session log line read by the check.
const maxSessionLine = 1 << 20

// Options configures Brain.
type Options struct {
	// MaxNoteBytes is the size limit of a note file, as configured on the
	// shards (0 → DefaultMaxNoteBytes).
	MaxNoteBytes int
}

// Problem is one thing wrong in a brain.
type Problem struct {
	Path    string `json:"path"` // brain-relative slash path; a directory ends in "/"
	Message string `json:"message"`
}

// Report is the result of checking a brain.
type Report struct {
	Root     string         `json:"root"`
	Wings    []string       `json:"wings"`             // every wing seen in wiki/, inbox/ or sessions/, sorted
	Notes    int            `json:"notes"`             // curated notes a shard would load
	Inbox    int            `json:"inbox"`             // inbox notes
	Sessions int            `json:"sessions"`          // session logs
	PerWing  map[string]int `json:"per_wing"`          // curated notes by wing
	Problems []Problem      `json:"problems"`          // sorted by path; empty when the brain is clean
	Flagged  []Flagged      `json:"flagged,omitempty"` // notes the injection audit flags, sorted by path (not problems)
	Remote   *Remote        `json:"remote,omitempty"`  // the git remote's last status; nil without one
}

// OK reports whether the brain has no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// ErrNotBrain is returned for a root that is not a brain directory.
var ErrNotBrain = errors.New("check: not a brain")

// checker walks one brain.
type checker struct {
	root  string
	opt   Options
	rep   *Report
	wings map[string]bool
	notes map[string]bool     // ids of the curated notes present (link targets)
	links []pendingLink       // resolved once every note is known
	files map[string][]string // wing → its note files and inbox notes (history's tracked paths)
}

type pendingLink struct {
	from string // path of the linking note
	link layout.Link
	id   brain.ID
}

// Brain checks the brain at root. It returns an error only when root
// cannot be checked at all (missing, not a directory, no wiki/); every
// problem inside is in the report.
func Brain(ctx context.Context, root string, opt Options) (*Report, error) {
	if opt.MaxNoteBytes <= 0 {
		opt.MaxNoteBytes = DefaultMaxNoteBytes
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotBrain, root)
	}
	if fi, err := os.Stat(filepath.Join(root, brain.TopWiki)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s has no wiki/ directory (a brain holds wiki/, inbox/ and sessions/)", ErrNotBrain, root)
	}
	c := &checker{root: root, opt: opt, rep: &Report{Root: root, PerWing: map[string]int{}, Problems: []Problem{}},
		wings: map[string]bool{}, notes: map[string]bool{}, files: map[string][]string{}}
	for _, top := range []string{brain.TopWiki, brain.TopInbox, brain.TopSessions} {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		c.top(ctx, top)
	}
	for _, l := range c.links {
		if !c.notes[l.id.String()] {
			c.problem(l.from, "link %s points at a note that does not exist (%s)", l.link.Text, l.id.Path())
		}
	}
	c.rep.Wings = slices.Sorted(maps.Keys(c.wings))
	for _, w := range c.rep.Wings {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		c.history(ctx, w)
	}
	c.remote()
	slices.SortStableFunc(c.rep.Problems, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(c.rep.Flagged, func(a, b Flagged) int { return strings.Compare(a.Path, b.Path) })
	return c.rep, nil
}

// history reports where wing's files and its git history disagree
// (history.CheckDisk: read only, beside a running shard or none).
func (c *checker) history(ctx context.Context, wing string) {
	problems, err := history.CheckDisk(ctx, history.Options{Root: c.root, Wing: wing,
		Tracked: func(rel string) bool { return layout.Tracked(rel, wing) },
		Files:   func() ([]string, error) { return c.files[wing], nil },
		Dirs:    []string{brain.WingDir(brain.TopWiki, wing), brain.WingDir(brain.TopInbox, wing)}})
	if err != nil {
		c.problem(brain.WingDir(brain.TopWiki, wing)+"/", "its history cannot be read: %v", err)
		return
	}
	for _, p := range problems {
		path := cmp.Or(p.Path, brain.WingDir(brain.TopWiki, wing)+"/")
		c.problem(path, "history: %s", p.Message)
	}
}

func (c *checker) problem(p, format string, args ...any) {
	c.rep.Problems = append(c.rep.Problems, Problem{Path: p, Message: fmt.Sprintf(format, args...)})
}

// entries lists a directory of the brain, reporting it if it cannot be read.
func (c *checker) entries(rel string) []fs.DirEntry {
	es, err := os.ReadDir(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		c.problem(rel+"/", "cannot be read: %v", err)
		return nil
	}
	return es
}

// kind says what a directory entry is, reporting (and returning false for)
// anything that is neither a regular file nor a directory.
func (c *checker) regularOrDir(rel string, e fs.DirEntry) bool {
	switch {
	case e.Type()&fs.ModeSymlink != 0:
		c.problem(rel, "a symbolic link: a brain holds no links (the shard never follows them)")
	case e.IsDir(), e.Type().IsRegular():
		return true
	default:
		c.problem(rel, "not a regular file or directory")
	}
	return false
}

// top checks wiki/, inbox/ or sessions/.
func (c *checker) top(ctx context.Context, top string) {
	fi, err := os.Lstat(filepath.Join(c.root, top))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		c.problem(top+"/", "cannot be read: %v", err)
		return
	case !fi.IsDir():
		c.problem(top, "must be a directory (not a file or a symbolic link)")
		return
	}
	for _, e := range c.entries(top) {
		name := e.Name()
		rel := top + "/" + name
		if layout.Hidden(name) || !c.regularOrDir(rel, e) {
			continue
		}
		if !e.IsDir() {
			c.problem(rel, "%s/ holds only wing directories", top)
			continue
		}
		if err := brain.ValidWing(name); err != nil {
			c.problem(rel+"/", "not a wing: %s", reason(err))
			continue
		}
		c.wings[name] = true
		switch top {
		case brain.TopWiki:
			c.wikiWing(ctx, name)
		case brain.TopInbox:
			c.inboxWing(name)
		case brain.TopSessions:
			c.sessionsWing(name)
		}
	}
}

func (c *checker) wikiWing(ctx context.Context, wing string) {
	dir := brain.WingDir(brain.TopWiki, wing)
	for _, e := range c.entries(dir) {
		name := e.Name()
		rel := dir + "/" + name
		if layout.Hidden(name) || !c.regularOrDir(rel, e) {
			continue
		}
		switch {
		case name == brain.IndexSlug+brain.NoteExt && !e.IsDir():
			// Generated by the shard: not a note, not checked.
		case !e.IsDir():
			c.problem(rel, "not in a hall: notes are files %s/<hall>/<slug>.md", dir)
		case brain.ValidHall(name) != nil:
			c.problem(rel+"/", "not a hall (%s): the shard does not load the files in it", strings.Join(brain.Halls(), ", "))
		default:
			if ctx.Err() == nil {
				c.hall(wing, name)
			}
		}
	}
}

func (c *checker) hall(wing, hall string) {
	dir := brain.HallDir(wing, hall)
	c.eachFile(dir, "a directory inside a hall: notes are files directly in "+dir+"/", layout.NoteFile, "; the shard does not load it", func(rel, slug string) {
		raw, ok := c.read(rel)
		if !ok {
			return
		}
		id := brain.ID{Wing: wing, Hall: hall, Slug: slug}
		c.notes[id.String()] = true
		c.files[wing] = append(c.files[wing], rel)
		c.rep.Notes++
		c.rep.PerWing[wing]++
		c.note(rel, wing, hall, raw)
	})
}

func (c *checker) inboxWing(wing string) {
	dir := brain.WingDir(brain.TopInbox, wing)
	c.eachFile(dir, "a directory inside the inbox: inbox notes are files "+dir+"/<name>.md", layout.InboxFile, "; brain_pending does not list it", func(rel, _ string) {
		raw, ok := c.read(rel)
		if !ok {
			return
		}
		c.rep.Inbox++
		c.files[wing] = append(c.files[wing], rel)
		c.note(rel, wing, "", raw)
	})
}

func (c *checker) sessionsWing(wing string) {
	dir := brain.WingDir(brain.TopSessions, wing)
	c.eachFile(dir, "a directory inside sessions: session logs are files "+dir+"/<session>.jsonl", layout.SessionFile, "", func(rel, _ string) {
		c.rep.Sessions++
		c.session(rel)
	})
}

// eachFile calls fn with what parse makes of the name of every regular
// file directly in dir (hidden entries and what is neither a file nor a
// directory are reported by hidden and regularOrDir); a directory there is
// reported with dirProblem, a name parse refuses with its reason and
// unusable.
func (c *checker) eachFile(dir, dirProblem string, parse func(string) (string, error), unusable string, fn func(rel, parsed string)) {
	for _, e := range c.entries(dir) {
		name := e.Name()
		rel := dir + "/" + name
		if c.hidden(rel, name) || !c.regularOrDir(rel, e) {
			continue
		}
		if e.IsDir() {
			c.problem(rel+"/", "%s", dirProblem)
			continue
		}
		parsed, err := parse(name)
		if err != nil {
			c.problem(rel, "%s%s", reason(err), unusable)
			continue
		}
		fn(rel, parsed)
	}
}

// hidden passes over hidden entries, reporting the temporary files an
// interrupted write leaves behind (a shard removes them when it starts;
// committed to a repository they are noise).
func (c *checker) hidden(rel, name string) bool {
	if !layout.Hidden(name) {
		return false
	}
	if strings.HasPrefix(name, ".tmp-") {
		c.problem(rel, "a temporary file left by an interrupted write: delete it")
	}
	return true
}

// read reads a note file, reporting it when it is over the size limit or
// unreadable.
func (c *checker) read(rel string) ([]byte, bool) {
	f, err := os.Open(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		c.problem(rel, "cannot be read: %v", err)
		return nil, false
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, int64(c.opt.MaxNoteBytes)+1))
	if err != nil {
		c.problem(rel, "cannot be read: %v", err)
		return nil, false
	}
	if len(raw) > c.opt.MaxNoteBytes {
		fi, _ := f.Stat()
		size := int64(len(raw))
		if fi != nil {
			size = fi.Size()
		}
		c.problem(rel, "%d bytes, over the %d-byte limit of a note: the shard does not load it (split it, or raise the shard's --max-note-bytes)", size, c.opt.MaxNoteBytes)
		return nil, false
	}
	return raw, true
}

// note checks a note's frontmatter and links. hall is "" for an inbox note.
func (c *checker) note(rel, wing, hall string, raw []byte) {
	c.audit(rel, raw)
	doc, err := frontmatter.Parse(raw)
	if err != nil {
		c.problem(rel, "the frontmatter cannot be read (%s): fix it, or the note cannot be updated", reason(err))
		return
	}
	body := doc.Body()
	c.noteLinks(rel, wing, body)
	if !doc.HasHeader() {
		c.problem(rel, "no frontmatter: a note starts with a --- line, then title, wing, %screated_by and created_at, and a closing --- line", map[bool]string{true: "", false: "hall, "}[hall == ""])
		return
	}
	scalar := func(key string, required bool) (string, bool) {
		v, ok := doc.Get(key)
		switch {
		case !ok && doc.Strings(key) != nil || !ok && slices.Contains(doc.Keys(), key):
			c.problem(rel, "frontmatter %q must be a single value", key)
			return "", false
		case !ok:
			if required {
				c.problem(rel, "frontmatter lacks %q", key)
			}
			return "", false
		case strings.TrimSpace(v) == "":
			c.problem(rel, "frontmatter %q is empty", key)
			return "", false
		}
		return v, true
	}
	scalar("title", true)
	if v, ok := scalar("wing", true); ok && v != wing {
		c.problem(rel, "frontmatter wing %q does not match the path's wing %q", v, wing)
	}
	if hall != "" {
		if v, ok := scalar("hall", true); ok && v != hall {
			c.problem(rel, "frontmatter hall %q does not match the path's hall %q", v, hall)
		}
	} else if v, ok := scalar("hall", false); ok && brain.ValidHall(v) != nil {
		c.problem(rel, "suggested hall %q is not one of %s", v, strings.Join(brain.Halls(), ", "))
	}
	if v, ok := scalar("created_by", true); ok {
		if a, err := mail.ParseAddress(v); err != nil || a.Address != v || a.Name != "" {
			c.problem(rel, "created_by %q is not an email address", v)
		}
	}
	if v, ok := scalar("created_at", true); ok {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			c.problem(rel, "created_at %q is not an RFC 3339 time (e.g. 2026-03-04T09:12:00Z)", v)
		}
	}
	if v, ok := doc.Get("tags"); ok && v != "" {
		c.problem(rel, "tags must be a list, e.g. [api, reliability]")
	}
}

// noteLinks records the links of a note, reporting malformed ones; targets
// are checked once every note is known.
func (c *checker) noteLinks(rel, wing, body string) {
	for _, l := range layout.Links(body) {
		id, err := layout.LinkID(wing, l.Target)
		if err != nil {
			c.problem(rel, "link %s is not of the form [[wing/hall/slug]] or [[hall/slug]]: %s", l.Text, reason(err))
			continue
		}
		c.links = append(c.links, pendingLink{from: rel, link: l, id: id})
	}
}

// session checks that every line of a session log is a JSON object.
func (c *checker) session(rel string) {
	f, err := os.Open(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		c.problem(rel, "cannot be read: %v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxSessionLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(line, &obj) != nil {
			c.problem(rel, "line %d is not a JSON object", n)
			return
		}
	}
	if err := sc.Err(); err != nil {
		c.problem(rel, "cannot be read: %v", err)
	}
}

// reason is what a person reads of an error: the message of a refusal
// of the naming rules (a *brain.Error), else the error's text without the
// frontmatter package's prefixes.
func reason(err error) string {
	if e, ok := brain.As(err); ok {
		return e.Message
	}
	return strings.ReplaceAll(err.Error(), "frontmatter: ", "")
}

// WriteText writes the report for a person: one line per problem, then a
// summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "%s: %s\n", p.Path, p.Message)
	}
	for _, f := range r.Flagged {
		fmt.Fprintf(&b, "%s: flagged by the injection audit (read it before an agent does): %s\n", f.Path, f.summary())
	}
	if r.Remote != nil {
		r.Remote.writeText(&b)
	}
	fmt.Fprintf(&b, "brain %s: %s (%s), %s, %s, %s: ", r.Root, count(len(r.Wings), "wing"), strings.Join(r.Wings, ", "),
		count(r.Notes, "note"), count(r.Inbox, "inbox note"), count(r.Sessions, "session log"))
	if r.OK() {
		b.WriteString("ok\n")
	} else {
		fmt.Fprintf(&b, "%s\n", count(len(r.Problems), "problem"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// count is n and the noun, plural unless n is 1: "1 problem", "2 notes".
func count[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// WriteJSON writes the report as indented JSON (`brainstem check --json`).
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ErrProblems is Err's error: the brain has problems.
var ErrProblems = errors.New("check: problems found")

// Err is nil for a clean brain, else an error wrapping ErrProblems that
// counts the problems (the exit status of `brainstem check`).
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	return fmt.Errorf("%w: %d in %s", ErrProblems, len(r.Problems), r.Root)
}
