package layout

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// checkErr asserts that err is nil when want is nil, and otherwise wraps
// want and reads as a layout error that names a rule.
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
	if !strings.HasPrefix(err.Error(), "layout: ") {
		t.Errorf("%q: error %q lacks the package prefix", in, err)
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

func TestValidWing(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"payments", nil},
		{"a", nil},
		{"0", nil},
		{"people-ops", nil},
		{"9lives", nil},
		{"x-", nil}, // only the first character is constrained
		{"a--b", nil},
		{strings.Repeat("w", 64), nil},
		{strings.Repeat("w", 65), ErrTooLong},
		{strings.Repeat("w", 65), ErrInvalidName},
		{"", ErrInvalidName},
		{"-payments", ErrInvalidName},
		{"Payments", ErrInvalidName},
		{"pay ments", ErrInvalidName},
		{"pay_ments", ErrInvalidName},
		{"pay.ments", ErrInvalidName},
		{"pay/ments", ErrInvalidName},
		{"..", ErrInvalidName},
		{"pаyments", ErrInvalidName}, // Cyrillic а
		{"payments\x00", ErrInvalidName},
		{"payments\n", ErrInvalidName},
		{"con", ErrInvalidName},
		{"nul", ErrInvalidName},
		{"com1", ErrInvalidName},
		{"lpt9", ErrInvalidName},
		{"com10", nil},
		{"console", nil},
	}
	for _, tt := range tests {
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

func TestSlugify(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 bytes
	tests := []struct{ in, want string }{
		{"Use idempotency keys", "use-idempotency-keys"},
		{"  Use   idempotency -- keys!  ", "use-idempotency-keys"},
		{"Crème brûlée à la façon d'Œdipe", "creme-brulee-a-la-facon-d-oedipe"},
		{"Straße Ærø Łódź ñandú", "strasse-aero-lodz-nandu"},
		{"Þór ðe Ğüzel Şehir İstanbul", "thor-de-guzel-sehir-istanbul"},
		{"Q3/2026: p99 < 200ms", "q3-2026-p99-200ms"},
		{"_index", "index"},
		{"CON", "con-note"},
		{"nul", "nul-note"},
		{"日本語のタイトル", ""},
		{"!!!", ""},
		{"", ""},
		{"a日b", "a-b"},
		{"émoji 🚀 launch", "emoji-launch"},
		{"x\x00y\xffz", "x-y-z"},
		{long, strings.TrimSuffix(strings.Repeat("word-", 19), "-")}, // 94 bytes, cut on a boundary
		{strings.Repeat("a", 200), strings.Repeat("a", 96)},          // no boundary: hard cut
		{strings.Repeat("a", 95) + " b", strings.Repeat("a", 95)},
		{strings.Repeat("a", 96) + " b", strings.Repeat("a", 96)},
		{strings.Repeat("a", 94) + " bb", strings.Repeat("a", 94)},
	}
	for _, tt := range tests {
		got := Slugify(tt.in)
		if got != tt.want {
			t.Errorf("Slugify(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got != "" {
			if err := ValidSlug(got); err != nil {
				t.Errorf("Slugify(%q) = %q is not a valid slug: %v", tt.in, got, err)
			}
		}
	}
}

func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"Use idempotency keys", "Crème brûlée", "CON", "", strings.Repeat("ab ", 60), "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, title string) {
		got := Slugify(title)
		if got == "" {
			return
		}
		if err := ValidSlug(got); err != nil {
			t.Fatalf("Slugify(%q) = %q: %v", title, got, err)
		}
		if Slugify(got) != got {
			t.Fatalf("Slugify is not idempotent on %q", got)
		}
	})
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
