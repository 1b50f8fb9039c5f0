package layout_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/layout"
)

func TestFileNames(t *testing.T) {
	tests := []struct {
		fn      func(string) (string, error)
		name    string
		want    string
		errPart string
	}{
		{layout.NoteFile, "use-idempotency-keys.md", "use-idempotency-keys", ""},
		{layout.NoteFile, "trailing-.md", "", "leading, trailing or doubled '-'"},
		{layout.NoteFile, "Upper.md", "", "has 'U'"},
		{layout.NoteFile, "_index.md", "", "reserved"},
		{layout.NoteFile, "diagram.png", "", "not a note"},
		{layout.NoteFile, "notes.MD", "", "not a note"},
		{layout.InboxFile, "2026-11-20-idea.md", "2026-11-20-idea", ""},
		{layout.InboxFile, "2026 idea.md", "", "has ' '"},
		{layout.InboxFile, "idea.txt", "", "not an inbox note"},
		{layout.SessionFile, "s-0001.jsonl", "s-0001", ""},
		{layout.SessionFile, "Log.txt", "", "not a session log"},
		{layout.SessionFile, ".jsonl", "", "empty session"},
	}
	for _, tt := range tests {
		got, err := tt.fn(tt.name)
		if tt.errPart == "" {
			if err != nil || got != tt.want {
				t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, brain.ErrInvalidName) || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: err %v, want ErrInvalidName mentioning %q", tt.name, err, tt.errPart)
		}
	}
	for name, want := range map[string]bool{".gitkeep": true, ".tmp-123": true, "a.md": false, "": false} {
		if layout.Hidden(name) != want {
			t.Errorf("Hidden(%q) = %v", name, !want)
		}
	}
}

func TestTracked(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"wiki/payments/facts/retry.md", true},
		{"inbox/payments/idea.md", true},
		{"wiki/payments/_index.md", false},
		{"wiki/payments/facts/_index.md", false},
		{"wiki/payments/gossip/retry.md", false},
		{"wiki/billing/facts/retry.md", false},
		{"sessions/payments/s1.jsonl", false},
		{"wiki/payments/facts/.tmp-retry.md", false},
		{"wiki/payments/facts/retry.txt", false},
		{"wiki/payments/facts/sub/retry.md", false},
		{"inbox/payments/../billing/x.md", false},
		{".brainstem/payments/x.md", false},
	} {
		if got := layout.Tracked(tc.rel, "payments"); got != tc.want {
			t.Errorf("Tracked(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}
