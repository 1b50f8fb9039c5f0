package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestDisabledToolsUnlisted: brain_purge is listed only where an operator
// enabled purging; unlisted, a call still answers with the tool's own
// refusal, which says how to enable it.
func TestDisabledToolsUnlisted(t *testing.T) {
	off, _, _ := newSet(t)          // store.HistoryOptions without AllowPurge
	on, _, _ := newKeyedSet(t, nil) // AllowPurge
	names := func(s *Set) []string {
		var ds []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(s.Descriptors(), &ds); err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, d := range ds {
			if s.Specs()[i].Name != d.Name {
				t.Fatalf("Specs()[%d] = %s, descriptor %s", i, s.Specs()[i].Name, d.Name)
			}
			out = append(out, d.Name)
		}
		if len(s.Specs()) != len(out) {
			t.Fatalf("%d specs, %d descriptors", len(s.Specs()), len(out))
		}
		return out
	}
	if got := names(off); slices.Contains(got, "brain_purge") || len(got) != len(names(on))-1 {
		t.Errorf("purging off lists %v", got)
	}
	if !slices.Contains(names(on), "brain_purge") {
		t.Error("purging on does not list brain_purge")
	}
	res, isErr := off.Call(t.Context(), curator, "brain_purge", []byte(`{"id":"payments/facts/x","reason":"leak"}`))
	if !isErr || !strings.Contains(string(res), `"forbidden"`) || !strings.Contains(string(res), "--allow-purge") {
		t.Errorf("brain_purge with purging off = %s", res)
	}
}
