package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/brainstem/brainstem/brain"
)

// renderer turns a note's markdown into HTML that is safe to put in a page.
type renderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
	prefix string
}

func newRenderer(prefix string) *renderer {
	// goldmark omits raw HTML (no html.WithUnsafe) and refuses dangerous
	// link destinations; bluemonday then keeps only the elements and
	// attributes below, whatever goldmark produced.
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify))
	return &renderer{md: md, policy: notePolicy(), prefix: prefix}
}

// notePolicy is the sanitizer's allow-list: text structure, tables, code,
// and links to http, https, mailto or relative URLs (javascript:, data:,
// vbscript: and every other scheme are dropped with the link). No images
// (the page's CSP would refuse other origins' anyway, and a remote image
// would tell its host who reads the note), no style, no class but a code
// block's language, no ids, no forms, no frames, no SVG or MathML.
func notePolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code",
		"em", "strong", "del", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("start").Matching(regexp.MustCompile(`^[0-9]{1,9}$`)).OnElements("ol")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[A-Za-z0-9_+-]{1,40}$`)).OnElements("code")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(true)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	return p
}

// wikilink is [[wing/hall/slug]] or [[hall/slug]], with an optional
// #anchor and |alias.
var wikilink = regexp.MustCompile(`\[\[([a-z0-9][a-z0-9/-]{0,400})(#[^\]|\n]{0,200})?(\|[^\]\n]{0,300})?\]\]`)

// linkWikilinks turns wikilinks into markdown links to the console's note
// pages; anything that is not a valid note id is left as written.
func (rd *renderer) linkWikilinks(body, wing string) string {
	return wikilink.ReplaceAllStringFunc(body, func(m string) string {
		sub := wikilink.FindStringSubmatch(m)
		ref := sub[1]
		if strings.Count(ref, "/") == 1 {
			ref = wing + "/" + ref
		}
		id, err := brain.ParseID(ref)
		if err != nil {
			return m
		}
		label := cmp.Or(strings.TrimPrefix(sub[3], "|"), sub[1])
		label = strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`).Replace(label)
		return "[" + label + "](" + rd.prefix + "n/" + id.Wing + "/" + id.Hall + "/" + id.Slug + ")"
	})
}

// render renders a note body of wing as sanitized HTML.
func (rd *renderer) render(body, wing string) (template.HTML, error) {
	var buf bytes.Buffer
	if err := rd.md.Convert([]byte(rd.linkWikilinks(body, wing)), &buf); err != nil {
		return "", fmt.Errorf("console: markdown: %w", err)
	}
	// The sanitizer's output is safe HTML by construction.
	return template.HTML(rd.policy.SanitizeBytes(buf.Bytes())), nil
}

// field is one frontmatter field, in the file's order.
type field struct {
	Key    string
	Values []string
}

// orderedFrontmatter decodes brain_get's frontmatter object keeping the
// file's key order; values are strings or arrays of strings.
func orderedFrontmatter(raw json.RawMessage) ([]field, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("console: frontmatter is not an object")
	}
	var out []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("console: frontmatter: %w", err)
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("console: frontmatter: %w", err)
		}
		f := field{Key: key}
		var s string
		var list []string
		switch {
		case json.Unmarshal(v, &s) == nil:
			f.Values = []string{s}
		case json.Unmarshal(v, &list) == nil:
			f.Values = list
		default:
			f.Values = []string{string(v)}
		}
		out = append(out, f)
	}
	return out, nil
}
