package frontmatter

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxHeaderBytes is the largest header (the bytes between the two fence
// lines) Parse accepts and an edit may produce.
const MaxHeaderBytes = 64 << 10

// MaxKeyBytes is the longest key ValidKey accepts.
const MaxKeyBytes = 256

// Sentinel errors; every error of this package wraps one of them.
var (
	// ErrUnterminated reports a header opened by "---" and never closed.
	ErrUnterminated = errors.New("frontmatter: header opened with --- is never closed")
	// ErrInvalidYAML reports a header that is not an editable YAML mapping.
	ErrInvalidYAML = errors.New("frontmatter: invalid YAML")
	// ErrTooLarge reports a header over MaxHeaderBytes.
	ErrTooLarge = errors.New("frontmatter: header too large")
	// ErrInvalidKey reports a key that ValidKey rejects.
	ErrInvalidKey = errors.New("frontmatter: invalid key")
)

const bom = "\ufeff"

// Doc is a parsed note: the header lines, kept verbatim, and the body. The
// zero value is not useful; use Parse or New. A Doc is not safe for
// concurrent use.
type Doc struct {
	prefix string   // UTF-8 byte order mark, if the input had one
	open   string   // opening fence line with its line ending; "" when there is no header
	lines  []string // header lines, each with its line ending
	close  string   // closing fence line, with its line ending if it had one
	body   string
	eol    string // line ending of new lines: that of the opening fence
	keys   []entry
	err    error
}

// entry is a top-level key and the header lines it owns.
type entry struct {
	name       string
	start, end int // lines[start:end]
	key, val   *yaml.Node
}

// Parse splits raw into header and body and parses the header. See the
// package documentation for the accepted format and the errors.
func Parse(raw []byte) (*Doc, error) {
	s := string(raw)
	d := &Doc{}
	if strings.HasPrefix(s, bom) {
		d.prefix, s = bom, s[len(bom):]
	}
	first, rest := cutLine(s)
	if !isFence(first) {
		d.body = s
		d.eol = "\n"
		if i := strings.IndexByte(s, '\n'); i > 0 && s[i-1] == '\r' {
			d.eol = "\r\n"
		}
		return d, nil
	}
	if !strings.HasSuffix(first, "\n") {
		return nil, fmt.Errorf("%w: add a closing --- line after the header", ErrUnterminated)
	}
	d.open = first
	d.eol = lineEnding(first)
	size := 0
	for {
		if rest == "" {
			return nil, fmt.Errorf("%w: add a closing --- line after the header (opened at line 1)", ErrUnterminated)
		}
		var line string
		line, rest = cutLine(rest)
		if isFence(line) {
			d.close, d.body = line, rest
			break
		}
		size += len(line)
		if size > MaxHeaderBytes {
			return nil, fmt.Errorf("%w: more than %d bytes before the closing --- line", ErrTooLarge, MaxHeaderBytes)
		}
		if !strings.HasSuffix(line, "\n") {
			return nil, fmt.Errorf("%w: add a closing --- line after the header (opened at line 1)", ErrUnterminated)
		}
		d.lines = append(d.lines, line)
	}
	keys, err := index(d.lines)
	if err != nil {
		return nil, err
	}
	d.keys = keys
	return d, nil
}

// New builds a note from ordered key/value pairs and a body. Lines end with
// "\n". Values are quoted as Set quotes them; a repeated key keeps its first
// position and its last value. A pair whose key ValidKey rejects is skipped
// and reported by Err.
func New(fields [][2]string, body string) *Doc {
	d := &Doc{open: "---\n", close: "---\n", eol: "\n", body: body}
	for _, f := range fields {
		d.Set(f[0], f[1])
	}
	return d
}

// HasHeader reports whether the document has a frontmatter header (possibly
// empty).
func (d *Doc) HasHeader() bool { return d.open != "" }

// Err returns the first error of an edit that was refused (Set, SetStrings,
// Delete or New), or nil. A refused edit changes nothing.
func (d *Doc) Err() error { return d.err }

// Keys returns the top-level keys in file order.
func (d *Doc) Keys() []string {
	out := make([]string, len(d.keys))
	for i, e := range d.keys {
		out[i] = e.name
	}
	return out
}

// Get returns the scalar value of a top-level key, unquoted and unescaped as
// YAML reads it (a block scalar's content, an alias's target). A key with an
// empty or null value returns "", true. A missing key, or one whose value is
// a list or a mapping, returns "", false.
func (d *Doc) Get(key string) (string, bool) {
	e := d.find(key)
	if e == nil {
		return "", false
	}
	v := deref(e.val)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", false
	}
	if v.ShortTag() == "!!null" {
		return "", true
	}
	return v.Value, true
}

// Strings returns the scalar items of a top-level list (flow "[a, b]" or
// block "- a" style), skipping null and non-scalar items. A scalar value is
// returned as a one-item list; a missing key or a null value returns nil.
func (d *Doc) Strings(key string) []string {
	e := d.find(key)
	if e == nil {
		return nil
	}
	v := deref(e.val)
	if v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.ShortTag() == "!!null" {
			return nil
		}
		return []string{v.Value}
	case yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, it := range v.Content {
			it = deref(it)
			if it != nil && it.Kind == yaml.ScalarNode && it.ShortTag() != "!!null" {
				out = append(out, it.Value)
			}
		}
		return out
	}
	return nil
}

// Decode decodes the whole header into v with yaml.v3 (for example into a
// map[string]any). A document without a header decodes as an empty mapping.
func (d *Doc) Decode(v any) error {
	var root yaml.Node
	if len(d.lines) > 0 {
		if err := yaml.Unmarshal([]byte(strings.Join(d.lines, "")), &root); err != nil {
			return fmt.Errorf("frontmatter: decoding header: %w", err)
		}
	}
	if len(root.Content) == 0 {
		root = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	} else {
		root = *root.Content[0]
	}
	if err := root.Decode(v); err != nil {
		return fmt.Errorf("frontmatter: decoding header: %w", err)
	}
	return nil
}

// Set gives a top-level key a scalar string value. An existing key is
// rewritten in place (same position, its continuation lines replaced, a
// trailing comment on a one-line value kept); a new key is appended at the
// end of the header, creating the header if there is none. The value is
// written so that Get returns it exactly (invalid UTF-8 is first replaced by
// U+FFFD). A refused edit changes nothing and is reported by Err.
func (d *Doc) Set(key, value string) {
	value = strings.ToValidUTF8(value, "\uFFFD")
	text, err := scalarText(value)
	if err == nil {
		err = d.edit(key, text, true, func(nd *Doc) bool {
			got, ok := nd.Get(key)
			return ok && got == value
		})
	}
	if err != nil {
		d.fail(fmt.Errorf("frontmatter: set %q: %w", key, err))
	}
}

// SetStrings gives a top-level key a flow list value "[a, b]", with the same
// placement rules as Set. Strings(key) then returns vals (nil and empty give
// "[]").
func (d *Doc) SetStrings(key string, vals []string) {
	clean := make([]string, len(vals))
	for i, v := range vals {
		clean[i] = strings.ToValidUTF8(v, "\uFFFD")
	}
	text, err := listText(clean)
	if err == nil {
		err = d.edit(key, text, true, func(nd *Doc) bool {
			return slices.Equal(nd.Strings(key), clean) && nd.find(key) != nil
		})
	}
	if err != nil {
		d.fail(fmt.Errorf("frontmatter: set %q: %w", key, err))
	}
}

// Delete removes a top-level key and all the lines of its value. Deleting a
// missing key does nothing. A refused edit (the value defines an anchor that
// another key uses) changes nothing and is reported by Err.
func (d *Doc) Delete(key string) {
	if d.find(key) == nil {
		return
	}
	if err := d.edit(key, "", false, func(nd *Doc) bool { return nd.find(key) == nil }); err != nil {
		d.fail(fmt.Errorf("frontmatter: delete %q: %w", key, err))
	}
}

// Body returns the text after the header (the whole input when there is no
// header).
func (d *Doc) Body() string { return d.body }

// SetBody replaces the body. When the closing "---" ended the input without
// a line ending, one is added so that the body starts on its own line.
func (d *Doc) SetBody(body string) {
	if body != "" && d.open != "" && !strings.HasSuffix(d.close, "\n") {
		if strings.HasSuffix(d.close, "\r") {
			d.close += "\n" // a closing "---\r" at the end: "---\r" + eol would be no fence
		} else {
			d.close += d.eol
		}
	}
	d.body = body
}

// Bytes serialises the document: lines no edit touched are byte-identical
// to the input. When there is no header but the body itself starts with a
// "---" line, an empty header is written first so that the body is not read
// back as a header.
func (d *Doc) Bytes() []byte {
	var b strings.Builder
	n := len(d.prefix) + len(d.open) + len(d.close) + len(d.body) + 8
	for _, l := range d.lines {
		n += len(l)
	}
	b.Grow(n)
	b.WriteString(d.prefix)
	open, close := d.open, d.close
	if open == "" {
		if first, _ := cutLine(d.body); isFence(first) {
			open, close = "---"+d.eol, "---"+d.eol
		}
	}
	b.WriteString(open)
	for _, l := range d.lines {
		b.WriteString(l)
	}
	b.WriteString(close)
	b.WriteString(d.body)
	return []byte(b.String())
}

// ValidKey checks a key for Set, SetStrings and New: 1 to 256 bytes of valid
// UTF-8 without control characters or line separators. Keys that YAML would
// read as something else ("true", "1", " x") are quoted when written.
func ValidKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: key is %d bytes, the limit is %d", ErrInvalidKey, len(key), MaxKeyBytes)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidKey, key)
	}
	for _, r := range key {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			return fmt.Errorf("%w: key %q contains the control or separator character %U", ErrInvalidKey, key, r)
		}
	}
	return nil
}

func (d *Doc) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Doc) find(key string) *entry {
	if i := slices.IndexFunc(d.keys, func(e entry) bool { return e.name == key }); i >= 0 {
		return &d.keys[i]
	}
	return nil
}

// edit replaces the lines of key with "key: text" (put) or removes them
// (!put), re-parses the result, and applies it only if the header stays
// valid, within limits, every other key keeps its value, and ok accepts it.
func (d *Doc) edit(key, text string, put bool, ok func(*Doc) bool) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	e := d.find(key)
	var lines []string
	if e == nil {
		if !put {
			return nil
		}
		kt, err := keyText(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key})
		if err != nil {
			return err
		}
		lines = append(append(make([]string, 0, len(d.lines)+1), d.lines...), kt+": "+text+d.eol)
		return d.commit(lines, key, ok)
	}
	var repl []string
	if put {
		kt, err := keyText(&yaml.Node{Kind: yaml.ScalarNode, Tag: e.key.Tag, Style: e.key.Style, Value: e.key.Value})
		if err != nil {
			return err
		}
		line := kt + ": " + text
		eol := lineEnding(d.lines[e.start])
		if c := trailingComment(d.lines[e.start], e); c != "" && e.end-e.start == 1 {
			withComment := d.clone(spliced(d.lines, e.start, e.end, line+c+eol))
			if verify(withComment, d.keys, key, ok) == nil {
				d.adopt(withComment)
				return nil
			}
		}
		repl = []string{line + eol}
	}
	return d.commit(spliced(d.lines, e.start, e.end, repl...), key, ok)
}

func spliced(lines []string, start, end int, repl ...string) []string {
	return slices.Concat(lines[:start], repl, lines[end:])
}

// clone returns a copy of d with new header lines (not yet indexed).
func (d *Doc) clone(lines []string) *Doc {
	nd := *d
	nd.lines = lines
	nd.keys = nil
	if nd.open == "" {
		nd.open, nd.close = "---"+d.eol, "---"+d.eol
	}
	return &nd
}

func (d *Doc) adopt(nd *Doc) {
	d.open, d.close, d.lines, d.keys = nd.open, nd.close, nd.lines, nd.keys
}

func (d *Doc) commit(lines []string, key string, ok func(*Doc) bool) error {
	nd := d.clone(lines)
	if err := verify(nd, d.keys, key, ok); err != nil {
		return err
	}
	d.adopt(nd)
	return nil
}

// verify indexes the lines of nd, an edited copy, and checks the edit of key
// against old, the keys before the edit.
func verify(nd *Doc, old []entry, key string, ok func(*Doc) bool) error {
	size := 0
	for _, l := range nd.lines {
		size += len(l)
	}
	if size > MaxHeaderBytes {
		return fmt.Errorf("%w: the header would be %d bytes, the limit is %d", ErrTooLarge, size, MaxHeaderBytes)
	}
	keys, err := index(nd.lines)
	if err != nil {
		for _, e := range old {
			if e.name == key {
				if a := anchorIn(e.val, 0); a != "" {
					return fmt.Errorf("the value of %q defines the anchor &%s that another key uses; edit the file by hand: %w", key, a, err)
				}
			}
		}
		return fmt.Errorf("the edited header would not parse: %w", err)
	}
	nd.keys = keys
	if !ok(nd) {
		return fmt.Errorf("%w: the value would not read back as written", ErrInvalidYAML)
	}
	return verifyOthers(old, nd, key)
}

// verifyOthers reports the first key of old, other than key, whose value
// differs in nd.
func verifyOthers(old []entry, nd *Doc, key string) error {
	now := make(map[string]*yaml.Node, len(nd.keys))
	for _, e := range nd.keys {
		now[e.name] = e.val
	}
	budget := canonicalBudget
	for _, e := range old {
		if e.name == key {
			continue
		}
		nv, ok := now[e.name]
		if !ok {
			return fmt.Errorf("%w: the edit would remove the key %q", ErrInvalidYAML, e.name)
		}
		was, is := canonical(e.val, &budget), canonical(nv, &budget)
		if budget < 0 {
			return fmt.Errorf("%w: the header's aliases expand to too many values to check the edit safely", ErrInvalidYAML)
		}
		if was != is {
			return fmt.Errorf("%w: the edit would change the value of %q (an anchor or alias spans both keys)", ErrInvalidYAML, e.name)
		}
	}
	return nil
}

// canonicalBudget bounds the nodes canonical visits while checking one
// edit, so that alias bombs and self-referencing aliases cannot blow it up: a
// header over budget refuses the edit. A 64 KiB header without aliases has
// far fewer nodes.
const canonicalBudget = 1 << 18

// maxCanonicalDepth bounds nesting (aliases included) the same way.
const maxCanonicalDepth = 64

// canonical renders a value's structure (kind, tag, scalar values, aliases
// expanded) without comments, styles or positions. It sets *budget below
// zero when the value is too large or too deep to render.
func canonical(n *yaml.Node, budget *int) string {
	var b strings.Builder
	writeCanonical(&b, n, budget, 0)
	return b.String()
}

func writeCanonical(b *strings.Builder, n *yaml.Node, budget *int, depth int) {
	*budget--
	if depth > maxCanonicalDepth {
		*budget = -1
	}
	if *budget < 0 {
		return
	}
	if n == nil {
		b.WriteString("~nil")
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		writeCanonical(b, n.Alias, budget, depth+1)
		return
	case yaml.ScalarNode:
		b.WriteString(n.ShortTag())
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(n.Value))
		return
	}
	fmt.Fprintf(b, "%d%s[", n.Kind, n.ShortTag())
	for _, c := range n.Content {
		writeCanonical(b, c, budget, depth+1)
		b.WriteByte(',')
	}
	b.WriteByte(']')
}

// anchorIn returns the first anchor defined in n or below it, or "".
func anchorIn(n *yaml.Node, depth int) string {
	if n == nil || depth > 100 {
		return ""
	}
	if n.Anchor != "" {
		return n.Anchor
	}
	for _, c := range n.Content {
		if a := anchorIn(c, depth+1); a != "" {
			return a
		}
	}
	return ""
}

// trailingComment returns the whitespace and comment that end a one-line
// key's line, as YAML parsed them, or "".
func trailingComment(line string, e *entry) string {
	c := cmp.Or(e.val.LineComment, e.key.LineComment)
	if c == "" || strings.Contains(c, "\n") {
		return ""
	}
	content := strings.TrimRight(line, "\r\n")
	if !strings.HasSuffix(content, c) {
		return ""
	}
	before := content[:len(content)-len(c)]
	gap := before[len(strings.TrimRight(before, " \t")):]
	if gap == "" {
		return ""
	}
	return gap + c
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// cutLine returns the first line of s including its "\n" (if any) and the
// rest.
func cutLine(s string) (line, rest string) {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i+1], s[i+1:]
	}
	return s, ""
}

func lineEnding(line string) string {
	switch {
	case strings.HasSuffix(line, "\r\n"):
		return "\r\n"
	case strings.HasSuffix(line, "\n"):
		return "\n"
	}
	return ""
}

// isFence reports whether line is "---" followed by optional spaces or tabs
// and a line ending.
func isFence(line string) bool {
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	return strings.TrimRight(line, " \t") == "---"
}

// invalid builds an ErrInvalidYAML at a 1-based header line (0: unknown).
func invalid(headerLine int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if headerLine > 0 {
		// File line: the opening fence is line 1.
		return fmt.Errorf("%w at line %d: %s", ErrInvalidYAML, headerLine+1, msg)
	}
	return fmt.Errorf("%w: %s", ErrInvalidYAML, msg)
}

// index parses header lines and locates every top-level key.
func index(lines []string) (keys []entry, err error) {
	for i, l := range lines {
		content := strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		if strings.ContainsAny(content, "\r\u0085\u2028\u2029") {
			return nil, invalid(i+1, "a lone carriage return or a Unicode line or paragraph separator (U+0085, U+2028, U+2029): use \\n or \\r\\n line endings, or escape it in a double-quoted string")
		}
		if strings.HasPrefix(content, "...") && strings.TrimRight(content, " \t") == "..." {
			return nil, invalid(i+1, "a YAML document end marker (...) is not allowed in frontmatter")
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	header := strings.Join(lines, "")
	defer func() {
		if r := recover(); r != nil {
			keys, err = nil, invalid(0, "the YAML parser failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(header))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // only comments and blank lines
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlError(err)
		}
		return nil, invalid(extra.Line, "the header holds more than one YAML document")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, invalid(root.Line, "the header must be a mapping of keys to values, not a %s", kindName(root.Kind))
	}
	if root.Style&yaml.FlowStyle != 0 {
		return nil, invalid(root.Line, "write the header as one \"key: value\" per line, not as a {flow} mapping")
	}
	seen := make(map[string]int, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, invalid(k.Line, "top-level keys must be plain or quoted scalars, not a %s", kindName(k.Kind))
		}
		if k.Column != 1 || k.Line < 1 || k.Line > len(lines) {
			return nil, invalid(k.Line, "top-level key %q must start at column 1", k.Value)
		}
		if c := lines[k.Line-1][0]; c == '?' || c == ' ' || c == '\t' {
			return nil, invalid(k.Line, "top-level key %q must be written as \"key: value\" on its line", k.Value)
		}
		if prev, dup := seen[k.Value]; dup {
			return nil, invalid(k.Line, "key %q is repeated (first at line %d)", k.Value, prev+1)
		}
		if n := len(keys); n > 0 && keys[n-1].start >= k.Line-1 {
			return nil, invalid(k.Line, "key %q shares its line with %q: one key per line", k.Value, keys[n-1].name)
		}
		seen[k.Value] = k.Line
		keys = append(keys, entry{name: k.Value, start: k.Line - 1, key: k, val: v})
	}
	for i := range keys {
		end := len(lines)
		if i+1 < len(keys) {
			end = keys[i+1].start
		}
		for end > keys[i].start+1 && detached(lines[end-1]) {
			end--
		}
		keys[i].end = end
	}
	return keys, nil
}

// detached reports whether a line after a value is not part of it: blank,
// or a comment starting at column 1.
func detached(line string) bool {
	t := strings.TrimRight(line, "\r\n")
	return strings.TrimSpace(t) == "" || strings.HasPrefix(t, "#")
}

func kindName(k yaml.Kind) string {
	names := map[yaml.Kind]string{yaml.SequenceNode: "list", yaml.MappingNode: "mapping", yaml.ScalarNode: "scalar", yaml.AliasNode: "alias"}
	return cmp.Or(names[k], "document")
}

// yamlError turns a yaml.v3 error into ErrInvalidYAML with a file line.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, text, found := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); found && err == nil {
			return invalid(n, "%s", text)
		}
	}
	return invalid(0, "%s", msg)
}
