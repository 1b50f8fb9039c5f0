package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// TestHistoryToolErrors: every bad call of a history tool gets its code
// and an actionable message, and changes nothing (files and history).
func TestHistoryToolErrors(t *testing.T) {
	s, st, root := fixture(t) // purging is off
	ctx := context.Background()
	const idem, budget = "payments/decisions/use-idempotency-keys", "payments/facts/retry-budget"
	mustCall(t, s, writer, "brain_update", `{"id":"`+budget+`","body":"Twice.\n","reason":"lowered"}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Gone","body":"b","hall":"facts"}`, nil)
	mustCall(t, s, curator, "brain_archive", `{"id":"payments/facts/gone","reason":"outdated"}`, nil)
	vb, err := st.Versions(ctx, budget, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	vi, err := st.Versions(ctx, idem, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	old, cur, other := vb.Versions[1].ID, vb.Versions[0].ID, vi.Versions[0].ID
	zero := strings.Repeat("0", 40)
	tests := []struct {
		name, tool, args string
		c                Caller
		code             brain.Code
		inMsg            string
	}{
		{"history no id", "brain_history", `{}`, reader, brain.CodeInvalidArgument, "id is required"},
		{"history unknown", "brain_history", `{"id":"payments/facts/nope"}`, reader, brain.CodeNotFound, "no version"},
		{"history other wing", "brain_history", `{"id":"billing/facts/x"}`, reader, brain.CodeForbidden, "billing"},
		{"history bad cursor", "brain_history", `{"id":"` + budget + `","cursor":"x"}`, reader, brain.CodeInvalidArgument, "cursor"},
		{"history limit", "brain_history", `{"id":"` + budget + `","limit":101}`, reader, brain.CodeInvalidArgument, "between 1 and 100"},
		{"history escape", "brain_history", `{"id":"inbox/payments/../../etc.md"}`, reader, brain.CodeInvalidArgument, ""},
		{"get bad version", "brain_get", `{"id":"` + budget + `","version":"HEAD~1"}`, reader, brain.CodeInvalidArgument, "40 hexadecimal"},
		{"get unknown version", "brain_get", `{"id":"` + budget + `","version":"` + zero + `"}`, reader, brain.CodeNotFound, "no version"},
		{"get version of another note", "brain_get", `{"id":"` + budget + `","version":"` + other + `"}`, reader, brain.CodeInvalidArgument, "not a version of"},
		{"get archived", "brain_get", `{"id":"payments/facts/gone"}`, reader, brain.CodeNotFound, "archived by cora@example.com"},
		{"diff no from", "brain_diff", `{"id":"` + budget + `"}`, reader, brain.CodeInvalidArgument, "from is required"},
		{"diff bad to", "brain_diff", `{"id":"` + budget + `","from":"` + old + `","to":"abc"}`, reader, brain.CodeInvalidArgument, "to"},
		{"diff other note", "brain_diff", `{"id":"` + budget + `","from":"` + other + `"}`, reader, brain.CodeInvalidArgument, "not a version of"},
		{"restore by reader", "brain_restore", `{"id":"` + budget + `","version":"` + old + `","reason":"r"}`, reader, brain.CodeForbidden, "write"},
		{"restore no reason", "brain_restore", `{"id":"` + budget + `","version":"` + old + `"}`, writer, brain.CodeInvalidArgument, "reason"},
		{"restore blank reason", "brain_restore", `{"id":"` + budget + `","version":"` + old + `","reason":"  "}`, writer, brain.CodeInvalidArgument, "reason"},
		{"restore no version", "brain_restore", `{"id":"` + budget + `","reason":"r"}`, writer, brain.CodeInvalidArgument, "version is required"},
		{"restore unknown version", "brain_restore", `{"id":"` + budget + `","version":"` + zero + `","reason":"r"}`, writer, brain.CodeNotFound, "no version"},
		{"restore stale hash", "brain_restore", `{"id":"` + budget + `","version":"` + old + `","reason":"r","expected_hash":"` + strings.Repeat("a", 64) + `"}`, writer, brain.CodeConflict, "current content_hash"},
		{"archive by writer", "brain_archive", `{"id":"` + budget + `","reason":"r"}`, writer, brain.CodeForbidden, "curate"},
		{"archive by reader", "brain_archive", `{"id":"` + budget + `","reason":"r"}`, reader, brain.CodeForbidden, "curate"},
		{"archive no reason", "brain_archive", `{"id":"` + budget + `"}`, curator, brain.CodeInvalidArgument, "reason"},
		{"archive archived", "brain_archive", `{"id":"payments/facts/gone","reason":"r"}`, curator, brain.CodeInvalidArgument, "already archived"},
		{"archive missing", "brain_archive", `{"id":"payments/facts/nope","reason":"r"}`, curator, brain.CodeNotFound, "nope"},
		{"archive stale hash", "brain_archive", `{"id":"` + budget + `","reason":"r","expected_hash":"` + strings.Repeat("a", 64) + `"}`, curator, brain.CodeConflict, "current content_hash"},
		{"move by reader", "brain_move", `{"id":"` + budget + `","hall":"decisions","reason":"r"}`, reader, brain.CodeForbidden, "curate"},
		{"move by writer", "brain_move", `{"id":"` + budget + `","hall":"decisions","reason":"r"}`, writer, brain.CodeForbidden, "curate"},
		{"move nowhere", "brain_move", `{"id":"` + budget + `","reason":"r"}`, curator, brain.CodeInvalidArgument, "hall, slug or both"},
		{"move same place", "brain_move", `{"id":"` + budget + `","hall":"facts","reason":"r"}`, curator, brain.CodeInvalidArgument, "already there"},
		{"move onto a note", "brain_move", `{"id":"` + budget + `","hall":"decisions","slug":"use-idempotency-keys","reason":"r"}`, curator, brain.CodeAlreadyExists, "nothing was moved"},
		{"move no reason", "brain_move", `{"id":"` + budget + `","hall":"decisions"}`, curator, brain.CodeInvalidArgument, "reason"},
		{"move bad slug", "brain_move", `{"id":"` + budget + `","slug":"A B","reason":"r"}`, curator, brain.CodeInvalidArgument, "slug"},
		{"move bad hall", "brain_move", `{"id":"` + budget + `","hall":"misc","reason":"r"}`, curator, brain.CodeInvalidArgument, "facts"},
		{"move archived", "brain_move", `{"id":"payments/facts/gone","hall":"decisions","reason":"r"}`, curator, brain.CodeNotFound, "archived"},
		{"purge disabled", "brain_purge", `{"id":"` + budget + `","version":"` + old + `","reason":"leak"}`, curator, brain.CodeForbidden, "--allow-purge"},
		{"purge by writer", "brain_purge", `{"id":"` + budget + `","version":"` + old + `","reason":"leak"}`, writer, brain.CodeForbidden, "curate"},
		{"purge no reason", "brain_purge", `{"id":"` + budget + `","version":"` + cur + `"}`, curator, brain.CodeInvalidArgument, "reason"},
	}
	before := tree(t, root)
	history := func() string {
		var b strings.Builder
		for _, id := range []string{budget, idem, "payments/facts/gone"} {
			h, err := st.Versions(ctx, id, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range h.Versions {
				b.WriteString(v.ID + " ")
			}
		}
		return b.String()
	}
	hist := history()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, isErr := call(t, s, tt.c, tt.tool, tt.args)
			if !isErr {
				t.Fatalf("succeeded: %s", res)
			}
			code, msg := errCode(t, res)
			if code != tt.code || !strings.Contains(msg, tt.inMsg) {
				t.Errorf("got %s %q, want %s containing %q", code, msg, tt.code, tt.inMsg)
			}
			if strings.Contains(msg, root) {
				t.Errorf("message leaks the brain's location: %q", msg)
			}
		})
	}
	if after := tree(t, root); after != before {
		t.Errorf("failed calls changed the brain:\n%s\n---\n%s", before, after)
	}
	if h := history(); h != hist {
		t.Errorf("failed calls changed history:\n%s\n---\n%s", hist, h)
	}
}

// TestHistoryToolsAnswer: the shapes the tools answer with, through a
// story: versions, an old version, a diff, an archive listed and
// restored, a move whose old id answers moved.
func TestHistoryToolsAnswer(t *testing.T) {
	s, _, _ := fixture(t)
	const budget = "payments/facts/retry-budget"
	mustCall(t, s, writer, "brain_update", `{"id":"`+budget+`","body":"Twice.\n","reason":"lowered"}`, nil)
	var h historyResult
	mustCall(t, s, reader, "brain_history", `{"id":"`+budget+`"}`, &h)
	if len(h.Versions) != 2 || h.Versions[0].Action != "update" || h.Versions[0].Reason != "lowered" || h.Versions[0].Tool != "brain_update" ||
		h.Versions[1].Action != "create" || h.Versions[0].By != writer.Email || h.NextCursor != "" {
		t.Fatalf("history: %+v", h)
	}
	var page historyResult
	mustCall(t, s, reader, "brain_history", `{"id":"`+budget+`","limit":1}`, &page)
	if len(page.Versions) != 1 || page.NextCursor == "" {
		t.Fatalf("first page: %+v", page)
	}
	mustCall(t, s, reader, "brain_history", `{"id":"`+budget+`","limit":1,"cursor":"`+page.NextCursor+`"}`, &page)
	if len(page.Versions) != 1 || page.Versions[0].Version != h.Versions[1].Version || page.NextCursor != "" {
		t.Fatalf("second page: %+v", page)
	}
	var g struct {
		Body        string `json:"body"`
		ContentHash string `json:"content_hash"`
		Version     string `json:"version"`
	}
	mustCall(t, s, reader, "brain_get", `{"id":"`+budget+`","version":"`+h.Versions[1].Version+`"}`, &g)
	if !strings.Contains(g.Body, "three times") || g.Version != h.Versions[1].Version || g.ContentHash != h.Versions[1].ContentHash {
		t.Fatalf("old version: %+v", g)
	}
	var d diffResult
	mustCall(t, s, reader, "brain_diff", `{"id":"`+budget+`","from":"`+h.Versions[1].Version+`"}`, &d)
	if !strings.Contains(d.Diff, "-Clients retry a charge at most three times.") || !strings.Contains(d.Diff, "+Twice.") || d.To != h.Versions[0].Version {
		t.Fatalf("diff: %+v", d)
	}

	var a archiveResult
	mustCall(t, s, curator, "brain_archive", `{"id":"`+budget+`","reason":"obsolete"}`, &a)
	if !a.Archived || len(a.LinkedFrom) != 1 || a.LinkedFrom[0] != "payments/decisions/use-idempotency-keys" {
		t.Fatalf("archive: %+v", a)
	}
	var l archivedResult
	mustCall(t, s, reader, "brain_list", `{"archived":true}`, &l)
	if len(l.Notes) != 1 || l.Notes[0].ID != budget || l.Notes[0].ArchivedBy != curator.Email || l.Notes[0].Reason != "obsolete" || l.Notes[0].Title != "Retry budget" {
		t.Fatalf("archived list: %+v", l)
	}
	res, _ := call(t, s, reader, "brain_query", `{"query":"twice"}`)
	if strings.Contains(res, budget) {
		t.Fatalf("the archived note is still found: %s", res)
	}
	var r restoreResult
	mustCall(t, s, writer, "brain_restore", `{"id":"`+budget+`","version":"`+h.Versions[0].Version+`","reason":"still true"}`, &r)
	if r.ContentHash != h.Versions[0].ContentHash || r.Unchanged {
		t.Fatalf("restore: %+v", r)
	}
	res, _ = call(t, s, reader, "brain_query", `{"query":"twice"}`)
	if !strings.Contains(res, budget) {
		t.Fatalf("the restored note is not found: %s", res)
	}

	var m moveResult
	mustCall(t, s, curator, "brain_move", `{"id":"`+budget+`","hall":"decisions","slug":"retry-limit","reason":"we chose it"}`, &m)
	if m.ID != "payments/decisions/retry-limit" || m.MovedFrom != budget || m.LinksRewritten != 1 || len(m.RewrittenIn) != 1 {
		t.Fatalf("move: %+v", m)
	}
	res, isErr := call(t, s, reader, "brain_get", `{"id":"`+budget+`"}`)
	if code, msg := errCode(t, res); !isErr || code != brain.CodeMoved || !strings.Contains(msg, m.ID) || !strings.Contains(msg, "brain_get that id") {
		t.Fatalf("get of the old id: %s", res)
	}
	var links linksResult
	mustCall(t, s, reader, "brain_links", `{"id":"`+m.ID+`"}`, &links)
	if len(links.Backlinks) != 1 {
		t.Fatalf("backlinks of the new id: %+v", links)
	}
	mustCall(t, s, reader, "brain_history", `{"id":"`+budget+`"}`, &h)
	if h.ID != m.ID || h.Versions[0].Action != "move" || h.Versions[0].From != "wiki/"+budget+".md" {
		t.Fatalf("history by the old id: %+v", h)
	}
}
