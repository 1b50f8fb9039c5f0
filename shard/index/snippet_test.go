package index_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
)

func TestSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 20) // 540 bytes
	tests := []struct {
		name  string
		body  string
		terms []string
		max   int
		want  string
	}{
		{"zero max", "hello", []string{"hello"}, 0, ""},
		{"negative max", "hello", nil, -5, ""},
		{"fits whole", "  short\n\nbody\ttext ", []string{"body"}, 100, "short body text"},
		{"exactly max", "abcde", nil, 5, "abcde"},
		{"tiny max prefix", "abcdefghij", []string{"j"}, 4, "abc…"},
		{"max one", "abcdefghij", nil, 1, "…"},
		{"no match: prefix cut between words", "one two three four five six seven", []string{"zzz"}, 12, "one two…"},
		{"match at start", "needle " + long, []string{"needle"}, 20, "needle lorem ipsum…"},
		{"match in middle", long + "needle " + long, []string{"NEEDLE"}, 40, "…sit amet needle lorem ipsum dolor sit…"},
		{"match at end", long + "final needle", []string{"needle"}, 24, "…sit amet final needle"},
		{"first of several terms", long + "beta x alpha " + long, []string{"alpha", "beta"}, 30, "…amet beta x alpha lorem…"},
		{"terms are tokenized", long + "Café " + long, []string{"CAFÉ!"}, 30, "…amet Café lorem ipsum dolor…"},
		{"multibyte runes", strings.Repeat("日本語 ", 30) + "目標 " + strings.Repeat("中文 ", 30), []string{"目標"}, 16, "…日本語 目標 中文 中文…"},
		{"snapped start reaches the end", "00 0 000000", []string{"0"}, 10, "…0 000000"},
		{"no spaces: cut on runes", strings.Repeat("語", 50), nil, 10, strings.Repeat("語", 9) + "…"},
		{"invalid utf8 replaced", "ab\xffcd", nil, 10, "ab\uFFFDcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := index.Snippet(tt.body, tt.terms, tt.max)
			if got != tt.want {
				t.Errorf("Snippet = %q, want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > max(tt.max, 0) {
				t.Errorf("Snippet has %d runes, max %d", n, tt.max)
			}
		})
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("the quick brown fox jumps over the lazy dog", "fox", 12)
	f.Add(strings.Repeat("日本語 ", 40)+"目標", "目標", 9)
	f.Add("ab\xff\xfecd efgh", "cd", 3)
	f.Add("", "", 0)
	f.Add("x y", "y", -1)
	f.Fuzz(func(t *testing.T, body, term string, max int) {
		max %= 1 << 12
		got := index.Snippet(body, []string{term}, max)
		if !utf8.ValidString(got) {
			t.Fatalf("Snippet(%q, %q, %d) = %q: not valid UTF-8", body, term, max, got)
		}
		if n := utf8.RuneCountInString(got); n > max && !(max <= 0 && n == 0) {
			t.Fatalf("Snippet(%q, %q, %d) = %q: %d runes", body, term, max, got, n)
		}
		if max <= 0 && got != "" {
			t.Fatalf("Snippet with max %d = %q, want empty", max, got)
		}
		// A match the window must show: when the term occurs and the body
		// is cut, the first occurrence is inside the snippet.
		if toks := search.Tokenize(term); max >= 40 && len(toks) == 1 && len(toks[0]) <= 8 {
			inBody := false
			for _, bt := range search.Tokenize(body) {
				if bt == toks[0] {
					inBody = true
				}
			}
			if inBody {
				found := false
				for _, st := range search.Tokenize(got) {
					if st == toks[0] {
						found = true
					}
				}
				if !found {
					t.Fatalf("Snippet(%q, %q, %d) = %q misses the match", body, term, max, got)
				}
			}
		}
	})
}
