package injection

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func seeds(f *testing.F) {
	for _, name := range []string{"attacks.txt", "benign.txt"} {
		for _, e := range readList(f, name) {
			f.Add([]byte(e.text))
		}
	}
	for _, s := range []string{"", "<!--", "<!-->", "```", "`", "\ufeff", "\xff\xfe", "a\u200d", "\U0001F3F4\U000E007F", "<!<!-- -->--", "\ufe0f\ufe0f"} {
		f.Add([]byte(s))
	}
}

// FuzzScan: Scan never panics, is deterministic, and its findings are
// well formed (checkFindings), and on inputs shorter than a window its
// text rules agree with a plain regexp search (comparePhrases).
func FuzzScan(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Scan(b)
		checkFindings(t, b, got)
		if len(b) < defaultWindow {
			comparePhrases(t, b)
		}
		if again := Scan(bytes.Clone(b)); !reflect.DeepEqual(got, again) {
			t.Fatalf("Scan(%q) not deterministic: %v then %v", b, got, again)
		}
	})
}

// FuzzClean: Clean is idempotent, its output is valid UTF-8, and Scan finds
// in it no rule that Clean removes (a Hidden rule).
func FuzzClean(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Clean(string(b))
		if !utf8.ValidString(c) {
			t.Fatalf("Clean(%q) = %q: not UTF-8", b, c)
		}
		if again := Clean(c); again != c {
			t.Fatalf("Clean not idempotent on %q: %q then %q", b, c, again)
		}
		for _, fd := range Scan([]byte(c)) {
			if hiddenRule(fd.Rule) {
				t.Fatalf("Scan(Clean(%q)) = %v: Clean left a %s", b, fd, fd.Rule)
			}
		}
		if strings.Contains(c, "<!--") || strings.Contains(c, "\r") {
			t.Fatalf("Clean(%q) = %q keeps a comment or a carriage return", b, c)
		}
	})
}

// BenchmarkScan scans a 1 MiB note (the largest a shard keeps) of prose
// near the rules' words, the worst case for the patterns.
func BenchmarkScan(b *testing.B) {
	var note strings.Builder
	line := "Ignore the flaky test; you are now ready. curl the page, send the report, <x> \"name\" at https://x.example/?q=1 `code` system design\n"
	for note.Len() < 1<<20 {
		note.WriteString(line)
	}
	in := []byte(note.String()[:1<<20])
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		Scan(in)
	}
}

// BenchmarkScanNote scans a typical note of the sample brain's size.
func BenchmarkScanNote(b *testing.B) {
	in := []byte(harmless(strings.Repeat("Clients retry a charge at most three times, with jittered backoff. ", 30)))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		Scan(in)
	}
}

// hiddenRule reports whether name is a rule that Clean removes.
func hiddenRule(name string) bool {
	for _, r := range Rules() {
		if r.Name == name {
			return r.Hidden
		}
	}
	return false
}
