package toolspec

import (
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// noteArgs are a tool's own arguments; oldNote the predecessor's.
type noteArgs struct {
	Title  string `json:"title"`
	Body   string `json:"body"`
	Wing   string `json:"wing"`
	Legacy bool   `json:"-"`
}

type oldNote struct {
	Content  string `json:"content"`
	Filename string `json:"filename"`
	Size     *int   `json:"size"`
	Wing     string `json:"wing"`
}

func legacySpec() *Spec {
	return &Spec{
		Name: "note_tool", Description: "A tool of the tests.",
		Args: []Arg{
			{Name: "title", Type: String, Required: true, MaxBytes: 20},
			{Name: "body", Type: String, Required: true},
			{Name: "wing", Type: String, Route: RouteWing},
		},
		Legacy: LegacyShape([]Arg{
			{Name: "content", Type: String, Required: true},
			{Name: "filename", Type: String, Route: RoutePath, Check: func(name, v string) error {
				if strings.Contains(v, "..") {
					return brain.Errorf(brain.CodeInvalidArgument, "%s escapes", name)
				}
				return nil
			}},
			{Name: "size", Type: Integer},
			{Name: "wing", Type: String, Route: RouteWing},
		}, "The old call.", func(l *oldNote, a *noteArgs) error {
			if l.Content == "refuse" {
				return brain.Errorf(brain.CodeInvalidArgument, "content refused")
			}
			a.Title, a.Body, a.Wing, a.Legacy = l.Filename, l.Content, l.Wing, true
			if l.Size != nil {
				a.Title += "#" + strings.Repeat("x", *l.Size)
			}
			return nil
		}),
	}
}

func TestLegacyDecode(t *testing.T) {
	s := legacySpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args string
		inMsg      string // "" for success
		want       noteArgs
	}{
		{name: "own shape", args: `{"title":"t","body":"b"}`, want: noteArgs{Title: "t", Body: "b"}},
		{name: "legacy shape", args: `{"content":"c","filename":"f","wing":"w"}`, want: noteArgs{Title: "f", Body: "c", Wing: "w", Legacy: true}},
		{name: "an absent *int stays nil, 0 is 0", args: `{"content":"c","filename":"f","size":0}`, want: noteArgs{Title: "f#", Body: "c", Legacy: true}},
		{name: "mixed", args: `{"content":"c","title":"t","filename":"f"}`,
			inMsg: `mix two shapes of note_tool: "content", "filename" of the predecessor's (content, filename, size, wing) and "title" of Brainstem's (title, body, wing)`},
		{name: "a name of neither, beside a legacy one: the legacy shape's refusal", args: `{"content":"c","colour":1}`, inMsg: `unknown argument "colour"; this tool accepts: content, filename, size, wing`},
		{name: "a name of neither alone: the tool's own refusal", args: `{"colour":1,"wing":"w"}`, inMsg: `unknown argument "colour"; this tool accepts: title, body, wing`},
		{name: "shared names only, the legacy shape has its own: the tool's shape", args: `{"wing":"w"}`, inMsg: "title is required"},
		{name: "the legacy shape's checks", args: `{"content":"c","filename":"../x"}`, inMsg: "filename escapes"},
		{name: "the legacy shape's required", args: `{"filename":"f"}`, inMsg: "content is required"},
		{name: "the legacy shape's types", args: `{"content":7}`, inMsg: `"content" must be a string, not number`},
		{name: "the mapping's refusal", args: `{"content":"refuse"}`, inMsg: "content refused"},
		{name: "the mapped arguments are checked as the tool's", args: `{"content":"c","filename":"f","size":30}`, inMsg: "title is 32 bytes"},
		{name: "trailing data", args: `{"content":"c"} {}`, inMsg: "nothing after it"},
		{name: "not JSON: the tool's refusal", args: `{"content":`, inMsg: "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got noteArgs
			err := s.Decode([]byte(tc.args), &got)
			if tc.inMsg == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Decode(%s) = %+v, %v; want %+v", tc.args, got, err, tc.want)
				}
				return
			}
			e, ok := brain.As(err)
			if !ok || e.Code != brain.CodeInvalidArgument && e.Code != brain.CodeTooLarge || !strings.Contains(e.Message, tc.inMsg) {
				t.Fatalf("Decode(%s) = %v; want a refusal containing %q", tc.args, err, tc.inMsg)
			}
		})
	}
}

// A legacy shape without names of its own (brain_query's {query, limit}):
// a call of shared names is the predecessor's, with its defaults.
func TestLegacyWithoutOwnNames(t *testing.T) {
	type own struct {
		Query  string `json:"query"`
		Limit  int    `json:"limit"`
		Scope  string `json:"scope"`
		Legacy bool   `json:"-"`
	}
	type old struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	s := &Spec{Name: "q", Description: "d",
		Args: []Arg{{Name: "query", Type: String, Required: true}, {Name: "limit", Type: Integer, Min: Int(1), Max: Int(50), Default: 10},
			{Name: "scope", Type: String}},
		Legacy: LegacyShape([]Arg{{Name: "query", Type: String, Required: true}, {Name: "limit", Type: Integer, Min: Int(1), Max: Int(50), Default: 5}},
			"d", func(l *old, a *own) error {
				a.Query, a.Limit, a.Scope, a.Legacy = l.Query, l.Limit, "all", true
				return nil
			})}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]own{
		`{"query":"x"}`:                      {Query: "x", Limit: 5, Scope: "all", Legacy: true},
		`{"query":"x","limit":2}`:            {Query: "x", Limit: 2, Scope: "all", Legacy: true},
		`{"query":"x","scope":"wiki"}`:       {Query: "x", Limit: 10, Scope: "wiki"},
		`{"query":"x","limit":2,"scope":""}`: {Query: "x", Limit: 2},
	} {
		var got own
		if err := s.Decode([]byte(args), &got); err != nil || got != want {
			t.Errorf("Decode(%s) = %+v, %v; want %+v", args, got, err, want)
		}
	}
	var got own
	if err := s.Decode([]byte(`{"query":"x","colour":1}`), &got); err == nil || !strings.Contains(err.Error(), "this tool accepts: query, limit, scope") {
		t.Errorf("an unknown name: %v", err)
	}
}

func TestLegacyDeclaration(t *testing.T) {
	s := legacySpec()
	if got := s.Routes(); len(got) != 2 || got[0] != (RouteArg{"wing", RouteWing}) || got[1] != (RouteArg{"filename", RoutePath}) {
		t.Errorf("Routes = %v: the tool's, then the legacy shape's own", got)
	}
	if tbl := s.LegacyTable(); !strings.Contains(tbl, "| `content` | string | yes |") || !strings.Contains(tbl, "| `size` | integer | no |") {
		t.Errorf("LegacyTable:\n%s", tbl)
	}
	if (&Spec{Name: "x", Description: "d"}).LegacyTable() != "" {
		t.Error("a tool without a legacy shape has a legacy table")
	}
	bad := legacySpec()
	bad.Legacy.Args = append(bad.Legacy.Args, Arg{Name: "title", Type: Integer})
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "title is a integer here and a string") {
		t.Errorf("a shared name of another type: %v", err)
	}
	noField := legacySpec()
	noField.Legacy.Args = append(noField.Legacy.Args, Arg{Name: "colour", Type: String})
	if err := noField.Validate(); err == nil || !strings.Contains(err.Error(), `no field tagged json:"colour"`) {
		t.Errorf("a legacy argument without a field: %v", err)
	}
	if err := (&Spec{Name: "x", Description: "d", Legacy: &Legacy{Doc: "same call"}}).Validate(); err != nil {
		t.Errorf("a legacy shape that is the tool's own: %v", err)
	}
	if err := (&Spec{Name: "x", Description: "d", Legacy: &Legacy{}}).Validate(); err == nil {
		t.Error("a legacy shape without Doc is accepted")
	}
}
