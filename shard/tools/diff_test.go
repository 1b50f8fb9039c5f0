package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/store"
)

// TestDiffTooDifferentIssue34 is issue 34's reproduction through the
// tool: a note of 131,072 lines "a" updated to 131,072 lines "b". brain_diff
// answers, successfully, that the versions differ too much for a line
// diff, with both versions' sizes and content hashes.
func TestDiffTooDifferentIssue34(t *testing.T) {
	s, st, _ := newSet(t)
	const id = "payments/facts/big"
	body := func(line string) string { return strings.Repeat(line+"\n", 131072) }
	write, _ := json.Marshal(map[string]any{"title": "Big", "hall": "facts", "slug": "big", "body": body("a")})
	mustCall(t, s, writer, "brain_write", string(write), nil)
	update, _ := json.Marshal(map[string]any{"id": id, "body": body("b"), "reason": "all b"})
	mustCall(t, s, writer, "brain_update", string(update), nil)
	var h historyResult
	mustCall(t, s, reader, "brain_history", `{"id":"`+id+`"}`, &h)
	if len(h.Versions) != 2 {
		t.Fatalf("history: %+v", h)
	}
	older, newer := h.Versions[1], h.Versions[0]

	var raw map[string]any
	res := mustCall(t, s, reader, "brain_diff", `{"id":"`+id+`","from":"`+older.Version+`"}`, &raw)
	for _, k := range []string{"id", "from", "to", "diff", "cut", "too_different", "from_bytes", "from_lines", "from_hash", "to_bytes", "to_lines", "to_hash"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("the answer has no %q: %s", k, res)
		}
	}
	var d diffResult
	if err := json.Unmarshal([]byte(res), &d); err != nil {
		t.Fatal(err)
	}
	path := "wiki/" + id + ".md"
	if !d.TooDifferent || d.Cut || d.Diff != history.TooDifferentText("a/"+path, "b/"+path) || d.From != older.Version || d.To != newer.Version {
		t.Fatalf("diff: %.300s", res)
	}
	old, _, err := st.GetVersion(context.Background(), id, older.Version)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.FromHash != older.ContentHash || d.ToHash != newer.ContentHash || d.FromHash != store.HashOf(old.Raw) || d.ToHash != cur.Hash {
		t.Fatalf("hashes %s %s, want %s %s", d.FromHash, d.ToHash, older.ContentHash, newer.ContentHash)
	}
	if d.FromBytes != len(old.Raw) || d.ToBytes != len(cur.Raw) || d.FromLines < 131072 || d.FromLines != strings.Count(string(old.Raw), "\n") || d.ToLines != strings.Count(string(cur.Raw), "\n") {
		t.Fatalf("sizes %d bytes %d lines, %d bytes %d lines", d.FromBytes, d.FromLines, d.ToBytes, d.ToLines)
	}
}

// TestDiffSizes: a diff that is written has too_different false and the
// same sizes and hashes; a version that archived the note compares as
// empty, with no hash.
func TestDiffSizes(t *testing.T) {
	s, _, _ := newSet(t)
	const id = "payments/facts/small"
	mustCall(t, s, writer, "brain_write", `{"title":"Small","hall":"facts","slug":"small","body":"one\ntwo\n"}`, nil)
	mustCall(t, s, curator, "brain_archive", `{"id":"`+id+`","reason":"gone"}`, nil)
	var h historyResult
	mustCall(t, s, reader, "brain_history", `{"id":"`+id+`"}`, &h)
	var d diffResult
	mustCall(t, s, reader, "brain_diff", `{"id":"`+id+`","from":"`+h.Versions[1].Version+`"}`, &d)
	if d.TooDifferent || !strings.Contains(d.Diff, "-two\n") || d.FromHash != h.Versions[1].ContentHash || d.FromBytes == 0 || d.FromLines < 2 ||
		d.ToHash != "" || d.ToBytes != 0 || d.ToLines != 0 {
		t.Fatalf("diff: %+v", d)
	}
}
