package search_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainstem/brainstem/search"
)

func TestTokenize(t *testing.T) {
	long64 := strings.Repeat("a", 64)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"separators only", " \t\n-_/.,;:!?()[]{}", nil},
		{"ascii words and case", "Idempotency KEYS for Retries", []string{"idempotency", "keys", "retries"}},
		{"punctuation splits", "rate-limit/backoff_v2.go", []string{"rate", "limit", "backoff", "v2", "go"}},
		{"stop words dropped", "The cat and the hat", []string{"cat", "hat"}},
		{"stop words case-insensitive", "THE Which ThEiR", nil},
		{"apostrophes split", "it's don't", []string{"don"}},
		{"digits", "v2 3.14 2026-11-30 42", []string{"v2", "3", "14", "2026", "11", "30", "42"}},
		{"non-ascii digits", "٣٤ ४२", []string{"٣٤", "४२"}},
		{"accents precomposed", "Café Déjà-vu ÉCOLE", []string{"café", "déjà", "vu", "école"}},
		{"combining mark stays in word", "cafe\u0301 x", []string{"cafe\u0301", "x"}},
		{"mark cannot start a token", "\u0301abc", []string{"abc"}},
		{"german", "Straße STRASSE", []string{"straße", "strasse"}},
		{"greek final sigma folds", "ὈΔΌΣ ὀδός σοφία ΣΟΦΊΑ", []string{"ὀδόσ", "ὀδόσ", "σοφία", "σοφία"}},
		{"kelvin and long s fold", "\u212Aelvin \u017Fun", []string{"kelvin", "sun"}},
		{"cjk run is one token", "日本語のテキスト 中文", []string{"日本語のテキスト", "中文"}},
		{"cjk split by punctuation", "東京、大阪。", []string{"東京", "大阪"}},
		{"devanagari vowel signs", "हिन्दी भाषा", []string{"हिन्दी", "भाषा"}},
		{"emoji separate", "deploy🚀rocket 👍", []string{"deploy", "rocket"}},
		{"invalid utf8 separates", "ab\xffcd\xc3", []string{"ab", "cd"}},
		{"64 bytes kept", long64, []string{long64}},
		{"65 bytes dropped", long64 + "b ok", []string{"ok"}},
		{"length counted after folding", strings.Repeat("É", 32) + " " + strings.Repeat("é", 33), []string{strings.Repeat("é", 32)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := search.Tokenize(tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "Hello, World", "Café déjà-vu", "日本語 テキスト", "🚀 rocket", "ab\xffcd", "ὈΔΌΣ", "e\u0301", strings.Repeat("x", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range search.Tokenize(s) {
			if tok == "" || len(tok) > search.MaxTokenBytes {
				t.Fatalf("token %q has bad length %d", tok, len(tok))
			}
			if !utf8.ValidString(tok) {
				t.Fatalf("token %q is not valid UTF-8", tok)
			}
			// Tokens are fixed points: re-tokenizing yields the token itself.
			if again := search.Tokenize(tok); len(again) != 1 || again[0] != tok {
				t.Fatalf("Tokenize(%q) = %q, want the token itself", tok, again)
			}
		}
	})
}
