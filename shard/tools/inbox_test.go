package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/search"
)

// TestInboxSearch: a search's scope takes in the notes waiting in the
// inbox, marked unreviewed and keyed by path; the wiki alone stays the
// default, and its scores do not change with the inbox; a promotion moves
// a note from one to the other, and an inbox file edited behind the
// store's back is searched as it is now.
func TestInboxSearch(t *testing.T) {
	s, st, root := fixture(t)
	query := func(args string) search.Result {
		t.Helper()
		var r search.Result
		mustCall(t, s, reader, "brain_query", args, &r)
		return r
	}
	wiki := query(`{"query":"retry storm","scope":"wiki"}`) // naming scope: the tool's own shape (query and limit alone are the predecessor's)
	for _, h := range wiki.Hits {
		if h.Unreviewed || strings.HasPrefix(h.Path, "inbox/") {
			t.Fatalf("the default scope returned an inbox hit: %+v", h)
		}
	}
	inbox := query(`{"query":"retry storm","scope":"inbox"}`)
	if len(inbox.Hits) != 1 || inbox.Total != 1 || !inbox.Hits[0].Unreviewed || inbox.Hits[0].ID != "" ||
		inbox.Hits[0].Path != "inbox/payments/maybe-retries-cause-storms.md" || inbox.Hits[0].Hall != "hypotheses" || len(inbox.Hits[0].ContentHash) != 64 {
		t.Fatalf("scope inbox = %+v", inbox)
	}
	all := query(`{"query":"retry storm","scope":"all"}`)
	if all.Total != wiki.Total+inbox.Total || len(all.Hits) != len(wiki.Hits)+1 {
		t.Fatalf("scope all = %+v; wiki %d, inbox %d", all, wiki.Total, inbox.Total)
	}
	for i := 1; i < len(all.Hits); i++ {
		if (search.Ranked{Key: all.Hits[i].Path, Score: all.Hits[i].Score}).Less(search.Ranked{Key: all.Hits[i-1].Path, Score: all.Hits[i-1].Score}) {
			t.Fatalf("scope all is not in score order: %+v", all.Hits)
		}
	}
	if again := query(`{"query":"retry storm","scope":"wiki"}`); len(again.Hits) != len(wiki.Hits) || again.Hits[0].Score != wiki.Hits[0].Score {
		t.Fatalf("the inbox changed the wiki's scores: %+v then %+v", wiki, again)
	}
	if h := query(`{"query":"retry storm","scope":"inbox","hall":"facts"}`); len(h.Hits) != 0 {
		t.Fatalf("hall facts kept an inbox note suggesting hypotheses: %+v", h)
	}

	// An edit behind the store's back is searched as it is now.
	path := filepath.Join(root, "inbox", "payments", "maybe-retries-cause-storms.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "storm of retries", "thundering herd", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.Rescan(t.Context()); err != nil {
		t.Fatal(err)
	}
	if h := query(`{"query":"thundering herd","scope":"inbox"}`); len(h.Hits) != 1 || !strings.Contains(h.Hits[0].Snippet, "thundering") {
		t.Fatalf("an outside edit is not searched: %+v", h)
	}

	// Promoted: a wiki note now, gone from the inbox.
	mustCall(t, s, curator, "brain_promote", `{"name":"maybe-retries-cause-storms","hall":"hypotheses"}`, nil)
	if h := query(`{"query":"thundering herd","scope":"inbox"}`); len(h.Hits) != 0 {
		t.Fatalf("a promoted note is still in the inbox's search: %+v", h)
	}
	if h := query(`{"query":"thundering herd"}`); len(h.Hits) != 1 || h.Hits[0].ID != "payments/hypotheses/maybe-retries-cause-storms" || h.Hits[0].Unreviewed {
		t.Fatalf("the promoted note is not found in the wiki: %+v", h)
	}
	if res, isErr := call(t, s, reader, "brain_query", `{"query":"x","scope":"everything"}`); !isErr || !strings.Contains(res, "scope must be one of wiki, inbox, all") {
		t.Fatalf("bad scope = %s", res)
	}
	var raw2 json.RawMessage
	mustCall(t, s, reader, "brain_query", `{"query":"thundering","scope":"all"}`, &raw2)
	if strings.Contains(string(raw2), `"unreviewed":false`) {
		t.Fatalf("a wiki hit carries unreviewed: %s", raw2)
	}
}
