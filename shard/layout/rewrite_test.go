package layout

import (
	"testing"

	"github.com/brainstem/brainstem/brain"
)

func TestRewriteLinks(t *testing.T) {
	from := brain.ID{Wing: "payments", Hall: "facts", Slug: "retry-budget"}
	to := brain.ID{Wing: "payments", Hall: "decisions", Slug: "retry-policy"}
	for _, tc := range []struct{ in, want string }{
		{"See [[facts/retry-budget]].", "See [[decisions/retry-policy]]."},
		{"See [[payments/facts/retry-budget|the budget]] and [[facts/retry-budget#why]].", "See [[payments/decisions/retry-policy|the budget]] and [[decisions/retry-policy#why]]."},
		{"[[ facts/retry-budget.md ]]", "[[decisions/retry-policy]]"},
		{"Other: [[billing/facts/retry-budget]], [[facts/other]].", "Other: [[billing/facts/retry-budget]], [[facts/other]]."},
		{"no links", "no links"},
	} {
		got, _ := RewriteLinks(tc.in, "payments", from, to)
		if got != tc.want {
			t.Errorf("RewriteLinks(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, n := RewriteLinks("[[facts/retry-budget]] [[payments/facts/retry-budget]]", "payments", from, to); n != 2 {
		t.Errorf("rewrote %d links, want 2", n)
	}
}
