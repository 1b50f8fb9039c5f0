package offboard

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// TestParse: the file's rules, every problem reported at once; the later
// not_before wins for an email listed twice; Marshal round-trips.
func TestParse(t *testing.T) {
	good := `ended:
  - email: Bob@Acme.com
    not_before: 2026-12-02T10:00:00Z
    reason: left
  - email: bob@acme.com
    not_before: "2026-12-02T11:00:00+01:00"
  - {email: carol@acme.com, not_before: 2026-12-01T00:00:00Z}
`
	es, err := Parse([]byte(good))
	if err != nil || len(es) != 2 || es[0].Email != "bob@acme.com" || !es[0].NotBefore.Equal(t0) || es[1].Email != "carol@acme.com" {
		t.Fatalf("Parse: %+v %v", es, err)
	}
	if es, err := Parse(nil); err != nil || len(es) != 0 {
		t.Fatalf("empty file: %v %v", es, err)
	}
	out, err := Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil || len(back) != 2 || !back[0].NotBefore.Equal(es[0].NotBefore) {
		t.Fatalf("round trip:\n%s\n%+v %v", out, back, err)
	}
	bad := `ended:
  - email: not-an-email
    not_before: 2026-12-02T10:00:00Z
  - email: a@acme.com
  - email: b@acme.com
    not_before: 2026-12-02T10:00:00Z
    reason: "two\nlines"
`
	_, err = Parse([]byte(bad))
	for _, want := range []string{"ended[0]: email", "ended[1]: a@acme.com: not_before is required", "ended[2]: b@acme.com: reason"} {
		if !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	for _, s := range []string{"ended: yes", "other: []", "ended:\n  - email: a@acme.com\n    not_before: tomorrow\n", "ended:\n  - {email: a@acme.com, not_before: 2026-12-02T10:00:00Z, extra: 1}",
		"ended:\n  - {email: a@acme.com, not_before: 0001-01-01T00:00:00+01:00}"} {
		if _, err := Parse([]byte(s)); !errors.Is(err, ErrBadFile) {
			t.Errorf("%q: %v, want ErrBadFile", s, err)
		}
	}
	if _, err := Parse(bytes.Repeat([]byte("#"), MaxFileBytes+1)); !errors.Is(err, ErrBadFile) {
		t.Errorf("a file over the limit: %v", err)
	}
	var many strings.Builder
	many.WriteString("ended:\n")
	for range MaxEntries + 1 {
		many.WriteString("  - {email: a@acme.com, not_before: 2026-12-02T10:00:00Z}\n")
	}
	if _, err := Parse([]byte(many.String())); !errors.Is(err, ErrTooMany) {
		t.Errorf("too many entries: %v", err)
	}
}

// TestList: a token issued before the effective not_before is refused,
// one issued at or after it is not; file and posted entries merge, the
// later winning; SetFile and Post report when a not_before moved later.
func TestList(t *testing.T) {
	l := NewList()
	if _, ended := l.Ended("bob@acme.com", time.Time{}); ended {
		t.Fatal("an empty list ends a sign-in")
	}
	if later := l.SetFile([]Entry{{Email: "bob@acme.com", NotBefore: t0}}); len(later) != 1 {
		t.Fatalf("SetFile: %v", later)
	}
	for _, tc := range []struct {
		issued time.Time
		ended  bool
	}{{t0.Add(-time.Second), true}, {time.Time{}, true}, {t0, false}, {t0.Add(time.Hour), false}} {
		if _, ended := l.Ended("bob@acme.com", tc.issued); ended != tc.ended {
			t.Errorf("issued %v: ended %v, want %v", tc.issued, ended, tc.ended)
		}
	}
	if later := l.SetFile([]Entry{{Email: "bob@acme.com", NotBefore: t0}}); len(later) != 0 {
		t.Fatalf("the same file again: %v", later)
	}
	if changed, err := l.Post(Entry{Email: "BOB@acme.com", NotBefore: t0.Add(time.Hour)}); err != nil || !changed {
		t.Fatalf("Post later: %v %v", changed, err)
	}
	if changed, _ := l.Post(Entry{Email: "bob@acme.com", NotBefore: t0}); changed {
		t.Fatal("an earlier post moved not_before")
	}
	if _, ended := l.Ended("bob@acme.com", t0.Add(30*time.Minute)); !ended {
		t.Fatal("the posted (later) entry does not win")
	}
	l.SetFile(nil) // removed from the file: the posted entry remains until restart
	if es := l.Entries(); len(es) != 1 || !es[0].NotBefore.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Entries: %+v", es)
	}
	if _, err := l.Post(Entry{Email: "x"}); err == nil {
		t.Fatal("a bad post is accepted")
	}
}

// TestWatcher: the file is applied at start, a change to it is applied at
// the next check (whatever its mtime), and a bad file keeps the last good
// list.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ended.yaml")
	write := func(s string) {
		tmp := filepath.Join(dir, "tmp")
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil { // as a ConfigMap's symlink swap replaces it
			t.Fatal(err)
		}
	}
	if _, err := NewWatcher(path, NewList(), slog.New(slog.DiscardHandler), nil); err == nil {
		t.Fatal("a missing file at start is accepted")
	}
	write("ended: []\n")
	l := NewList()
	var got [][]string
	w, err := NewWatcher(path, l, slog.New(slog.DiscardHandler), func(e []string) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	write("ended:\n  - {email: bob@acme.com, not_before: 2026-12-02T10:00:00Z}\n")
	if err := w.check(); err != nil || len(got) != 1 || got[0][0] != "bob@acme.com" {
		t.Fatalf("check: %v %v", err, got)
	}
	write("ended: [this is not")
	if err := w.check(); !errors.Is(err, ErrBadFile) {
		t.Fatalf("bad file: %v", err)
	}
	if _, ended := l.Ended("bob@acme.com", t0.Add(-time.Second)); !ended {
		t.Fatal("a bad file dropped the last good list")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Run(ctx, time.Hour) // returns once ctx is done
}

// FuzzParse: no file makes Parse panic; what it accepts is canonical,
// one entry per email, within the limits, and survives Marshal.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "ended: []", "ended:\n  - {email: a@acme.com, not_before: 2026-12-02T10:00:00Z}\n",
		"ended:\n  - {email: A@ACME.com, not_before: \"2026-12-02T10:00:00+05:00\", reason: x}\n  - {email: a@acme.com, not_before: 2027-01-01T00:00:00Z}\n",
		"ended: {a: b}", "ended:\n  - email: [1]\n", "&a [*a]", "ended:\n  - {email: a@acme.com, not_before: 0001-01-01T00:00:00Z}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := Parse(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, e := range es {
			if ce, err := Check(e); err != nil || ce.Email != e.Email || seen[e.Email] || e.NotBefore.IsZero() {
				t.Fatalf("accepted %+v (%v)", e, err)
			}
			seen[e.Email] = true
		}
		out, err := Marshal(es)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil || len(back) != len(es) {
			t.Fatalf("Marshal of %+v does not parse back: %v\n%s", es, err, out)
		}
	})
}

// TestParseNotBefore: now is rounded up to the second; durations and
// RFC 3339 are read; anything else is an error.
func TestParseNotBefore(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 500, time.UTC)
	for in, want := range map[string]time.Time{
		"now": now.Truncate(time.Second).Add(time.Second), "now+2m": now.Truncate(time.Second).Add(2*time.Minute + time.Second),
		"2026-12-01T00:00:00Z": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseNotBefore(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "now-1m", "now+x", "2026-12-01"} {
		if _, err := ParseNotBefore(in, now); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if c := CeilSecond(t0); !c.Equal(t0) {
		t.Errorf("CeilSecond of a whole second: %v", c)
	}
}
