package layout

import (
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

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
			if err := brain.ValidSlug(got); err != nil {
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
		if err := brain.ValidSlug(got); err != nil {
			t.Fatalf("Slugify(%q) = %q: %v", title, got, err)
		}
		if Slugify(got) != got {
			t.Fatalf("Slugify is not idempotent on %q", got)
		}
	})
}
