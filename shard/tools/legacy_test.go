package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/search"
)

// The predecessor's call shapes on one wing's tools (legacy.go), a test
// per row of /work/shared/notes/hyperguild-tools.md; e2e/legacy_test.go
// runs each through stdio, the shard and the gateway.

// refused calls a tool that must refuse with code, the message holding
// every one of in.
func refused(t *testing.T, s *Set, c Caller, tool, args, code string, in ...string) {
	t.Helper()
	res, isErr := call(t, s, c, tool, args)
	var e struct {
		Error struct{ Code, Message string }
	}
	if !isErr || json.Unmarshal([]byte(res), &e) != nil || e.Error.Code != code {
		t.Fatalf("%s(%s) = %s; want %s", tool, args, res, code)
	}
	for _, w := range in {
		if !strings.Contains(e.Error.Message, w) {
			t.Errorf("%s(%s) = %s; want it to say %q", tool, args, res, w)
		}
	}
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLegacyWrite(t *testing.T) {
	s, _, root := newKeyedSet(t, nil)
	var r struct {
		ID, Path    string
		ContentHash string `json:"content_hash"`
	}
	res := mustCall(t, s, writer, "brain_write", `{"content":"---\ntitle: From the header\ndomain: old\nstatus: draft\ncreated_by: mallory@example.com\ntags: [a, b]\n---\n# A heading\nThe body.\n","filename":"note-one","type":"insight","domain":"payments"}`, &r)
	if r.ID != "" || r.Path != "inbox/payments/note-one.md" || len(r.ContentHash) != 64 || !strings.HasPrefix(res, `{"id":"","path":`) {
		t.Fatalf("legacy write = %s", res)
	}
	want := "---\ntitle: From the header\nwing: payments\ntags: [a, b]\ncreated_by: will@example.com\ncreated_at: 2026-11-30T08:00:01Z\n" +
		"domain: payments\nstatus: draft\ntype: insight\n---\n# A heading\nThe body.\n"
	if got := readFile(t, root, r.Path); got != want {
		t.Errorf("the note:\n%s\nwant\n%s", got, want)
	}
	for args, path := range map[string]string{
		`{"content":"# The heading\ntext\n","filename":"two.md"}`: "inbox/payments/two.md",
		`{"content":"plain text\n","filename":"Retry_Budget.md"}`: "inbox/payments/retry-budget.md",
	} {
		mustCall(t, s, writer, "brain_write", args, &r)
		if r.Path != path {
			t.Errorf("%s wrote %s, want %s", args, r.Path, path)
		}
	}
	if f := readFile(t, root, "inbox/payments/two.md"); !strings.Contains(f, "title: The heading\n") {
		t.Errorf("the title is not the first heading:\n%s", f)
	}
	if f := readFile(t, root, "inbox/payments/retry-budget.md"); !strings.Contains(f, "title: Retry_Budget\n") {
		t.Errorf("the title is not the file name:\n%s", f)
	}
	for _, bad := range []string{`"../evil.md"`, `"a/b.md"`, `".hidden.md"`, `"..\\x.md"`, `"???.md"`} {
		refused(t, s, writer, "brain_write", `{"content":"x","filename":`+bad+`}`, "invalid_argument", "filename")
	}
	refused(t, s, writer, "brain_write", `{"content":"x","title":"t","body":"b"}`, "invalid_argument", `"content"`, `"title", "body"`, "predecessor's")
	refused(t, s, writer, "brain_write", `{"filename":"x"}`, "invalid_argument", "content is required")
	refused(t, s, writer, "brain_write", `{"content":"---\ntitle: [\n---\nx"}`, "invalid_argument", "content has a frontmatter that cannot be read")
	entries, _ := os.ReadDir(filepath.Join(root, "inbox", "payments"))
	if len(entries) != 3 {
		t.Errorf("the refusals wrote: %d files in the inbox", len(entries))
	}
}

// Without a filename: <UTC yyyy-mm-dd-hhmmss>-auto.md, the next free one
// within a second, and a retry under its key answers the first write.
func TestLegacyWriteAutoName(t *testing.T) {
	frozen := func() time.Time { return time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC) }
	s, _, root := newKeyedSet(t, frozen)
	var paths []string
	for i := range 3 {
		var r struct{ Path string }
		mustCall(t, s, writer, "brain_write", fmt.Sprintf(`{"content":"note %d\n"}`, i), &r)
		paths = append(paths, r.Path)
	}
	want := []string{"inbox/payments/2026-11-30-080000-auto.md", "inbox/payments/2026-11-30-080000-auto-2.md", "inbox/payments/2026-11-30-080000-auto-3.md"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("automatic names %v, want %v", paths, want)
	}
	if f := readFile(t, root, want[0]); !strings.Contains(f, "title: 2026-11-30-080000-auto\n") || !strings.HasSuffix(f, "---\nnote 0\n") {
		t.Errorf("the note:\n%s", f)
	}
	ticking, _, _ := newKeyedSet(t, nil)
	const args = `{"content":"once\n","idempotency_key":"k-legacy-1"}`
	first := mustCall(t, ticking, writer, "brain_write", args, nil)
	if again := mustCall(t, ticking, writer, "brain_write", args, nil); again != first {
		t.Errorf("a retry under the key = %s, first %s", again, first)
	}
	refused(t, ticking, writer, "brain_write", `{"content":"other\n","idempotency_key":"k-legacy-1"}`, "conflict")
}

func TestLegacyQuery(t *testing.T) {
	s, _, _ := fixture(t)
	for i := range 7 {
		mustCall(t, s, writer, "brain_write", fmt.Sprintf(`{"content":"# Zebra %d\nA zebra crossing.\n","filename":"zebra-%d"}`, i, i), nil)
	}
	var r struct {
		Hits    []search.Hit `json:"hits"`
		Total   int64        `json:"total"`
		Results []search.Hit `json:"results"`
	}
	res := mustCall(t, s, reader, "brain_query", `{"query":"zebra"}`, &r)
	if len(r.Hits) != search.LegacyDefaultLimit || r.Total != 7 || !r.Hits[0].Unreviewed {
		t.Fatalf("legacy query = %s: want %d inbox hits of 7 (the predecessor searched the inbox too)", res, search.LegacyDefaultLimit)
	}
	if hits, results, ok := strings.Cut(strings.TrimPrefix(res, `{"hits":`), `,"results":`); !ok || strings.TrimSuffix(results, "}") != hits[:strings.LastIndex(hits, `,"total":`)] {
		t.Errorf("results are not the hits again: %s", res)
	}
	mustCall(t, s, reader, "brain_query", `{"query":"zebra","limit":2}`, &r)
	if len(r.Results) != 2 {
		t.Errorf("limit 2: %d results", len(r.Results))
	}
	if res := mustCall(t, s, reader, "brain_query", `{"query":"retry"}`, nil); !strings.Contains(res, `"results":[{"id":"payments/facts/retry-budget"`) &&
		!strings.Contains(res, `"results":[{"id":"",`) {
		t.Errorf("legacy query over the wiki: %s", res)
	}
	if res := mustCall(t, s, reader, "brain_query", `{"query":"zebra","wing":"payments"}`, nil); strings.Contains(res, "results") || res != `{"hits":[],"total":0}` {
		t.Errorf("the tool's own shape = %s: the wiki only, no results", res)
	}
	if res := mustCall(t, s, reader, "brain_query", `{"query":"nothing-matches"}`, nil); res != `{"hits":[],"total":0,"results":[]}` {
		t.Errorf("no hits = %s", res)
	}
}

func TestLegacyPending(t *testing.T) {
	s, _, _ := newSet(t)
	for i := range PendingDefaultLimit + 3 {
		mustCall(t, s, writer, "brain_write", fmt.Sprintf(`{"content":"Idea %d.\n","filename":"idea-%02d"}`, i, i), nil)
	}
	var r struct {
		Pending []map[string]any `json:"pending"`
	}
	mustCall(t, s, reader, "brain_pending", `{}`, &r)
	if PendingDefaultLimit != 20 || len(r.Pending) != 20 {
		t.Fatalf("pending: %d notes, want the predecessor's default 20", len(r.Pending))
	}
	if p := r.Pending[0]; p["filename"] != "idea-00.md" || p["name"] != "idea-00" || p["created_at"] == "" || p["excerpt"] != "Idea 0." {
		t.Errorf("oldest first, with the predecessor's fields: %v", p)
	}
	empty, _, _ := newSet(t)
	if res := mustCall(t, empty, reader, "brain_pending", `{"limit":20}`, nil); res != `{"pending":[]}` {
		t.Errorf("an empty inbox = %s", res)
	}
}

func TestLegacyUpdate(t *testing.T) {
	s, st, root := fixture(t)
	before, err := st.Get(t.Context(), "payments/facts/retry-budget")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		ID, Path, Superseded string
		ContentHash          string `json:"content_hash"`
	}
	res := mustCall(t, s, writer, "brain_update", `{"wing":"payments","hall":"facts","slug":"retry-budget","body":"Twice at most.\n","reason":"lowered"}`, &r)
	if r.ID != "payments/facts/retry-budget" || r.Superseded != before.Hash || !strings.HasSuffix(res, `,"superseded":"`+before.Hash+`"}`) {
		t.Fatalf("legacy update = %s (prior hash %s)", res, before.Hash)
	}
	f := readFile(t, root, "wiki/payments/facts/retry-budget.md")
	if !strings.Contains(f, "supersedes: "+before.Hash) || !strings.Contains(f, "supersede_reason: lowered\n") || !strings.Contains(f, "created_at: ") || !strings.HasSuffix(f, "\nTwice at most.\n") {
		t.Errorf("the note:\n%s", f)
	}
	for _, args := range []string{
		`{"slug":"wiki/payments/facts/retry-budget.md","body":"Once.\n"}`,
		`{"path":"wiki/payments/facts/retry-budget.md","body":"Never.\n","reason":"r"}`,
		`{"hall":"facts","slug":"retry-budget","body":"Again.\n"}`, // the wing defaults to the shard's
	} {
		prev := r.ContentHash
		mustCall(t, s, writer, "brain_update", args, &r)
		if r.Superseded != prev || r.ID != "payments/facts/retry-budget" {
			t.Errorf("%s = %+v, want superseded %s", args, r, prev)
		}
	}
	if f := readFile(t, root, "wiki/payments/facts/retry-budget.md"); !strings.Contains(f, "supersede_reason: "+legacyNoReason+"\n") {
		t.Errorf("no reason given:\n%s", f)
	}
	if res := mustCall(t, s, writer, "brain_update", `{"id":"payments/facts/retry-budget","body":"x","reason":"own shape"}`, nil); strings.Contains(res, "superseded") {
		t.Errorf("the tool's own shape answers %s", res)
	}
	refused(t, s, writer, "brain_update", `{"wing":"payments","hall":"facts","slug":"no-such-note","body":"x"}`, "not_found")
	if _, err := os.Stat(filepath.Join(root, "wiki", "payments", "facts", "no-such-note.md")); err == nil {
		t.Error("a legacy update created a note")
	}
	refused(t, s, writer, "brain_update", `{"id":"payments/facts/retry-budget","slug":"retry-budget","body":"x","reason":"r"}`, "invalid_argument", `"slug"`, `"id"`)
	refused(t, s, writer, "brain_update", `{"wing":"payments","body":"x"}`, "invalid_argument", "id is required") // shared names only: the tool's shape
	refused(t, s, writer, "brain_update", `{"slug":"retry-budget","body":"x"}`, "invalid_argument", "hall is required with a slug")
	refused(t, s, writer, "brain_update", `{"hall":"facts","path":"wiki/payments/facts/retry-budget.md","body":"x"}`, "invalid_argument", "not both")
	refused(t, s, writer, "brain_update", `{"hall":"stuff","slug":"retry-budget","body":"x"}`, "invalid_argument", "hall must be one of")
}

func TestLegacyIngest(t *testing.T) {
	s, _, root := newSet(t)
	const pages = `"pages":[{"title":"Test Concept","type":"concept","content":"A concept.\n"},{"title":"A decision","type":"decision","content":"We chose.\n"},{"title":"Plain","content":"No type.\n"}]`
	dry := mustCall(t, s, writer, "brain_ingest_raw", `{"source":"handbook",`+pages+`,"dry_run":true}`, nil)
	wantPages := `"pages":["wiki/payments/facts/test-concept.md","wiki/payments/decisions/a-decision.md","wiki/payments/facts/plain.md"]`
	if !strings.Contains(dry, wantPages) || !strings.Contains(dry, `"dry_run":true`) || !strings.Contains(dry, `"report":[{"id":"payments/facts/test-concept"`) {
		t.Fatalf("dry run = %s", dry)
	}
	if _, err := os.Stat(filepath.Join(root, "wiki", "payments", "facts", "test-concept.md")); err == nil {
		t.Fatal("the dry run wrote")
	}
	res := mustCall(t, s, writer, "brain_ingest_raw", `{"source":"handbook",`+pages+`}`, nil)
	if !strings.HasPrefix(res, `{"dry_run":false,"created":3,"exists":0,"invalid":0,"failed":0,`+wantPages+`,"report":[`) {
		t.Fatalf("ingest = %s", res)
	}
	if f := readFile(t, root, "wiki/payments/facts/test-concept.md"); !strings.Contains(f, "\ntype: concept\nsource: handbook\n---\nA concept.\n") {
		t.Errorf("the page:\n%s", f)
	}
	if schema := string(s.byName["brain_ingest_raw"].Spec.OutputSchema()); !strings.Contains(schema, `"pages":{"type":`) || strings.Contains(schema, `"pages":{"type":["array","null"],"items":{"type":"object"`) ||
		strings.Contains(schema, `"pages":{"type":"array","items":{"type":"object"`) {
		t.Errorf("the outputSchema's pages must admit the predecessor's paths: %s", schema)
	}
	again := mustCall(t, s, writer, "brain_ingest_raw", `{"source":"handbook",`+pages+`}`, nil)
	if !strings.Contains(again, `"exists":3`) || !strings.Contains(again, `"pages":[]`) {
		t.Errorf("again = %s: nothing overwritten, no path written", again)
	}
	refused(t, s, writer, "brain_ingest_raw", `{"source":"x","pages":[{"title":"t","content":"c","colour":"red"}]}`, "invalid_argument", `unknown argument "colour" in pages[0]; it accepts: title, type, content`)
	refused(t, s, writer, "brain_ingest_raw", `{"source":"x","pages":[{"title":"t","content":"c","hall":"facts"}]}`, "invalid_argument", "mix two shapes", `"pages[].hall" of Brainstem's`)
	refused(t, s, writer, "brain_ingest_raw", `{"pages":[{"title":"t","content":"c"}]}`, "invalid_argument", "source is required") // the items' names mark the shape
	refused(t, s, writer, "brain_ingest_raw", `{"source":"x","pages":[{"title":"t","content":"c"},{"title":"u","body":"b","hall":"facts"}]}`, "invalid_argument",
		`"source", "pages[].content" of the predecessor's`, `"pages[].body", "pages[].hall" of Brainstem's`)
	refused(t, s, writer, "brain_ingest_raw", `{"source":"x","pages":[{"title":"t","body":"c","hall":"facts"}]}`, "invalid_argument", `"source" of the predecessor's`, `"pages[].body", "pages[].hall" of Brainstem's`)
	if h := hallOfType("Hypothesis"); h != "hypotheses" || hallOfType("sources") != "sources" || hallOfType("failure") != "failures" || hallOfType("entity") != "facts" {
		t.Errorf("hallOfType: %s", h)
	}
}

func TestLegacySessionLog(t *testing.T) {
	s, _, root := newSet(t)
	var r struct {
		Session string
		Line    int
	}
	mustCall(t, s, writer, "session_log", `{"session_id":"run-1","skill":"review","phase":"start","project_root":"/src/app","final_status":"ok","file_path":"a.go","model_used":"m","duration_ms":0,"message":"two\nlines"}`, &r)
	mustCall(t, s, writer, "session_log", `{"session_id":"run-1","final_status":"skipped"}`, &r)
	if r.Session != "run-1" || r.Line != 2 {
		t.Fatalf("session_log = %+v", r)
	}
	log := readFile(t, root, "sessions/payments/run-1.jsonl")
	if !strings.Contains(log, `"entry":{"session_id":"run-1","skill":"review","phase":"start","project_root":"/src/app","final_status":"ok","file_path":"a.go","model_used":"m","duration_ms":0,"message":"two\nlines"}`) ||
		!strings.Contains(log, `"entry":{"session_id":"run-1","final_status":"skipped"}`) {
		t.Errorf("the log:\n%s", log)
	}
	refused(t, s, writer, "session_log", `{"session_id":"run-1","final_status":"fine"}`, "invalid_argument", "final_status must be one of ok, error, skipped")
	refused(t, s, writer, "session_log", `{"skill":"x"}`, "invalid_argument", "session_id is required")
	refused(t, s, writer, "session_log", `{"session_id":"../x"}`, "invalid_argument", "session")
	refused(t, s, writer, "session_log", `{"session_id":"run-1","duration_ms":"5"}`, "invalid_argument", `"duration_ms" must be an integer`)
	refused(t, s, writer, "session_log", `{"session_id":"run-1","entry":{}}`, "invalid_argument", `"session_id"`, `"entry"`)

	var read struct {
		Entries []struct {
			Line  int
			Entry map[string]any
		}
		Total int
	}
	mustCall(t, s, reader, "session_read", `{"session_id":"run-1"}`, &read)
	if read.Total != 2 || len(read.Entries) != 2 || read.Entries[1].Entry["final_status"] != "skipped" {
		t.Errorf("legacy read = %+v", read)
	}
	if res := mustCall(t, s, reader, "session_read", `{"session_id":"never-logged"}`, nil); !strings.Contains(res, `"entries":[],"total":0`) {
		t.Errorf("a log that does not exist, in the legacy shape = %s", res)
	}
	refused(t, s, reader, "session_read", `{"session":"never-logged"}`, "not_found") // the tool's own shape
}

func TestLegacyPromote(t *testing.T) {
	s, _, root := fixture(t)
	var r struct{ ID, Path string }
	mustCall(t, s, curator, "brain_promote", `{"filename":"maybe-retries-cause-storms.md","wing":"payments","hall":"hypotheses","slug":"retry-storms"}`, &r)
	if r.ID != "payments/hypotheses/retry-storms" {
		t.Fatalf("legacy promote = %+v", r)
	}
	f := readFile(t, root, "wiki/payments/hypotheses/retry-storms.md")
	if !strings.Contains(f, "created_at: ") || !strings.Contains(f, "hall: hypotheses") || !strings.Contains(f, "promoted_by: cora@example.com") {
		t.Errorf("the promoted note:\n%s", f)
	}
	mustCall(t, s, writer, "brain_write", `{"content":"Another idea.\n","filename":"another"}`, nil)
	refused(t, s, curator, "brain_promote", `{"filename":"another","wing":"payments","hall":"nonsense","slug":"x"}`, "invalid_argument", "hall must be one of")
	refused(t, s, curator, "brain_promote", `{"filename":"another","wing":"payments","hall":"facts"}`, "invalid_argument", "slug is required")
	refused(t, s, curator, "brain_promote", `{"filename":"another","hall":"facts","slug":"x"}`, "invalid_argument", "wing is required")
	refused(t, s, curator, "brain_promote", `{"filename":"another","wing":"payments","hall":"hypotheses","slug":"retry-storms"}`, "already_exists")
	refused(t, s, curator, "brain_promote", `{"filename":"another","name":"another","hall":"facts","slug":"x"}`, "invalid_argument", `"filename"`, `"name"`)
	if _, err := os.Stat(filepath.Join(root, "inbox", "payments", "another.md")); err != nil {
		t.Errorf("a refused promotion touched the inbox note: %v", err)
	}
	mustCall(t, s, curator, "brain_promote", `{"filename":"another","wing":"payments","hall":"facts","slug":"another-idea"}`, &r)
	if r.ID != "payments/facts/another-idea" {
		t.Errorf("without .md: %+v", r)
	}
}

func TestLegacyGet(t *testing.T) {
	s, _, _ := fixture(t)
	byID := mustCall(t, s, reader, "brain_get", `{"id":"wiki/payments/facts/retry-budget.md"}`, nil)
	byPath := mustCall(t, s, reader, "brain_get", `{"path":"wiki/payments/facts/retry-budget.md"}`, nil)
	var g struct {
		ID, Path    string
		ContentHash string `json:"content_hash"`
	}
	if err := json.Unmarshal([]byte(byID), &g); err != nil || byID != byPath || g.ID != "payments/facts/retry-budget" || g.Path != "wiki/payments/facts/retry-budget.md" {
		t.Errorf("by id %s\nby path %s", byID, byPath)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(g.ContentHash) {
		t.Errorf("content_hash %q", g.ContentHash)
	}
}
