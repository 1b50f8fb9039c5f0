package toolspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

type pageArgs struct {
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
}

type common struct {
	Wing string `json:"wing"`
}

type testArgs struct {
	Query string          `json:"query"`
	Limit int             `json:"limit"`
	Hall  string          `json:"hall"`
	Pages []pageArgs      `json:"pages"`
	Entry json.RawMessage `json:"entry"`
	Dry   bool            `json:"dry"`
	common
}

func testSpec() *Spec {
	return &Spec{
		Name: "test_tool", Description: "A tool of the tests.", Needs: brain.CapWrite,
		Args: []Arg{
			{Name: "query", Type: String, Required: true, MaxBytes: 10, Line: true, TooLarge: "use fewer words"},
			{Name: "limit", Type: Integer, Min: Int(1), Max: Int(5), Default: 3},
			{Name: "hall", Type: String, Enum: []string{"facts", "decisions"}},
			{Name: "pages", Type: Array, Max: Int(2), Items: &Arg{Type: Object, Props: []Arg{
				{Name: "title", Type: String, Required: true, Check: func(name, v string) error {
					if v == "bad" {
						return brain.Errorf(brain.CodeInvalidArgument, "%s is bad", name)
					}
					return nil
				}},
				{Name: "tags", Type: Array, Items: &Arg{Type: String, Required: true}},
			}}},
			{Name: "entry", Type: Object},
			{Name: "dry", Type: Boolean},
			{Name: "wing", Type: String, Route: RouteWing},
		},
	}
}

func TestDecode(t *testing.T) {
	s := testSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args string
		code       brain.Code // "" for success
		inMsg      string
		want       testArgs
	}{
		{name: "minimal", args: `{"query":"x"}`, want: testArgs{Query: "x", Limit: 3}},
		{name: "all", args: `{"query":"x","limit":5,"hall":"facts","pages":[{"title":"t","tags":["a"]}],"entry":{"k":1},"dry":true,"wing":"w"}`,
			want: testArgs{Query: "x", Limit: 5, Hall: "facts", Pages: []pageArgs{{Title: "t", Tags: []string{"a"}}}, Entry: json.RawMessage(`{"k":1}`), Dry: true, common: common{"w"}}},
		{name: "null limit keeps the default", args: `{"query":"x","limit":null}`, want: testArgs{Query: "x", Limit: 3}},
		{name: "duplicate key: the last wins", args: `{"query":"a","query":"b"}`, want: testArgs{Query: "b", Limit: 3}},
		{name: "escaped key", args: `{"q\u0075ery":"x"}`, want: testArgs{Query: "x", Limit: 3}},
		{name: "empty arguments", args: ``, code: brain.CodeInvalidArgument, inMsg: "query is required and must not be blank"},
		{name: "null arguments", args: `null`, code: brain.CodeInvalidArgument, inMsg: "query is required"},
		{name: "not an object", args: `[1]`, code: brain.CodeInvalidArgument, inMsg: "must be a JSON object"},
		{name: "trailing data", args: `{"query":"x"} {}`, code: brain.CodeInvalidArgument, inMsg: "nothing after it"},
		{name: "syntax", args: `{"query":}`, code: brain.CodeInvalidArgument, inMsg: "not valid JSON"},
		{name: "cut short", args: `{"query":"x"`, code: brain.CodeInvalidArgument, inMsg: "not valid JSON"},
		{name: "case-folded key", args: `{"QUERY":"x"}`, code: brain.CodeInvalidArgument, inMsg: `unknown argument "QUERY"`},
		{name: "long s key", args: `{"query":"x","\u017fry":true}`, code: brain.CodeInvalidArgument, inMsg: "unknown argument"},
		{name: "nested unknown", args: `{"query":"x","pages":[{"title":"t","Title":"u"}]}`, code: brain.CodeInvalidArgument, inMsg: `unknown argument "Title" in pages[0]`},
		{name: "wrong type", args: `{"query":7}`, code: brain.CodeInvalidArgument, inMsg: `"query" must be a string, not number`},
		{name: "float limit", args: `{"query":"x","limit":1.5}`, code: brain.CodeInvalidArgument, inMsg: `"limit" must be an integer`},
		{name: "pages not an array", args: `{"query":"x","pages":{}}`, code: brain.CodeInvalidArgument, inMsg: `"pages" must be an array`},
		{name: "page not an object", args: `{"query":"x","pages":["t"]}`, code: brain.CodeInvalidArgument, inMsg: `"pages[0]" must be an object`},
		{name: "entry not an object", args: `{"query":"x","entry":"text"}`, code: brain.CodeInvalidArgument, inMsg: `"entry" must be a JSON object`},
		{name: "blank", args: `{"query":"  "}`, code: brain.CodeInvalidArgument, inMsg: "query is required and must not be blank"},
		{name: "too long", args: `{"query":"12345678901"}`, code: brain.CodeTooLarge, inMsg: "11 bytes, over the 10-byte limit: use fewer words"},
		{name: "not one line", args: `{"query":"a\nb"}`, code: brain.CodeInvalidArgument, inMsg: "one line"},
		{name: "limit low", args: `{"query":"x","limit":0}`, code: brain.CodeInvalidArgument, inMsg: "limit must be between 1 and 5, got 0"},
		{name: "enum", args: `{"query":"x","hall":"gossip"}`, code: brain.CodeInvalidArgument, inMsg: "hall must be one of facts, decisions"},
		{name: "too many items", args: `{"query":"x","pages":[{"title":"a"},{"title":"b"},{"title":"c"}]}`, code: brain.CodeTooLarge, inMsg: "pages has 3 items, the limit is 2"},
		{name: "item check", args: `{"query":"x","pages":[{"title":"ok"},{"title":"bad"}]}`, code: brain.CodeInvalidArgument, inMsg: "pages[1].title is bad"},
		{name: "item required", args: `{"query":"x","pages":[{"tags":["a"]}]}`, code: brain.CodeInvalidArgument, inMsg: "pages[0].title is required"},
		{name: "blank string item", args: `{"query":"x","pages":[{"title":"t","tags":[""]}]}`, code: brain.CodeInvalidArgument, inMsg: "pages[0].tags[0] is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got testArgs
			err := s.Decode([]byte(tc.args), &got)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("decoded %+v, want %+v", got, tc.want)
				}
				return
			}
			e, ok := brain.As(err)
			if !ok || e.Code != tc.code || !strings.Contains(e.Message, tc.inMsg) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.code, tc.inMsg)
			}
		})
	}
}

// TestReported: a Reported array's items are checked by CheckItem, not by
// Decode.
func TestReported(t *testing.T) {
	s := testSpec()
	s.Args[3].Reported = true
	var a testArgs
	if err := s.Decode([]byte(`{"query":"x","pages":[{"title":"bad"}]}`), &a); err != nil {
		t.Fatalf("Decode checked a reported item: %v", err)
	}
	if err := s.CheckItem("pages", 0, &a.Pages[0]); err == nil || !strings.Contains(err.Error(), "pages[0].title is bad") {
		t.Fatalf("CheckItem = %v", err)
	}
}

func TestValidateRefusesBadDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []Arg
	}{
		{"duplicate", []Arg{{Name: "a", Type: String}, {Name: "a", Type: String}}},
		{"unknown type", []Arg{{Name: "a", Type: "float"}}},
		{"array without items", []Arg{{Name: "a", Type: Array}}},
		{"route on an integer", []Arg{{Name: "a", Type: Integer, Route: RouteWing}}},
		{"limits without a default", []Arg{{Name: "a", Type: Integer, Max: Int(3)}}},
		{"enum on a boolean", []Arg{{Name: "a", Type: Boolean, Enum: []string{"x"}}}},
	} {
		s := &Spec{Name: "t", Description: "d", Args: tc.args}
		if err := s.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", tc.name)
		}
	}
}

func TestMetaRoundTrip(t *testing.T) {
	s := testSpec()
	s.Args = append(s.Args, Arg{Name: "id", Type: String, Route: RouteRef})
	s.Fanout = FanoutSearch
	s.CrossLinks = &CrossLinks{From: "moved_from", Ask: "brain_links", Into: "linked_from_other_wings"}
	var d struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(s.Descriptor(), &d); err != nil {
		t.Fatal(err)
	}
	m, err := ParseMeta(d.Meta)
	if err != nil {
		t.Fatal(err)
	}
	want := Meta{Needs: brain.CapWrite, Routes: []RouteArg{{"wing", RouteWing}, {"id", RouteRef}}, Fanout: FanoutSearch, CrossLinks: s.CrossLinks}
	if !reflect.DeepEqual(m, want) || !m.Writes() {
		t.Fatalf("meta %+v, want %+v", m, want)
	}
	for _, bad := range []map[string]any{
		{MetaCapability: "admin"},
		{MetaRoute: "wing"},
		{MetaRoute: []any{map[string]any{"arg": "wing", "as": "elsewhere"}}},
		{MetaFanout: "all"},
		{MetaCrossLinks: "moved_from"},
		{MetaCrossLinks: map[string]any{"from": "moved_from", "ask": "brain_links"}},
		{MetaCrossLinks: map[string]any{"from": "Moved-From", "ask": "brain_links", "into": "x"}},
		{MetaCrossLinks: map[string]any{"from": "a", "ask": strings.Repeat("b", 65), "into": "c"}},
	} {
		if _, err := ParseMeta(bad); err == nil {
			t.Errorf("ParseMeta(%v) accepted it", bad)
		}
	}
}

// FuzzDecode: Decode never panics, refuses only with invalid_argument or
// too_large, and what it accepts encoding/json decodes to the same values
// (names being exact, a key it accepts is one encoding/json maps to the
// same field).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"query":"x"}`, `{"query":"x","limit":2,"pages":[{"title":"t","tags":["a"]}],"entry":{}}`, `{"QUERY":1}`, `[`, `{"query":"\u017f"}`} {
		f.Add(seed)
	}
	s := testSpec()
	f.Fuzz(func(t *testing.T, args string) {
		var got testArgs
		err := s.Decode([]byte(args), &got)
		if err != nil {
			e, ok := brain.As(err)
			if !ok || (e.Code != brain.CodeInvalidArgument && e.Code != brain.CodeTooLarge) {
				t.Fatalf("Decode(%q) = %v", args, err)
			}
			return
		}
		want := testArgs{Limit: 3}
		if err := json.Unmarshal([]byte(args), &want); err != nil && strings.TrimSpace(args) != "" {
			t.Fatalf("Decode accepted %q, encoding/json refuses it: %v", args, err)
		}
		if !reflect.DeepEqual(normal(got), normal(want)) {
			t.Fatalf("Decode(%q) = %+v, encoding/json %+v", args, got, want)
		}
	})
}

// normal compacts the raw entry, which the two decoders copy alike but a
// test compares as values.
func normal(a testArgs) testArgs {
	if len(a.Entry) > 0 {
		var v any
		_ = json.Unmarshal(a.Entry, &v)
		a.Entry, _ = json.Marshal(v)
	}
	if len(a.Pages) == 0 {
		a.Pages = nil
	}
	for i := range a.Pages {
		if len(a.Pages[i].Tags) == 0 {
			a.Pages[i].Tags = nil
		}
	}
	return a
}
