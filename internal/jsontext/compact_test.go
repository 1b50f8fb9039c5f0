package jsontext

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// want is what encoding/json writes for src as a json.RawMessage.
func want(src []byte) ([]byte, bool) {
	b, err := json.Marshal(json.RawMessage(src))
	return b, err == nil
}

func check(t *testing.T, src []byte) {
	t.Helper()
	exp, ok := want(src)
	got, err := AppendCompact([]byte("prefix"), src)
	switch {
	case ok && err != nil:
		t.Fatalf("%q: refused (%v), encoding/json writes %q", src, err, exp)
	case !ok && err == nil:
		t.Fatalf("%q: accepted as %q, encoding/json refuses it", src, got)
	case !ok && !errors.Is(err, ErrSyntax):
		t.Fatalf("%q: error %v does not wrap ErrSyntax", src, err)
	case !ok && string(got) != "prefix":
		t.Fatalf("%q: refused but dst changed to %q", src, got)
	case ok && !bytes.Equal(got, append([]byte("prefix"), exp...)):
		t.Fatalf("%q:\n got %q\nwant %q", src, got[len("prefix"):], exp)
	}
}

var cases = []string{
	`{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, "{ \"a\" :\n\t[1, 2 ,3] }\r\n", `"x"`, `0`, `-0`, `1.5e10`, `-1.25E-3`, `1e+2`,
	`true`, `false`, `null`, `[true,false,null]`, `{"a":{"b":{"c":[]}}}`,
	`"<a href=\"x\">&amp;</a>"`, "\"line\u2028sep\u2029\"", `"\u00e9\n\t\\\/"`, "\"\xff\xfe invalid utf-8\"",
	`{"body":"# Title\n\nSome <b>markdown</b> & more","tags":["a","b"],"n":12}`,
	// refused
	``, ` `, `{`, `[`, `}`, `]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`, `01`, `-`, `1.`, `1e`, `.5`, `+1`,
	`tru`, `truex`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", `{} {}`, `1 2`, `[}`, `{]`, `"a"x`,
}

func TestAppendCompactAsEncodingJSON(t *testing.T) {
	for _, c := range cases {
		check(t, []byte(c))
	}
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	check(t, []byte(deep))
	check(t, []byte("["+deep+"]"))
}

func FuzzAppendCompact(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) { check(t, src) })
}

// BenchmarkAppendCompact: a 6 KB tool answer (brain_get's shape), ours
// against encoding/json's marshal of the same json.RawMessage.
func BenchmarkAppendCompact(b *testing.B) {
	body := strings.Repeat("Some <b>markdown</b> & prose, with \"quotes\" and a line.\n", 100)
	src, _ := json.Marshal(map[string]any{"id": "payments/decisions/x", "frontmatter": map[string]any{"title": "T", "tags": []string{"a", "b"}}, "body": body, "version": 3})
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		var dst []byte
		for b.Loop() {
			dst, _ = AppendCompact(dst[:0], src)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(json.RawMessage(src))
		}
	})
}
