package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/layout"
)

// Frontmatter keys the store reads and stamps.
const (
	KeyTitle           = "title"
	KeyWing            = "wing"
	KeyHall            = "hall"
	KeyTags            = "tags"
	KeyCreatedBy       = "created_by"
	KeyCreatedAt       = "created_at"
	KeyUpdatedBy       = "updated_by"
	KeyUpdatedAt       = "updated_at"
	KeySupersedes      = "supersedes"
	KeySupersedeReason = "supersede_reason"
	KeyPromotedBy      = "promoted_by"
	KeyPromotedAt      = "promoted_at"
)

// Field is one top-level frontmatter entry, in file order.
type Field struct {
	Key string
	// IsList tells whether the value is a list (then List holds its scalar
	// items) or a scalar (then Value holds it, unquoted). A nested mapping
	// is given as a scalar holding its JSON text.
	IsList bool
	Value  string
	List   []string
}

// Note is a note read from disk.
type Note struct {
	// ID is "wing/hall/slug" for a wiki note and "" for an inbox note
	// (inbox notes get an id when they are promoted).
	ID string
	// Name is the inbox name of an inbox note, "" for a wiki note.
	Name string
	// Path is the brain-relative slash path of the file.
	Path string
	// Hash is the lowercase hex sha256 of the file's bytes (content_hash).
	Hash string
	// Title is the frontmatter title, else the first "# " heading of the
	// body, else the slug (or inbox name).
	Title string
	// Fields is the frontmatter in file order. It is empty when the file
	// has no frontmatter or when FrontmatterErr is set.
	Fields []Field
	// Body is the markdown after the frontmatter (the whole file when the
	// frontmatter cannot be parsed).
	Body string
	// FrontmatterErr is the reason the frontmatter could not be parsed
	// (the file was edited by hand into an invalid state), or nil.
	FrontmatterErr error
	// Raw is the file's bytes.
	Raw []byte
	// Flags are the injection audit's findings on Raw (brain/injection),
	// nil for none.
	Flags []injection.Finding
}

// Get returns the scalar value of a frontmatter key ("" if absent or a list).
func (n *Note) Get(key string) string { return fieldValue(n.Fields, key) }

// fieldValue returns the scalar value of key among fields ("" if absent
// or a list): Note.Get, parseNote, Pending and the inbox's hall.
func fieldValue(fields []Field, key string) string {
	for _, f := range fields {
		if f.Key == key && !f.IsList {
			return f.Value
		}
	}
	return ""
}

// HashOf returns the content hash of raw file bytes: lowercase hex sha256.
func HashOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// parsed is the result of parsing a note's bytes.
type parsed struct {
	doc       *frontmatter.Doc // nil when err != nil
	err       error
	fields    []Field
	body      string
	title     string
	updatedAt string
}

// parseNote parses raw note bytes; fallback is the title of a note that has
// neither a title field nor a "# " heading (its slug or inbox name).
func parseNote(raw []byte, fallback string) parsed {
	var p parsed
	doc, err := frontmatter.Parse(raw)
	if err != nil {
		p.err = err
		p.body = string(raw)
	} else {
		p.doc = doc
		p.body = doc.Body()
		p.fields = fieldsOf(doc)
	}
	get := func(k string) string { return fieldValue(p.fields, k) }
	if p.title = oneLine(get(KeyTitle)); p.title == "" {
		p.title = cmp.Or(headingOf(p.body), fallback)
	}
	p.updatedAt = cmp.Or(get(KeyUpdatedAt), get(KeyPromotedAt), get(KeyCreatedAt))
	return p
}

// fieldsOf lists a document's top-level frontmatter entries in file order.
func fieldsOf(doc *frontmatter.Doc) []Field {
	keys := doc.Keys()
	out := make([]Field, 0, len(keys))
	var all map[string]any // decoded lazily, for nested values only
	for _, k := range keys {
		if v, ok := doc.Get(k); ok {
			out = append(out, Field{Key: k, Value: v})
			continue
		}
		if l := doc.Strings(k); l != nil {
			out = append(out, Field{Key: k, IsList: true, List: l})
			continue
		}
		// A mapping (or a list of mappings): shown as its JSON text.
		if all == nil {
			all = map[string]any{}
			_ = doc.Decode(&all)
		}
		b, err := json.Marshal(all[k])
		if err != nil {
			b = []byte("null")
		}
		out = append(out, Field{Key: k, Value: string(b)})
	}
	return out
}

// headingOf returns the text of the first level-1 ATX heading of a body.
func headingOf(body string) string {
	for line := range strings.Lines(body) {
		line = strings.TrimRight(line, "\r\n")
		if t, ok := strings.CutPrefix(line, "# "); ok {
			if t = oneLine(strings.TrimRight(strings.TrimSpace(t), "#")); t != "" {
				return strings.TrimSpace(t)
			}
		}
	}
	return ""
}

// oneLine collapses whitespace runs (newlines included) to single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// excerpt returns the first n runes of the trimmed body.
func excerpt(body string, n int) string {
	body = strings.TrimSpace(body)
	i := 0
	for k := range body {
		if i == n {
			return body[:k]
		}
		i++
	}
	return body
}

// parseLinks extracts the note ids a body links to, deduplicated, in order
// of first appearance. [[hall/slug]] means a note of this wing; links that
// are not valid note ids are ignored.
func (s *Store) parseLinks(body string) []string {
	var out []string
	var seen map[string]bool
	for _, l := range layout.Links(body) {
		id, err := layout.LinkID(s.wing, l.Target)
		if err != nil {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		k := id.String()
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func (s *Store) tunnelsOf(links []string) []string {
	out := []string{}
	for _, l := range links {
		if !strings.HasPrefix(l, s.wing+"/") {
			out = append(out, l)
		}
	}
	return out
}

// noteCost estimates the memory a note held by the read cache takes (and
// a note over an eighth of the cache's bound is not cached).
func noteCost(_ string, n *Note) (bytes, fit int64) {
	size := int64(256 + len(n.ID) + len(n.Name) + len(n.Path) + len(n.Hash) + len(n.Title) + len(n.Body) + len(n.Raw))
	for _, f := range n.Fields {
		size += int64(64 + len(f.Key) + len(f.Value))
		for _, v := range f.List {
			size += int64(16 + len(v))
		}
	}
	return size, size
}
