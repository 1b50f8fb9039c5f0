package brain

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// checkErr asserts that err is nil when want is nil, and otherwise is an
// *Error with CodeInvalidArgument wrapping want.
func checkErr(t *testing.T, in string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("%q: unexpected error %v", in, err)
		}
		return
	}
	if err == nil {
		t.Errorf("%q: accepted, want an error wrapping %v", in, want)
		return
	}
	if !errors.Is(err, want) {
		t.Errorf("%q: error %q does not wrap %v", in, err, want)
	}
	if e, ok := As(err); !ok || e.Code != CodeInvalidArgument || e.Message == "" {
		t.Errorf("%q: error %q is not an *Error with code %s and a message", in, err, CodeInvalidArgument)
	}
}

func TestHallsIsACopy(t *testing.T) {
	h := Halls()
	want := []string{"facts", "decisions", "failures", "hypotheses", "sources"}
	if !slices.Equal(h, want) {
		t.Fatalf("Halls() = %v, want %v", h, want)
	}
	h[0] = "mutated"
	if Halls()[0] != "facts" {
		t.Fatal("Halls() returned shared state")
	}
	for _, hall := range want {
		if err := ValidHall(hall); err != nil {
			t.Errorf("ValidHall(%q) = %v", hall, err)
		}
	}
}

func TestValidHall(t *testing.T) {
	for _, in := range []string{"", "fact", "Facts", "FACTS", "facts ", " facts", "facts/", "_index", "inbox", "decisions\x00"} {
		err := ValidHall(in)
		checkErr(t, in, err, ErrInvalidHall)
		if err != nil && !strings.Contains(err.Error(), "facts, decisions, failures, hypotheses, sources") {
			t.Errorf("ValidHall(%q) error %q does not list the valid halls", in, err)
		}
	}
}

// wingCases are the wing names every side must judge alike: ValidWing
// here, the gateway's configuration and the Helm chart's schema
// (TestChartWingPattern).
var wingCases = []struct {
	in   string
	want error // nil: valid
}{
	{"payments", nil},
	{"a", nil},
	{"0", nil},
	{"people-ops", nil},
	{"9lives", nil},
	{"a--b", nil},
	{"x-1", nil},
	{strings.Repeat("w", 62), nil},
	{strings.Repeat("w", 63), nil},
	{"a" + strings.Repeat("-", 61) + "b", nil},
	{strings.Repeat("w", 64), ErrTooLong},
	{strings.Repeat("w", 65), ErrTooLong},
	{strings.Repeat("w", 65), ErrInvalidName},
	{"", ErrInvalidName},
	{"-payments", ErrInvalidName},
	{"payments-", ErrInvalidName},
	{"x-", ErrInvalidName},
	{"-", ErrInvalidName},
	{"Payments", ErrInvalidName},
	{"PAYMENTS", ErrInvalidName},
	{"pay ments", ErrInvalidName},
	{"pay_ments", ErrInvalidName},
	{"_payments", ErrInvalidName},
	{"pay.ments", ErrInvalidName},
	{"pay/ments", ErrInvalidName},
	{"..", ErrInvalidName},
	{"pаyments", ErrInvalidName}, // Cyrillic а
	{"zahlungsverkehr-ü", ErrInvalidName},
	{"日本", ErrInvalidName},
	{"payments\x00", ErrInvalidName},
	{"payments\n", ErrInvalidName},
	{" payments", ErrInvalidName},
	{"con", ErrInvalidName},
	{"nul", ErrInvalidName},
	{"aux", ErrInvalidName},
	{"prn", ErrInvalidName},
	{"com1", ErrInvalidName},
	{"lpt9", ErrInvalidName},
	{"com10", nil},
	{"console", nil},
	{"nul-1", nil},
}

func TestValidWing(t *testing.T) {
	for _, tt := range wingCases {
		checkErr(t, tt.in, ValidWing(tt.in), tt.want)
	}
}

func TestValidSlugAndInboxName(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"use-idempotency-keys", nil},
		{"a", nil},
		{"2026-01-05-incident", nil},
		{strings.Repeat("s", 96), nil},
		{strings.Repeat("s", 97), ErrTooLong},
		{strings.Repeat("s", 97), ErrInvalidName},
		{"", ErrInvalidName},
		{"-a", ErrInvalidName},
		{"a-", ErrInvalidName},
		{"a--b", ErrInvalidName},
		{"-", ErrInvalidName},
		{"Use-Keys", ErrInvalidName},
		{"use_keys", ErrInvalidName},
		{"use.keys", ErrInvalidName},
		{"x.md", ErrInvalidName},
		{"_index", ErrInvalidName},
		{"index", nil},
		{"con", ErrInvalidName},
		{"aux", ErrInvalidName},
		{"prn", ErrInvalidName},
		{"com0", ErrInvalidName},
		{"lpt3", ErrInvalidName},
		{"nul-pointer", nil},
		{"a b", ErrInvalidName},
		{"a/b", ErrInvalidName},
		{"..", ErrInvalidName},
		{"é", ErrInvalidName},
		{"a\x00", ErrInvalidName},
		{"a\u2010b", ErrInvalidName}, // Unicode hyphen
	}
	for _, tt := range tests {
		checkErr(t, tt.in, ValidSlug(tt.in), tt.want)
		checkErr(t, tt.in, ValidInboxName(tt.in), tt.want)
	}
	if err := ValidInboxName("Bad"); err == nil || !strings.Contains(err.Error(), "inbox name") {
		t.Errorf("ValidInboxName error %v does not say it is about an inbox name", err)
	}
}

func TestValidSession(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"2026-01-05T10-00-00Z_abc", nil},
		{"Session.1", nil},
		{"a", nil},
		{"a..b", nil},
		{"a.", nil},
		{"_x", nil},
		{"-x", nil},
		{"3f2b9c2e-6a71-4c8e-9a43-5d1e8f0b7c21", nil},
		{strings.Repeat("s", 128), nil},
		{strings.Repeat("s", 129), ErrTooLong},
		{"", ErrInvalidName},
		{".", ErrInvalidName},
		{"..", ErrInvalidName},
		{".hidden", ErrInvalidName},
		{"a/b", ErrInvalidName},
		{`a\b`, ErrInvalidName},
		{"a b", ErrInvalidName},
		{"a:b", ErrInvalidName},
		{"a\x00", ErrInvalidName},
		{"CON", ErrInvalidName},
		{"Nul", ErrInvalidName},
		{"COM1", ErrInvalidName},
		{"séance", ErrInvalidName},
	}
	for _, tt := range tests {
		checkErr(t, tt.in, ValidSession(tt.in), tt.want)
	}
}

func TestParseID(t *testing.T) {
	good := ID{"payments", "decisions", "use-idempotency-keys"}
	tests := []struct {
		in   string
		want ID
		err  error
	}{
		{"payments/decisions/use-idempotency-keys", good, nil},
		{"wiki/payments/decisions/use-idempotency-keys.md", good, nil},
		{"wiki/payments/decisions/use-idempotency-keys", good, nil},
		{"payments/decisions/use-idempotency-keys.md", good, nil},
		{"wiki/facts/x", ID{"wiki", "facts", "x"}, nil}, // a wing may be called wiki
		{"payments/decision/x", ID{}, ErrInvalidHall},
		{"payments/Decisions/x", ID{}, ErrInvalidHall},
		{"payments/decisions/_index", ID{}, ErrInvalidName},
		{"wiki/payments/_index.md", ID{}, ErrInvalidHall}, // read as wing "wiki", hall "payments"
		{"payments/decisions/X", ID{}, ErrInvalidName},
		{"payments/decisions/x.md.md", ID{}, ErrInvalidName},
		{"payments/decisions/x.txt", ID{}, ErrInvalidName},
		{"payments/decisions/", ID{}, ErrInvalidName},
		{"payments/decisions", ID{}, ErrInvalidName},
		{"payments", ID{}, ErrInvalidName},
		{"", ID{}, ErrInvalidName},
		{"a/b/c/d", ID{}, ErrInvalidName},
		{"inbox/payments/decisions/x.md", ID{}, ErrInvalidName},
		{"wiki/payments/decisions/x/y.md", ID{}, ErrInvalidName},
		{"/payments/decisions/x", ID{}, ErrEscape},
		{"../decisions/x", ID{}, ErrEscape},
		{"payments/../x", ID{}, ErrEscape},
		{"payments/./decisions/x", ID{}, ErrEscape},
		{"./payments/decisions/x", ID{}, ErrEscape},
		{"wiki/../payments/decisions/x", ID{}, ErrEscape},
		{"payments/decisions/../../x", ID{}, ErrEscape},
		{`payments\decisions\x`, ID{}, ErrEscape},
		{"Payments/decisions/x", ID{}, ErrInvalidName},
		{"payments/decisions/" + strings.Repeat("x", 97), ID{}, ErrTooLong},
		{strings.Repeat("a/", 600), ID{}, ErrTooLong},
	}
	for _, tt := range tests {
		got, err := ParseID(tt.in)
		checkErr(t, tt.in, err, tt.err)
		if got != tt.want {
			t.Errorf("ParseID(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
		if err == nil {
			if got.String() != tt.want.String() {
				t.Errorf("String() = %q", got.String())
			}
			if again, err := ParseID(got.Path()); err != nil || again != got {
				t.Errorf("ParseID(Path()) = %v, %v", again, err)
			}
		}
	}
}

func TestPathBuilders(t *testing.T) {
	id := ID{"payments", "decisions", "use-idempotency-keys"}
	tests := []struct{ got, want string }{
		{id.String(), "payments/decisions/use-idempotency-keys"},
		{id.Path(), "wiki/payments/decisions/use-idempotency-keys.md"},
		{InboxPath("payments", "draft-1"), "inbox/payments/draft-1.md"},
		{SessionPath("payments", "s-1"), "sessions/payments/s-1.jsonl"},
		{IndexPath("payments"), "wiki/payments/_index.md"},
		{HallDir("payments", "facts"), "wiki/payments/facts"},
		{WingDir(TopInbox, "payments"), "inbox/payments"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
		if _, _, err := ValidPath(tt.got); err != nil && !strings.Contains(tt.want, "/") {
			t.Errorf("%q: %v", tt.got, err)
		}
	}
	// Every builder's output passes the path rules.
	for _, p := range []string{id.Path(), InboxPath("payments", "draft-1"), SessionPath("payments", "S.1"), IndexPath("payments"), HallDir("payments", "facts"), WingDir(TopSessions, "p")} {
		if _, _, err := ValidPath(p); err != nil {
			t.Errorf("ValidPath(%q) = %v", p, err)
		}
	}
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{
		"payments/decisions/use-idempotency-keys",
		"wiki/payments/facts/x.md",
		"payments/decisions/_index",
		"../../etc/passwd",
		"a/b/c/d",
		"wiki/w/h/s.md",
		"p/facts/a--b",
		"\x00/facts/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidName) && !errors.Is(err, ErrInvalidHall) && !errors.Is(err, ErrEscape) && !errors.Is(err, ErrTooLong) {
				t.Fatalf("ParseID(%q) error %v wraps no sentinel", s, err)
			}
			if id != (ID{}) {
				t.Fatalf("ParseID(%q) returned %v with an error", s, id)
			}
			return
		}
		if err := id.Validate(); err != nil {
			t.Fatalf("ParseID(%q) = %v which does not validate: %v", s, id, err)
		}
		// Round trips through both forms, and the path is a safe path.
		for _, form := range []string{id.String(), id.Path()} {
			if again, err := ParseID(form); err != nil || again != id {
				t.Fatalf("ParseID(%q) = %v, %v; want %v", form, again, err, id)
			}
		}
		if top, wing, err := ValidPath(id.Path()); err != nil || top != TopWiki || wing != id.Wing {
			t.Fatalf("ValidPath(%q) = %q, %q, %v", id.Path(), top, wing, err)
		}
		if strings.Contains(id.String(), "..") || strings.ContainsAny(id.String(), "\\\x00") {
			t.Fatalf("unsafe id %q accepted", id)
		}
	})
}

// loadEscapes reads testdata/escapes.txt: attack paths and the sentinel
// each refusal must wrap (shard/layout's Resolve and shard/tools read it
// too).
func loadEscapes(t testing.TB) []struct {
	line int
	want error
	path string
} {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "escapes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sentinels := map[string]error{"ErrEscape": ErrEscape, "ErrInvalidName": ErrInvalidName, "ErrInvalidHall": ErrInvalidHall, "ErrTooLong": ErrTooLong}
	var out []struct {
		line int
		want error
		path string
	}
	for n, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, quoted, ok := strings.Cut(line, " ")
		want, known := sentinels[name]
		p, err := strconv.Unquote(quoted)
		if !ok || !known || err != nil {
			t.Fatalf("escapes.txt:%d: want '<sentinel> <quoted path>', got %q", n+1, line)
		}
		out = append(out, struct {
			line int
			want error
			path string
		}{n + 1, want, p})
	}
	if len(out) < 50 {
		t.Fatalf("escapes.txt has only %d cases", len(out))
	}
	return out
}

func TestValidPathRejectsEscapes(t *testing.T) {
	for _, c := range loadEscapes(t) {
		_, _, err := ValidPath(c.path)
		if err == nil {
			t.Errorf("escapes.txt:%d: ValidPath(%q) accepted it", c.line, c.path)
			continue
		}
		checkErr(t, c.path, err, c.want)
		if id, err := ParseID(c.path); err == nil {
			t.Errorf("escapes.txt:%d: ParseID(%q) accepted it as %v", c.line, c.path, id)
		}
	}
}

// TestRefWing: the wing a reference names is the wing of the note a shard
// resolves it to (ParseID, or the inbox path's wing).
func TestRefWing(t *testing.T) {
	tests := []struct {
		ref, wing string
		isPath    bool
	}{
		{"payments/facts/x", "payments", false},
		{"/payments/facts/x", "payments", false},
		{"payments/facts/x.md", "payments", false},
		{"wiki/payments/facts/x.md", "payments", true},
		{"wiki/payments/facts/x", "payments", true},
		{"/wiki/payments/facts/x.md", "payments", true},
		{"wiki/facts/x", "wiki", true}, // a note of a wing called wiki
		{"wiki/facts/x.md", "wiki", true},
		{"inbox/payments/x.md", "payments", true},
		{"inbox/payments", "payments", true},
		{"inbox", "inbox", false},
		{"wiki", "wiki", false},
		{"wiki/", "", true},
		{"inbox/", "", true},
		{"wiki/payments", "payments", true},
		// A file of the wing's own directory (issue 34): not a note id,
		// since "platform" is no hall and "_index" no slug, so a path of
		// the wing it names, where the shard answers for it.
		{"wiki/platform/_index.md", "platform", true},
		{"/wiki/platform/_index.md", "platform", true},
		{"wiki/platform/_index", "platform", true},
		{"wiki/platform/x.md", "platform", true},
		{"wiki/facts/_index.md", "facts", true}, // a wing called facts: "_index" is no slug
		{"wiki/platform/", "platform", true},
		{"sessions/payments/s.jsonl", "sessions", false},
		{"", "", false},
		{"/", "", false},
		{"//x", "", false},
	}
	for _, tt := range tests {
		wing, isPath := RefWing(tt.ref)
		if wing != tt.wing || isPath != tt.isPath {
			t.Errorf("RefWing(%q) = %q, %v; want %q, %v", tt.ref, wing, isPath, tt.wing, tt.isPath)
		}
		// Whenever the reference parses as a note id, RefWing names its wing.
		if id, err := ParseID(strings.TrimPrefix(tt.ref, "/")); err == nil && id.Wing != wing {
			t.Errorf("RefWing(%q) = %q but ParseID reads wing %q", tt.ref, wing, id.Wing)
		}
	}
}

// FuzzRefWing: whenever a reference is a valid note id or inbox path,
// RefWing names the wing a shard reads from it; it never panics and never
// returns a wing containing '/'.
func FuzzRefWing(f *testing.F) {
	for _, s := range []string{"payments/facts/x", "wiki/payments/facts/x.md", "wiki/facts/x", "wiki/platform/_index.md", "inbox/p/x.md", "/a/b/c", "wiki//", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		wing, _ := RefWing(ref)
		if strings.Contains(wing, "/") {
			t.Fatalf("RefWing(%q) = %q", ref, wing)
		}
		if id, err := ParseID(ref); err == nil && id.Wing != wing {
			t.Fatalf("RefWing(%q) = %q, ParseID reads wing %q", ref, wing, id.Wing)
		}
		// A reference under wiki/ that is no note id names the wing of
		// its path, its second segment.
		if rest, ok := strings.CutPrefix(strings.TrimPrefix(ref, "/"), TopWiki+"/"); ok {
			if _, err := ParseID(strings.TrimPrefix(ref, "/")); err != nil {
				if w, _, _ := strings.Cut(rest, "/"); w != wing {
					t.Fatalf("RefWing(%q) = %q, want the path's wing %q", ref, wing, w)
				}
			}
		}
		if rest, ok := strings.CutPrefix(ref, TopInbox+"/"); ok {
			if w, _, _ := strings.Cut(rest, "/"); w != wing {
				t.Fatalf("RefWing(%q) = %q, want the inbox path's wing %q", ref, wing, w)
			}
		}
	})
}

func TestParseInboxPath(t *testing.T) {
	tests := []struct {
		in, wing, name string
		err            error
	}{
		{"inbox/payments/draft-1.md", "payments", "draft-1", nil},
		{"inbox/payments/draft-1", "", "", ErrInvalidName},
		{"inbox/payments/Draft.md", "", "", ErrInvalidName},
		{"inbox/payments/a/b.md", "", "", ErrInvalidName},
		{"inbox/payments/_index.md", "", "", ErrInvalidName},
		{"inbox/Pay/x.md", "", "", ErrInvalidName},
		{"inbox/../x.md", "", "", ErrInvalidName},
		{"inbox/payments", "", "", ErrInvalidName},
		{"wiki/payments/facts/x.md", "", "", ErrInvalidName},
		{"/inbox/payments/x.md", "", "", ErrInvalidName},
		{"", "", "", ErrInvalidName},
	}
	for _, tt := range tests {
		wing, name, err := ParseInboxPath(tt.in)
		checkErr(t, tt.in, err, tt.err)
		if wing != tt.wing || name != tt.name {
			t.Errorf("ParseInboxPath(%q) = %q, %q", tt.in, wing, name)
		}
		if err == nil {
			if InboxPath(wing, name) != tt.in {
				t.Errorf("InboxPath round trip of %q", tt.in)
			}
			if w, isPath := RefWing(tt.in); w != wing || !isPath {
				t.Errorf("RefWing(%q) = %q, %v", tt.in, w, isPath)
			}
		}
	}
}

func TestValidVersion(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"0123456789abcdef0123456789abcdef01234567", true},
		{"0123456789ABCDEF0123456789abcdef01234567", true},
		{"", false},
		{"0123456789abcdef", false},
		{"0123456789abcdef0123456789abcdef012345678", false},
		{"0123456789abcdef0123456789abcdef0123456g", false},
		{"HEAD~1", false},
	} {
		err := ValidVersion(tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("ValidVersion(%q) = %v, want ok %v", tc.v, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidVersion(%q) = %v, not ErrInvalidName", tc.v, err)
		}
	}
}
