package frontmatter

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const example = "---\n" +
	"title: Use idempotency keys\n" +
	"wing: payments\n" +
	"hall: decisions\n" +
	"tags: [api, reliability]   # comment kept\n" +
	"created_at: 2026-01-05T10:00:00Z\n" +
	"custom_field: kept as is\n" +
	"---\n" +
	"Body markdown…\n"

// roundTrips are inputs Parse must accept and reproduce byte for byte.
var roundTrips = []struct {
	name, in, body string
	keys           []string
}{
	{"example", example, "Body markdown…\n", []string{"title", "wing", "hall", "tags", "created_at", "custom_field"}},
	{"no header", "# Title\n\nText\n", "# Title\n\nText\n", nil},
	{"empty input", "", "", nil},
	{"empty header", "---\n---\nbody", "body", nil},
	{"header only, no final newline", "---\na: 1\n---", "", []string{"a"}},
	{"header at EOF with newline", "---\na: 1\n---\n", "", []string{"a"}},
	{"crlf", "---\r\ntitle: x\r\ntags:\r\n  - a\r\n---\r\nbody\r\n", "body\r\n", []string{"title", "tags"}},
	{"mixed line endings", "---\ntitle: x\r\nb: 2\n---\r\nbody\n", "body\n", []string{"title", "b"}},
	{"bom", "\ufeff---\ntitle: x\n---\nbody\n", "body\n", []string{"title"}},
	{"bom without header", "\ufeffbody\n", "body\n", nil},
	{"fence with trailing blanks", "--- \t\ntitle: x\n---  \nbody\n", "body\n", []string{"title"}},
	{"only comments", "---\n# nothing here\n\n---\nbody\n", "body\n", nil},
	{"null document", "---\n~\n---\n", "", nil},
	{"body with more fences", "---\na: 1\n---\n---\nnot a header\n---\n", "---\nnot a header\n---\n", []string{"a"}},
	{"horizontal rule is not a fence", "----\ntext\n", "----\ntext\n", nil},
	{"not a fence", "--- title\ntext\n", "--- title\ntext\n", nil},
	{"block scalars and comments", "---\n# lead\na: |\n  x\n\n  # y\nb: >-\n  folded\n# tail\n---\n", "", []string{"a", "b"}},
	{"anchors", "---\na: &x [1, 2]\nb: *x\n---\n", "", []string{"a", "b"}},
	{"quoted keys", "---\n\"true\": 1\n'a: b': 2\n---\n", "", []string{"true", "a: b"}},
	{"multi-line quoted at column 1", "---\na: \"x\ny\"\nb: 2\n---\n", "", []string{"a", "b"}},
	{"block list at column 1", "---\ntags:\n- a\n- b\nnext: 1\n---\n", "", []string{"tags", "next"}},
	{"no trailing newline in body", "---\na: 1\n---\nbody", "body", []string{"a"}},
	{"windows-1252 body", "---\na: 1\n---\n\x93quoted\x94\n", "\x93quoted\x94\n", []string{"a"}},
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range roundTrips {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := string(d.Bytes()); got != tt.in {
				t.Fatalf("Bytes() = %q, want %q", got, tt.in)
			}
			if d.Body() != tt.body {
				t.Errorf("Body() = %q, want %q", d.Body(), tt.body)
			}
			if got := d.Keys(); !slices.Equal(got, tt.keys) && len(got)+len(tt.keys) > 0 {
				t.Errorf("Keys() = %q, want %q", got, tt.keys)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	big := "---\n" + strings.Repeat("k: "+strings.Repeat("v", 60)+"\n", MaxHeaderBytes/64+1) + "---\n"
	tests := []struct {
		name, in string
		want     error
		msg      string // substring of the message
	}{
		{"never closed", "---\ntitle: x\nbody\n", ErrUnterminated, "closing ---"},
		{"only the fence", "---", ErrUnterminated, "closing ---"},
		{"fence and newline", "---\n", ErrUnterminated, "closing ---"},
		{"last line has no newline", "---\ntitle: x", ErrUnterminated, ""},
		{"too large", big, ErrTooLarge, "65536"},
		{"too large and unterminated", "---\n" + strings.Repeat("x", MaxHeaderBytes+10), ErrTooLarge, ""},
		{"bad yaml with line", "---\ntitle: ok\nbad: : x\n---\n", ErrInvalidYAML, "line 3"},
		{"bad indentation", "---\na: 1\n  b: 2\n---\n", ErrInvalidYAML, "line 3"},
		{"tab indentation", "---\na:\n\t- x\n---\n", ErrInvalidYAML, "line 3"},
		{"unclosed quote", "---\na: \"x\n---\n", ErrInvalidYAML, ""},
		{"duplicate key", "---\na: 1\nb: 2\na: 3\n---\n", ErrInvalidYAML, `key "a" is repeated (first at line 2)`},
		{"list header", "---\n- a\n- b\n---\n", ErrInvalidYAML, "not a list"},
		{"scalar header", "---\njust text\n---\n", ErrInvalidYAML, "not a scalar"},
		{"flow mapping header", "---\n{a: 1, b: 2}\n---\n", ErrInvalidYAML, "one \"key: value\" per line"},
		{"indented mapping", "---\n  a: 1\n  b: 2\n---\n", ErrInvalidYAML, "column 1"},
		{"explicit key", "---\n? a\n: 1\n---\n", ErrInvalidYAML, ""},
		{"complex key", "---\n[a, b]: 1\n---\n", ErrInvalidYAML, "plain or quoted scalars"},
		{"lone carriage return", "---\na: 1\rb: 2\n---\n", ErrInvalidYAML, "line 2"},
		{"line separator", "---\na: x\u2028y\n---\n", ErrInvalidYAML, "U+2028"},
		{"next line", "---\na: x\u0085y\n---\n", ErrInvalidYAML, "U+0085"},
		{"document end marker", "---\na: 1\n...\n---\n", ErrInvalidYAML, "document end"},
		{"unknown alias", "---\na: *nope\n---\n", ErrInvalidYAML, "unknown anchor"},
		{"control character", "---\na: \x01\n---\n", ErrInvalidYAML, ""},
		{"invalid utf-8", "---\na: \xff\n---\n", ErrInvalidYAML, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse accepted it: %q", d.Bytes())
			}
			if d != nil {
				t.Error("Parse returned a Doc with an error")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %q does not wrap %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "frontmatter: ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q: want the package prefix and %q", err, tt.msg)
			}
		})
	}
}

func TestGetStringsKeys(t *testing.T) {
	in := "---\n" +
		"title: \"Quoted: title\"\n" +
		"plain: value   # comment\n" +
		"empty:\n" +
		"tilde: ~\n" +
		"num: 42\n" +
		"block: |\n  line 1\n  line 2\n" +
		"flow: [a, 'b, c', \"d\"]\n" +
		"blocklist:\n  - x\n  - ~\n  - [nested]\n  - y\n" +
		"emptylist: []\n" +
		"map:\n  k: v\n" +
		"anchor: &a anchored\n" +
		"alias: *a\n" +
		"listalias: *l\n" +
		"---\n"
	in = strings.Replace(in, "flow: [a,", "flow: &l [a,", 1)
	d, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	gets := []struct {
		key, want string
		ok        bool
	}{
		{"title", "Quoted: title", true},
		{"plain", "value", true},
		{"empty", "", true},
		{"tilde", "", true},
		{"num", "42", true},
		{"block", "line 1\nline 2\n", true},
		{"anchor", "anchored", true},
		{"alias", "anchored", true},
		{"flow", "", false},
		{"map", "", false},
		{"missing", "", false},
		{"Title", "", false},
	}
	for _, g := range gets {
		v, ok := d.Get(g.key)
		if v != g.want || ok != g.ok {
			t.Errorf("Get(%q) = %q, %v; want %q, %v", g.key, v, ok, g.want, g.ok)
		}
	}
	lists := []struct {
		key  string
		want []string
	}{
		{"flow", []string{"a", "b, c", "d"}},
		{"blocklist", []string{"x", "y"}},
		{"listalias", []string{"a", "b, c", "d"}},
		{"emptylist", []string{}},
		{"plain", []string{"value"}},
		{"empty", nil},
		{"map", nil},
		{"missing", nil},
	}
	for _, l := range lists {
		got := d.Strings(l.key)
		if !slices.Equal(got, l.want) || (got == nil) != (l.want == nil) {
			t.Errorf("Strings(%q) = %#v, want %#v", l.key, got, l.want)
		}
	}
	want := []string{"title", "plain", "empty", "tilde", "num", "block", "flow", "blocklist", "emptylist", "map", "anchor", "alias", "listalias"}
	if got := d.Keys(); !slices.Equal(got, want) {
		t.Errorf("Keys() = %q, want %q", got, want)
	}
	keys := d.Keys()
	keys[0] = "mutated"
	if d.Keys()[0] != "title" {
		t.Error("Keys() exposes internal state")
	}
}

func TestCRLFEdits(t *testing.T) {
	in := "---\r\ntitle: Old\r\ntags:\r\n  - a\r\n# note\r\nkeep: yes\r\n---\r\nbody\r\n"
	d, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	d.Set("title", "New: title")
	d.SetStrings("tags", []string{"b", "c"})
	d.Set("added", "1")
	d.Delete("keep")
	want := "---\r\ntitle: 'New: title'\r\ntags: [b, c]\r\n# note\r\nadded: \"1\"\r\n---\r\nbody\r\n"
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	if got := string(d.Bytes()); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// A note with no header takes its line ending from the body.
	d, err = Parse([]byte("line\r\nline\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	d.Set("title", "x")
	if got := string(d.Bytes()); got != "---\r\ntitle: x\r\n---\r\nline\r\nline\r\n" {
		t.Fatalf("got %q", got)
	}
}

func TestTrailingComment(t *testing.T) {
	tests := []struct{ in, value, want string }{
		{"a: 1 # c\n", "2", "a: \"2\" # c\n"},
		{"a: x\t\t# tabs\n", "y", "a: y\t\t# tabs\n"},
		{"a: 'q # not a comment'\n", "z", "a: z\n"},
		{"a: 'q # not' # real\n", "z", "a: z # real\n"},
		{"a: # on the key\n", "v", "a: v # on the key\n"},
		{"a: x # c\n", "has # hash", "a: 'has # hash' # c\n"},
		{"a: [1, 2] # list\n", "s", "a: s # list\n"},
		{"a: x#not-a-comment\n", "y", "a: y\n"},
		{"a:\n  - x # inner\n", "y", "a: y\n"}, // a multi-line value's comments go with it
	}
	for _, tt := range tests {
		d, err := Parse([]byte("---\n" + tt.in + "---\n"))
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		d.Set("a", tt.value)
		if err := d.Err(); err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if got := string(d.Bytes()); got != "---\n"+tt.want+"---\n" {
			t.Errorf("Set on %q = %q, want %q", tt.in, got, "---\n"+tt.want+"---\n")
		}
		if v, _ := d.Get("a"); v != tt.value {
			t.Errorf("Get after Set on %q = %q", tt.in, v)
		}
	}
}

func TestSetValuesReadBack(t *testing.T) {
	values := []string{
		"", " ", "plain", "a: b", "#", "# x", "x #", "- x", "-", "?", "? x", ":", "[", "]", "{", "}", ",", "&a", "*a", "!tag", "|", ">", "%", "@", "`",
		"'", "\"", "\\", "true", "False", "yes", "no", "on", "off", "y", "n", "null", "Null", "~", "0", "-1", "0x1f", "0o17", "1_000", "1e3", ".5", ".inf", "-.Inf", ".nan",
		"2026-01-05", "2026-01-05T10:00:00Z", "2026-01-05 10:00:00", "2026-01-05T10:00:00.123+02:00", "10:00", "1:2:3",
		"\n", "\r\n", "a\nb", "a\n\nb\n\n", "\ttab", "trailing\t", "\u00a0nbsp", "\u2028", "\u0085", "\ufeffbom", "\x00nul", "\x7f", "\x1b[31m",
		"ünïcödé", "emoji 🚀", "日本語", strings.Repeat("long ", 400), "<<", "=", "!!str x", "---", "...", "--- x",
	}
	for _, v := range values {
		d, err := Parse([]byte(example))
		if err != nil {
			t.Fatal(err)
		}
		d.Set("title", v)
		d.Set("fresh", v)
		if err := d.Err(); err != nil {
			t.Errorf("Set(%q): %v", v, err)
			continue
		}
		d2, err := Parse(d.Bytes())
		if err != nil {
			t.Errorf("Set(%q) produced an unparseable note: %v\n%s", v, err, d.Bytes())
			continue
		}
		for _, k := range []string{"title", "fresh"} {
			if got, ok := d2.Get(k); !ok || got != v {
				t.Errorf("Set(%s, %q): Get after re-parse = %q, %v", k, v, got, ok)
			}
		}
		if got, _ := d2.Get("custom_field"); got != "kept as is" {
			t.Errorf("Set(%q) disturbed custom_field: %q", v, got)
		}
		if n := strings.Count(string(d.Bytes()), "\n"); n != strings.Count(example, "\n")+1 {
			t.Errorf("Set(%q) did not write one line per value:\n%s", v, d.Bytes())
		}
	}
	// Invalid UTF-8 is replaced, never written raw.
	d := New(nil, "")
	d.Set("bad", "a\xffb")
	if got, _ := d.Get("bad"); got != "a\uFFFDb" {
		t.Errorf("Get = %q", got)
	}
}

func TestSetStringsReadBack(t *testing.T) {
	lists := [][]string{nil, {}, {""}, {"a"}, {"a, b", "[c]", "{d}", "e: f", "# g", "'h'", "\"i\"", "j\nk", "true", "1", "", "~", "- l", "*m", "&n"}, {"\u2028", "\t"}}
	for _, l := range lists {
		d, err := Parse([]byte(example))
		if err != nil {
			t.Fatal(err)
		}
		d.SetStrings("tags", l)
		d.SetStrings("new_list", l)
		if err := d.Err(); err != nil {
			t.Errorf("SetStrings(%q): %v", l, err)
			continue
		}
		d2, err := Parse(d.Bytes())
		if err != nil {
			t.Fatalf("SetStrings(%q) produced an unparseable note: %v\n%s", l, err, d.Bytes())
		}
		for _, k := range []string{"tags", "new_list"} {
			got := d2.Strings(k)
			if len(got) != len(l) || (len(l) > 0 && !slices.Equal(got, l)) {
				t.Errorf("SetStrings(%s, %q): Strings = %q", k, l, got)
			}
		}
		if !strings.Contains(string(d.Bytes()), "   # comment kept\n") {
			t.Errorf("SetStrings(%q) lost the tags comment:\n%s", l, d.Bytes())
		}
	}
}

func TestEditsLeaveOtherLinesIdentical(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	d.Set("wing", "billing")
	want := strings.Replace(example, "wing: payments\n", "wing: billing\n", 1)
	if got := string(d.Bytes()); got != want {
		t.Fatalf("got %q", got)
	}
	d.Delete("hall")
	want = strings.Replace(want, "hall: decisions\n", "", 1)
	if got := string(d.Bytes()); got != want {
		t.Fatalf("got %q", got)
	}
	d.SetBody("New body\n")
	want = strings.Replace(want, "Body markdown…\n", "New body\n", 1)
	if got := string(d.Bytes()); got != want || d.Body() != "New body\n" {
		t.Fatalf("got %q", got)
	}
}

func TestBodyThatLooksLikeAHeader(t *testing.T) {
	d, err := Parse([]byte("plain body\n"))
	if err != nil {
		t.Fatal(err)
	}
	d.SetBody("---\ntitle: fake\n---\nrest\n")
	out := d.Bytes()
	d2, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Body() != "---\ntitle: fake\n---\nrest\n" || len(d2.Keys()) != 0 {
		t.Fatalf("body was read back as a header: %q", out)
	}
	n := New(nil, "---\n")
	if d3, err := Parse(n.Bytes()); err != nil || d3.Body() != "---\n" {
		t.Fatalf("New with a fence body: %q, %v", n.Bytes(), err)
	}
}

func TestInvalidKeysAndErr(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"title", true},
		{"created_at", true},
		{"with space", true},
		{"true", true},
		{"a: b", true},
		{"ключ", true},
		{strings.Repeat("k", MaxKeyBytes), true},
		{"", false},
		{strings.Repeat("k", MaxKeyBytes+1), false},
		{"a\nb", false},
		{"a\tb", false},
		{"a\x00b", false},
		{"a\u2028b", false},
		{"\xff", false},
		{"\ufeffbom", false},
	}
	for _, tt := range tests {
		err := ValidKey(tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("ValidKey(%q) = %v", tt.key, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidKey(%q) = %v does not wrap ErrInvalidKey", tt.key, err)
		}
		d, perr := Parse([]byte(example))
		if perr != nil {
			t.Fatal(perr)
		}
		d.Set(tt.key, "v")
		if tt.ok {
			if got, ok := d.Get(tt.key); d.Err() != nil || !ok || got != "v" {
				t.Errorf("Set(%q): %q, %v, %v", tt.key, got, ok, d.Err())
			}
			d2, err := Parse(d.Bytes())
			if err != nil || !slices.Contains(d2.Keys(), tt.key) {
				t.Errorf("Set(%q) wrote %q: %v", tt.key, d.Bytes(), err)
			}
			continue
		}
		if !errors.Is(d.Err(), ErrInvalidKey) {
			t.Errorf("Set(%q): Err() = %v, want ErrInvalidKey", tt.key, d.Err())
		}
		if string(d.Bytes()) != example {
			t.Errorf("Set(%q) changed the note", tt.key)
		}
	}
	// Err keeps the first failure; later valid edits still apply.
	d := New([][2]string{{"", "x"}, {"title", "ok"}, {"a\nb", "y"}}, "body")
	if !errors.Is(d.Err(), ErrInvalidKey) || !strings.Contains(d.Err().Error(), `set ""`) {
		t.Errorf("Err() = %v", d.Err())
	}
	if got := string(d.Bytes()); got != "---\ntitle: ok\n---\nbody" {
		t.Errorf("New = %q", got)
	}
}

func TestTooLargeEdit(t *testing.T) {
	d := New([][2]string{{"title", "x"}}, "body\n")
	big := strings.Repeat("v", MaxHeaderBytes)
	d.Set("big", big)
	if !errors.Is(d.Err(), ErrTooLarge) {
		t.Fatalf("Err() = %v, want ErrTooLarge", d.Err())
	}
	if got := string(d.Bytes()); got != "---\ntitle: x\n---\nbody\n" {
		t.Fatalf("refused edit changed the note: %q", got)
	}
	d2 := New(nil, "")
	d2.SetStrings("list", []string{big})
	if !errors.Is(d2.Err(), ErrTooLarge) {
		t.Fatalf("Err() = %v, want ErrTooLarge", d2.Err())
	}
	// Just under the limit is fine and parses back.
	d3 := New(nil, "")
	d3.Set("k", strings.Repeat("v", MaxHeaderBytes-len("k: \n")))
	if d3.Err() != nil {
		t.Fatal(d3.Err())
	}
	if _, err := Parse(d3.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func TestDecode(t *testing.T) {
	d, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m["title"] != "Use idempotency keys" || m["custom_field"] != "kept as is" {
		t.Errorf("Decode = %v", m)
	}
	if tags, ok := m["tags"].([]any); !ok || len(tags) != 2 {
		t.Errorf("tags = %#v", m["tags"])
	}
	var empty map[string]any
	if err := New(nil, "x").Decode(&empty); err != nil || len(empty) != 0 {
		t.Errorf("Decode of an empty header = %v, %v", empty, err)
	}
	var wrong struct{ Title int }
	if err := d.Decode(&wrong); err == nil || !strings.HasPrefix(err.Error(), "frontmatter: ") {
		t.Errorf("Decode into a mismatched struct: %v", err)
	}
}

func TestSetBodyAfterFenceAtEOF(t *testing.T) {
	d, err := Parse([]byte("---\r\na: 1\r\n---"))
	if err != nil {
		t.Fatal(err)
	}
	d.SetBody("")
	if got := string(d.Bytes()); got != "---\r\na: 1\r\n---" {
		t.Fatalf("empty body changed the note: %q", got)
	}
	d.SetBody("text\r\n")
	if got := string(d.Bytes()); got != "---\r\na: 1\r\n---\r\ntext\r\n" {
		t.Fatalf("got %q", got)
	}
	d2, err := Parse(d.Bytes())
	if err != nil || d2.Body() != "text\r\n" {
		t.Fatalf("re-parse: %v, %q", err, d2.Body())
	}
}
