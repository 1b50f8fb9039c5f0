package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/store"
)

const wing = "payments"

var (
	reader  = Caller{Email: "rita@example.com", Caps: brain.CapRead}
	writer  = Caller{Email: "will@example.com", Caps: brain.CapRead | brain.CapWrite}
	curator = Caller{Email: "cora@example.com", Caps: brain.CapRead | brain.CapWrite | brain.CapCurate}
)

// fixedClock advances one second per reading from a fixed start.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func newSet(t testing.TB) (*Set, *store.Store, string) {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(context.Background(), store.Options{Root: root, Wing: wing, Now: fixedClock(), RescanInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st, Options{}), st, root
}

// call runs a tool and checks the result is compact, valid JSON.
func call(t testing.TB, s *Set, c Caller, name, args string) (string, bool) {
	t.Helper()
	res, isErr := s.Call(context.Background(), c, name, []byte(args))
	if !json.Valid(res) {
		t.Fatalf("%s(%s) returned invalid JSON: %s", name, args, res)
	}
	return string(res), isErr
}

// mustCall runs a tool that must succeed and decodes its result.
func mustCall(t testing.TB, s *Set, c Caller, name, args string, v any) string {
	t.Helper()
	res, isErr := call(t, s, c, name, args)
	if isErr {
		t.Fatalf("%s(%s) failed: %s", name, args, res)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(res), v); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// errCode parses an error result and checks its exact shape.
func errCode(t testing.TB, res string) (code brain.Code, msg string) {
	t.Helper()
	var e brain.ErrorBody
	dec := json.NewDecoder(strings.NewReader(res))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error result %s: %v", res, err)
	}
	if !strings.HasPrefix(res, `{"error":{"code":"`) || e.Error.Message == "" {
		t.Fatalf("error result has the wrong shape: %s", res)
	}
	return e.Error.Code, e.Error.Message
}

func TestDescriptors(t *testing.T) {
	s, _, _ := newKeyedSet(t, nil) // purging on: every tool is listed (TestDisabledToolsUnlisted)
	var ds []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		} `json:"inputSchema"`
		Annotations map[string]any `json:"annotations"`
		Meta        map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(s.Descriptors(), &ds); err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{"brain_query", "brain_get", "brain_list", "brain_links", "brain_pending", "brain_write", "brain_update", "brain_ingest_raw", "session_log", "brain_promote", "session_list", "session_read",
		"brain_history", "brain_diff", "brain_restore", "brain_archive", "brain_move", "brain_purge"}
	wantCap := map[string]string{"brain_query": "read", "brain_get": "read", "brain_list": "read", "brain_links": "read", "brain_pending": "read",
		"brain_write": "write", "brain_update": "write", "brain_ingest_raw": "write", "session_log": "write", "brain_promote": "curate",
		"session_list": "read", "session_read": "read", "brain_history": "read", "brain_diff": "read", "brain_restore": "write",
		"brain_archive": "curate", "brain_move": "curate", "brain_purge": "curate"}
	if len(ds) != len(wantOrder) {
		t.Fatalf("%d descriptors", len(ds))
	}
	specs := s.Specs()
	for i, d := range ds {
		if d.Name != wantOrder[i] || specs[i].Name != d.Name {
			t.Errorf("descriptor %d = %s, want %s", i, d.Name, wantOrder[i])
		}
		if d.Meta[brain.CapabilityMetaKey] != wantCap[d.Name] {
			t.Errorf("%s capability %q, want %q", d.Name, d.Meta[brain.CapabilityMetaKey], wantCap[d.Name])
		}
		if tool, ok := s.Lookup(d.Name); !ok || tool.Spec.Capability().Strongest() != wantCap[d.Name] || specs[i].Capability() != tool.Spec.Capability() {
			t.Errorf("Lookup(%s) = %v", d.Name, tool)
		}
		if d.InputSchema.Type != "object" || d.InputSchema.AdditionalProperties == nil || *d.InputSchema.AdditionalProperties {
			t.Errorf("%s schema is not a closed object", d.Name)
		}
		if _, ok := d.InputSchema.Properties["wing"]; !ok {
			t.Errorf("%s has no wing argument", d.Name)
		}
		for _, r := range d.InputSchema.Required {
			if _, ok := d.InputSchema.Properties[r]; !ok {
				t.Errorf("%s requires unknown %s", d.Name, r)
			}
		}
		for _, k := range []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := d.Annotations[k]; !ok {
				t.Errorf("%s annotations lack %s", d.Name, k)
			}
		}
		if d.Annotations["openWorldHint"] != false || d.Annotations["readOnlyHint"] != (wantCap[d.Name] == "read") {
			t.Errorf("%s annotations %v", d.Name, d.Annotations)
		}
		if len(d.Description) < 80 {
			t.Errorf("%s description too thin for an agent: %q", d.Name, d.Description)
		}
	}
	if _, ok := s.Lookup("nope"); ok {
		t.Error("Lookup of an unknown tool")
	}
	// Descriptors are stable bytes.
	if string(New(s.st, Options{}).Descriptors()) != string(s.Descriptors()) {
		t.Error("descriptors differ between two sets")
	}
}

// TestCallGuards covers what Call checks before any tool runs, and the
// argument decoding shared by all tools.
func TestCallGuards(t *testing.T) {
	s, _, _ := newSet(t)
	tests := []struct {
		name   string
		c      Caller
		tool   string
		args   string
		code   brain.Code
		inMsg  string
		mutate func(*Set)
	}{
		{name: "unknown tool", c: curator, tool: "brain_delete", args: `{}`, code: brain.CodeUnknownTool, inMsg: "brain_query"},
		{name: "read without read", c: Caller{Email: "x@example.com"}, tool: "brain_query", args: `{"query":"x"}`, code: brain.CodeForbidden, inMsg: "read"},
		{name: "write as reader", c: reader, tool: "brain_write", args: `{"title":"t","body":"b","hall":"facts"}`, code: brain.CodeForbidden, inMsg: "write"},
		{name: "promote as writer", c: writer, tool: "brain_promote", args: `{"name":"x","hall":"facts"}`, code: brain.CodeForbidden, inMsg: "curate"},
		{name: "write without email", c: Caller{Caps: brain.CapRead | brain.CapWrite}, tool: "brain_write", args: `{"title":"t","body":"b","hall":"facts"}`, code: brain.CodeForbidden, inMsg: "email"},
		{name: "args too large", c: curator, tool: "brain_query", args: `{"query":"` + strings.Repeat("a", 1<<20) + `"}`, code: brain.CodeTooLarge},
		{name: "unknown argument", c: reader, tool: "brain_query", args: `{"query":"x","qurey":"y"}`, code: brain.CodeInvalidArgument, inMsg: `"qurey"`},
		{name: "wrong type", c: reader, tool: "brain_query", args: `{"query":7}`, code: brain.CodeInvalidArgument, inMsg: `"query" must be a string`},
		{name: "wrong type limit", c: reader, tool: "brain_list", args: `{"limit":"9"}`, code: brain.CodeInvalidArgument, inMsg: `"limit" must be an integer`},
		{name: "not an object", c: reader, tool: "brain_list", args: `[]`, code: brain.CodeInvalidArgument, inMsg: "object"},
		{name: "syntax error", c: reader, tool: "brain_list", args: `{"limit":`, code: brain.CodeInvalidArgument, inMsg: "JSON"},
		{name: "trailing data", c: reader, tool: "brain_list", args: `{} {}`, code: brain.CodeInvalidArgument, inMsg: "nothing after"},
		{name: "cancelled", c: reader, tool: "brain_list", args: `{}`, code: brain.CodeInternal, inMsg: "cancel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.name == "cancelled" {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			res, isErr := s.Call(ctx, tt.c, tt.tool, []byte(tt.args))
			if !isErr {
				t.Fatalf("succeeded: %s", res)
			}
			code, msg := errCode(t, string(res))
			if code != tt.code || !strings.Contains(msg, tt.inMsg) {
				t.Errorf("got %s %q, want %s containing %q", code, msg, tt.code, tt.inMsg)
			}
		})
	}
	// Capabilities imply each other: curate alone may read and write.
	if res, isErr := s.Call(context.Background(), Caller{Email: "c@example.com", Caps: brain.CapCurate}, "brain_list", []byte(`{}`)); isErr {
		t.Errorf("curate-only caller cannot read: %s", res)
	}
	// Empty and null arguments are an empty object.
	for _, args := range []string{"", "null", " {} "} {
		if res, isErr := s.Call(context.Background(), reader, "brain_list", []byte(args)); isErr {
			t.Errorf("brain_list(%q) = %s", args, res)
		}
	}
	// Every tool refuses a wing other than the shard's, naming the shard's.
	for _, tool := range s.Specs() {
		res, isErr := call(t, s, curator, tool.Name, `{"wing":"billing"}`)
		code, msg := errCode(t, res)
		if !isErr || code != brain.CodeInvalidArgument || !strings.Contains(msg, `"payments"`) {
			t.Errorf("%s with another wing = %s", tool.Name, res)
		}
	}
}

// fixture fills a brain through the tools and returns the set.
func fixture(t *testing.T) (*Set, *store.Store, string) {
	s, st, root := newSet(t)
	mustCall(t, s, writer, "brain_write", `{"title":"Use idempotency keys","body":"Every charge request carries an idempotency key. See [[facts/retry-budget]] and [[billing/decisions/ledger]].\n","hall":"decisions","tags":["api","reliability"]}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Retry budget","body":"Clients retry a charge at most three times.\n","hall":"facts"}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Maybe retries cause storms","body":"We saw a storm of retries.\n","inbox":true,"hall":"hypotheses"}`, nil)
	return s, st, root
}

func TestToolsHappyPaths(t *testing.T) {
	s, st, root := fixture(t)
	idem := "payments/decisions/use-idempotency-keys"
	rawIdem, err := os.ReadFile(filepath.Join(root, "wiki", idem+".md"))
	if err != nil {
		t.Fatal(err)
	}
	hIdem := store.HashOf(rawIdem)

	t.Run("brain_write result", func(t *testing.T) {
		res := mustCall(t, s, writer, "brain_write", `{"title":"Card networks","body":"Visa <and> Mastercard & co.","hall":"sources","slug":"cards"}`, nil)
		raw, _ := os.ReadFile(filepath.Join(root, "wiki/payments/sources/cards.md"))
		want := `{"id":"payments/sources/cards","path":"wiki/payments/sources/cards.md","content_hash":"` + store.HashOf(raw) + `"}`
		if res != want {
			t.Errorf("got  %s\nwant %s", res, want)
		}
		if !strings.Contains(string(raw), "created_by: will@example.com\n") {
			t.Errorf("authorship not recorded:\n%s", raw)
		}
	})
	t.Run("brain_query", func(t *testing.T) {
		var r search.Result
		res := mustCall(t, s, reader, "brain_query", `{"query":"idempotency key"}`, &r)
		if r.Total != 1 || len(r.Hits) != 1 || r.Hits[0].ID != idem || r.Hits[0].Wing != wing || r.Hits[0].Hall != "decisions" ||
			r.Hits[0].Title != "Use idempotency keys" || r.Hits[0].ContentHash != hIdem || r.Hits[0].Path != "wiki/"+idem+".md" ||
			r.Hits[0].Score <= 0 || !strings.Contains(r.Hits[0].Snippet, "idempotency") {
			t.Errorf("query = %s", res)
		}
		if !strings.HasPrefix(res, `{"hits":[{"id":`) {
			t.Errorf("field order: %s", res)
		}
		mustCall(t, s, reader, "brain_query", `{"query":"charge","hall":"facts","limit":1}`, &r)
		if len(r.Hits) != 1 || r.Hits[0].ID != "payments/facts/retry-budget" {
			t.Errorf("hall filter: %+v", r)
		}
		if res := mustCall(t, s, reader, "brain_query", `{"query":"zebra","wing":"payments"}`, nil); res != `{"hits":[],"total":0}` {
			t.Errorf("no hits = %s", res)
		}
		if qs := s.st.TermStats(search.Terms("retry"), search.ScopeWiki); qs.Docs != 3 || qs.DocFreq["retry"] != 2 {
			t.Errorf("TermStats = %+v", qs)
		}
	})
	t.Run("brain_get", func(t *testing.T) {
		want := `{"id":"` + idem + `","path":"wiki/` + idem + `.md","content_hash":"` + hIdem + `","frontmatter":{"title":"Use idempotency keys","wing":"payments","hall":"decisions","tags":["api","reliability"],"created_by":"will@example.com","created_at":"2026-11-30T08:00:01Z"},"body":"Every charge request carries an idempotency key. See [[facts/retry-budget]] and [[billing/decisions/ledger]].\n"}`
		for _, args := range []string{`{"id":"` + idem + `"}`, `{"id":"wiki/` + idem + `.md"}`, `{"path":"wiki/` + idem + `.md","wing":"payments"}`} {
			if res := mustCall(t, s, reader, "brain_get", args, nil); res != want {
				t.Errorf("get(%s)\n got %s\nwant %s", args, res, want)
			}
		}
		var g struct{ Body string }
		res := mustCall(t, s, reader, "brain_get", `{"path":"inbox/payments/maybe-retries-cause-storms.md"}`, &g)
		if !strings.HasPrefix(res, `{"id":"","path":"inbox/payments/maybe-retries-cause-storms.md"`) || g.Body != "We saw a storm of retries.\n" {
			t.Errorf("inbox get = %s", res)
		}
	})
	t.Run("brain_list", func(t *testing.T) {
		var l listResult
		res := mustCall(t, s, reader, "brain_list", `{"limit":1}`, &l)
		if len(l.Notes) != 1 || l.Notes[0].ID != idem || l.NextCursor == "" || l.Notes[0].UpdatedAt != "2026-11-30T08:00:01Z" {
			t.Errorf("list = %s", res)
		}
		var ids []string
		for cursor := ""; ; {
			mustCall(t, s, reader, "brain_list", `{"limit":1,"cursor":"`+cursor+`"}`, &l)
			for _, n := range l.Notes {
				ids = append(ids, n.ID)
			}
			if cursor = l.NextCursor; cursor == "" {
				break
			}
		}
		if strings.Join(ids, ",") != idem+",payments/facts/retry-budget,payments/sources/cards" {
			t.Errorf("paged ids = %v", ids)
		}
		if res := mustCall(t, s, reader, "brain_list", `{"hall":"failures"}`, nil); res != `{"notes":[],"next_cursor":""}` {
			t.Errorf("empty hall = %s", res)
		}
	})
	t.Run("brain_links", func(t *testing.T) {
		res := mustCall(t, s, reader, "brain_links", `{"id":"`+idem+`"}`, nil)
		if want := `{"id":"` + idem + `","outbound":["payments/facts/retry-budget","billing/decisions/ledger"],"backlinks":[],"tunnels":["billing/decisions/ledger"]}`; res != want {
			t.Errorf("links\n got %s\nwant %s", res, want)
		}
		res = mustCall(t, s, reader, "brain_links", `{"id":"payments/facts/retry-budget"}`, nil)
		if want := `{"id":"payments/facts/retry-budget","outbound":[],"backlinks":["` + idem + `"],"tunnels":[]}`; res != want {
			t.Errorf("links\n got %s\nwant %s", res, want)
		}
		// With this wing named, a note of another wing: the links into it from here.
		for _, tc := range []struct{ args, want string }{
			{`{"wing":"payments","id":"billing/decisions/ledger"}`, `{"id":"billing/decisions/ledger","outbound":[],"backlinks":["` + idem + `"],"tunnels":[]}`},
			{`{"wing":"payments","id":"billing/facts/nothing-links-here"}`, `{"id":"billing/facts/nothing-links-here","outbound":[],"backlinks":[],"tunnels":[]}`},
		} {
			if res := mustCall(t, s, reader, "brain_links", tc.args, nil); res != tc.want {
				t.Errorf("links %s\n got %s\nwant %s", tc.args, res, tc.want)
			}
		}
		for _, bad := range []string{`{"wing":"payments","id":"billing"}`, `{"wing":"billing","id":"billing/decisions/ledger"}`} {
			if res, isErr := call(t, s, reader, "brain_links", bad); !isErr {
				t.Errorf("links %s = %s", bad, res)
			} else if code, _ := errCode(t, res); code != brain.CodeInvalidArgument {
				t.Errorf("links %s = %s, want invalid_argument", bad, res)
			}
		}
	})
	t.Run("brain_pending", func(t *testing.T) {
		res := mustCall(t, s, reader, "brain_pending", `{}`, nil)
		want := `{"pending":[{"name":"maybe-retries-cause-storms","filename":"maybe-retries-cause-storms.md","path":"inbox/payments/maybe-retries-cause-storms.md","title":"Maybe retries cause storms","hall":"hypotheses","created_by":"will@example.com","created_at":"2026-11-30T08:00:03Z","excerpt":"We saw a storm of retries."}]}`
		if res != want {
			t.Errorf("pending\n got %s\nwant %s", res, want)
		}
	})
	t.Run("brain_update", func(t *testing.T) {
		var u writeResult
		mustCall(t, s, writer, "brain_update", `{"id":"`+idem+`","body":"Keys expire after 24h.\n","reason":"added expiry","expected_hash":"`+hIdem+`"}`, &u)
		raw, _ := os.ReadFile(filepath.Join(root, "wiki", idem+".md"))
		if u.ContentHash != store.HashOf(raw) || !strings.Contains(string(raw), "supersedes: "+hIdem+"\n") || !strings.Contains(string(raw), "updated_by: will@example.com\n") {
			t.Errorf("update: %+v\n%s", u, raw)
		}
		res, isErr := call(t, s, writer, "brain_update", `{"id":"`+idem+`","body":"x","reason":"stale","expected_hash":"`+hIdem+`"}`)
		if code, msg := errCode(t, res); !isErr || code != brain.CodeConflict || !strings.Contains(msg, u.ContentHash) {
			t.Errorf("stale update = %s", res)
		}
	})
	t.Run("brain_ingest_raw", func(t *testing.T) {
		args := `{"pages":[
			{"hall":"facts","title":"Settlement takes two days","body":"T+2."},
			{"hall":"facts","title":"Retry budget","body":"dup of an existing note"},
			{"hall":"gossip","title":"Bad hall","body":"x"},
			{"hall":"facts","title":"Settlement takes two days","body":"dup in batch"}]}`
		res := mustCall(t, s, writer, "brain_ingest_raw", strings.Replace(args, `{"pages"`, `{"dry_run":true,"pages"`, 1), nil)
		if !strings.HasPrefix(res, `{"dry_run":true,"created":1,"exists":1,"invalid":2,"failed":0,"pages":[{"id":"payments/facts/settlement-takes-two-days","path":"wiki/payments/facts/settlement-takes-two-days.md","status":"created"},{"id":"payments/facts/retry-budget","path":"wiki/payments/facts/retry-budget.md","status":"exists","content_hash":"`) {
			t.Errorf("dry run = %s", res)
		}
		if _, err := os.Stat(filepath.Join(root, "wiki/payments/facts/settlement-takes-two-days.md")); err == nil {
			t.Fatal("dry run wrote a page")
		}
		var r ingestResult
		mustCall(t, s, writer, "brain_ingest_raw", args, &r)
		if r.DryRun || r.Created != 1 || r.Exists != 1 || r.Invalid != 2 || r.Pages[0].ContentHash == "" ||
			r.Pages[2].Status != StatusInvalid || !strings.Contains(r.Pages[2].Error, "hall") ||
			r.Pages[3].Status != StatusInvalid || !strings.Contains(r.Pages[3].Error, "pages[0]") {
			t.Errorf("ingest = %+v", r)
		}
		raw, _ := os.ReadFile(filepath.Join(root, "wiki/payments/facts/settlement-takes-two-days.md"))
		if store.HashOf(raw) != r.Pages[0].ContentHash || !strings.HasSuffix(string(raw), "\n---\nT+2.") {
			t.Errorf("ingested file:\n%s", raw)
		}
	})
	t.Run("session_log", func(t *testing.T) {
		for i := 1; i <= 2; i++ {
			res := mustCall(t, s, writer, "session_log", `{"session":"2026-11-30.fix","entry":{"did":"step `+fmt.Sprint(i)+`","n":[1, 2]}}`, nil)
			if want := fmt.Sprintf(`{"session":"2026-11-30.fix","path":"sessions/payments/2026-11-30.fix.jsonl","line":%d}`, i); res != want {
				t.Errorf("session_log = %s, want %s", res, want)
			}
		}
		raw, _ := os.ReadFile(filepath.Join(root, "sessions/payments/2026-11-30.fix.jsonl"))
		if lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"by":"will@example.com","entry":{"did":"step 2","n":[1,2]}}`) {
			t.Errorf("log:\n%s", raw)
		}
	})
	t.Run("brain_promote", func(t *testing.T) {
		var p promoteResult
		res := mustCall(t, s, curator, "brain_promote", `{"name":"maybe-retries-cause-storms","hall":"hypotheses","slug":"retry-storms"}`, &p)
		raw, _ := os.ReadFile(filepath.Join(root, "wiki/payments/hypotheses/retry-storms.md"))
		if p.ID != "payments/hypotheses/retry-storms" || p.ContentHash != store.HashOf(raw) || p.Tunnels == nil || !strings.Contains(string(raw), "promoted_by: cora@example.com\n") {
			t.Errorf("promote = %s\n%s", res, raw)
		}
		if res := mustCall(t, s, reader, "brain_pending", `{}`, nil); res != `{"pending":[]}` {
			t.Errorf("pending after promote = %s", res)
		}
		if err := st.SyncIndex(); err != nil { // _index.md is written behind by default
			t.Fatal(err)
		}
		toc, _ := os.ReadFile(filepath.Join(root, "wiki/payments/_index.md"))
		if !strings.Contains(string(toc), "[[payments/hypotheses/retry-storms]] — Maybe retries cause storms") {
			t.Errorf("_index.md:\n%s", toc)
		}
	})
}

func TestToolErrors(t *testing.T) {
	s, _, root := fixture(t)
	idem := "payments/decisions/use-idempotency-keys"
	mustCall(t, s, writer, "brain_write", `{"title":"Taken","body":"b","inbox":true}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Taken","body":"b","hall":"facts"}`, nil)
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name, tool, args string
		c                Caller
		code             brain.Code
		inMsg            string
	}{
		{"query missing", "brain_query", `{}`, reader, brain.CodeInvalidArgument, "query is required"},
		{"query blank", "brain_query", `{"query":"  "}`, reader, brain.CodeInvalidArgument, "query"},
		{"query too long", "brain_query", `{"query":"` + long(1025) + `"}`, reader, brain.CodeTooLarge, "1024"},
		{"query too many terms", "brain_query", `{"query":"` + strings.Repeat("word ", 33) + `"}`, reader, brain.CodeTooLarge, "32"},
		{"query bad hall", "brain_query", `{"query":"x","hall":"gossip"}`, reader, brain.CodeInvalidArgument, "facts"},
		{"query limit 0", "brain_query", `{"query":"x","limit":0}`, reader, brain.CodeInvalidArgument, "between 1 and 50"},
		{"query limit 51", "brain_query", `{"query":"x","limit":51}`, reader, brain.CodeInvalidArgument, "between 1 and 50"},
		{"get nothing", "brain_get", `{}`, reader, brain.CodeInvalidArgument, "id or path"},
		{"get both", "brain_get", `{"id":"` + idem + `","path":"wiki/` + idem + `.md"}`, reader, brain.CodeInvalidArgument, "not both"},
		{"get missing", "brain_get", `{"id":"payments/facts/nope"}`, reader, brain.CodeNotFound, "payments/facts/nope"},
		{"get missing inbox", "brain_get", `{"path":"inbox/payments/nope.md"}`, reader, brain.CodeNotFound, "inbox"},
		{"get other wing", "brain_get", `{"id":"billing/facts/x"}`, reader, brain.CodeForbidden, `"billing"`},
		{"get escape", "brain_get", `{"id":"payments/facts/../../../etc/passwd"}`, reader, brain.CodeInvalidArgument, ""},
		{"get bad path", "brain_get", `{"path":"/etc/passwd"}`, reader, brain.CodeInvalidArgument, "wiki/ or inbox/"},
		{"get bad inbox path", "brain_get", `{"path":"inbox/payments/../x.md"}`, reader, brain.CodeInvalidArgument, ""},
		{"list bad cursor", "brain_list", `{"cursor":"%%%"}`, reader, brain.CodeInvalidArgument, "cursor"},
		{"list limit 201", "brain_list", `{"limit":201}`, reader, brain.CodeInvalidArgument, "between 1 and 200"},
		{"list bad hall", "brain_list", `{"hall":"Facts"}`, reader, brain.CodeInvalidArgument, "facts"},
		{"links missing id", "brain_links", `{}`, reader, brain.CodeInvalidArgument, "id is required"},
		{"links not found", "brain_links", `{"id":"payments/facts/nope"}`, reader, brain.CodeNotFound, "nope"},
		{"pending limit", "brain_pending", `{"limit":0}`, reader, brain.CodeInvalidArgument, "between 1 and 200"},
		{"write no title", "brain_write", `{"body":"b","hall":"facts"}`, writer, brain.CodeInvalidArgument, "title"},
		{"write no body", "brain_write", `{"title":"t","hall":"facts"}`, writer, brain.CodeInvalidArgument, "body"},
		{"write no hall", "brain_write", `{"title":"t","body":"b"}`, writer, brain.CodeInvalidArgument, "hall is required"},
		{"write bad hall", "brain_write", `{"title":"t","body":"b","hall":"misc"}`, writer, brain.CodeInvalidArgument, "facts"},
		{"write bad slug", "brain_write", `{"title":"t","body":"b","hall":"facts","slug":"../../x"}`, writer, brain.CodeInvalidArgument, "slug"},
		{"write no slug possible", "brain_write", `{"title":"???","body":"b","hall":"facts"}`, writer, brain.CodeInvalidArgument, "pass a slug"},
		{"write title newline", "brain_write", `{"title":"a\nb","body":"b","hall":"facts"}`, writer, brain.CodeInvalidArgument, "one line"},
		{"write title too long", "brain_write", `{"title":"` + long(301) + `","body":"b","hall":"facts"}`, writer, brain.CodeTooLarge, "300"},
		{"write body too long", "brain_write", `{"title":"t","body":"` + long(256<<10+1) + `","hall":"facts"}`, writer, brain.CodeTooLarge, "262144"},
		{"write too many tags", "brain_write", `{"title":"t","body":"b","hall":"facts","tags":[` + strings.Repeat(`"x",`, 32) + `"x"]}`, writer, brain.CodeTooLarge, "32"},
		{"write tag too long", "brain_write", `{"title":"t","body":"b","hall":"facts","tags":["` + long(65) + `"]}`, writer, brain.CodeTooLarge, "64"},
		{"write empty tag", "brain_write", `{"title":"t","body":"b","hall":"facts","tags":[""]}`, writer, brain.CodeInvalidArgument, "tags[0]"},
		{"write exists", "brain_write", `{"title":"Taken","body":"again","hall":"facts"}`, writer, brain.CodeAlreadyExists, "already exists"},
		{"write inbox exists", "brain_write", `{"title":"Taken","body":"again","inbox":true}`, writer, brain.CodeAlreadyExists, "already exists"},
		{"update missing", "brain_update", `{"id":"payments/facts/nope","body":"b","reason":"r"}`, writer, brain.CodeNotFound, "nope"},
		{"update no reason", "brain_update", `{"id":"` + idem + `","body":"b"}`, writer, brain.CodeInvalidArgument, "reason"},
		{"update no id", "brain_update", `{"body":"b","reason":"r"}`, writer, brain.CodeInvalidArgument, "id is required"},
		{"update blank body", "brain_update", `{"id":"` + idem + `","body":" ","reason":"r"}`, writer, brain.CodeInvalidArgument, "body"},
		{"update bad hash", "brain_update", `{"id":"` + idem + `","body":"b","reason":"r","expected_hash":"abc"}`, writer, brain.CodeInvalidArgument, "64"},
		{"update conflict", "brain_update", `{"id":"` + idem + `","body":"b","reason":"r","expected_hash":"` + strings.Repeat("0", 64) + `"}`, writer, brain.CodeConflict, "current content_hash"},
		{"update other wing", "brain_update", `{"id":"billing/facts/x","body":"b","reason":"r"}`, writer, brain.CodeForbidden, "billing"},
		{"update body too long", "brain_update", `{"id":"` + idem + `","body":"` + long(256<<10+1) + `","reason":"r"}`, writer, brain.CodeTooLarge, "262144"},
		{"ingest no pages", "brain_ingest_raw", `{"pages":[]}`, writer, brain.CodeInvalidArgument, "pages"},
		{"ingest too many", "brain_ingest_raw", `{"pages":[` + strings.Repeat(`{"hall":"facts","title":"t","body":"b"},`, 100) + `{"hall":"facts","title":"t","body":"b"}]}`, writer, brain.CodeTooLarge, "100"},
		{"ingest unknown page field", "brain_ingest_raw", `{"pages":[{"hall":"facts","title":"t","body":"b","id":"x"}]}`, writer, brain.CodeInvalidArgument, `"id"`},
		{"session missing", "session_log", `{"entry":{}}`, writer, brain.CodeInvalidArgument, "session is required"},
		{"session bad id", "session_log", `{"session":"../x","entry":{}}`, writer, brain.CodeInvalidArgument, ""},
		{"session entry missing", "session_log", `{"session":"s"}`, writer, brain.CodeInvalidArgument, "entry"},
		{"session entry not object", "session_log", `{"session":"s","entry":"text"}`, writer, brain.CodeInvalidArgument, "object"},
		{"session entry too large", "session_log", `{"session":"s","entry":{"a":"` + long(64<<10) + `"}}`, writer, brain.CodeTooLarge, "65536"},
		{"promote bad hall", "brain_promote", `{"name":"taken","hall":"misc"}`, curator, brain.CodeInvalidArgument, "facts"},
		{"promote no hall", "brain_promote", `{"name":"taken"}`, curator, brain.CodeInvalidArgument, "hall"},
		{"promote no name", "brain_promote", `{"hall":"facts"}`, curator, brain.CodeInvalidArgument, "name"},
		{"promote missing", "brain_promote", `{"name":"nope","hall":"facts"}`, curator, brain.CodeNotFound, "brain_pending"},
		{"promote collision", "brain_promote", `{"name":"taken","hall":"facts"}`, curator, brain.CodeAlreadyExists, "untouched"},
		{"promote bad slug", "brain_promote", `{"name":"taken","hall":"facts","slug":"A B"}`, curator, brain.CodeInvalidArgument, "slug"},
	}
	before := tree(t, root)
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
}

// tree renders every file of the brain with its hash.
func tree(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == ".git" || d.Name() == ".brainstem") {
			return filepath.SkipDir // history and the store's state: not the brain's files
		}
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %s\n", filepath.ToSlash(rel), store.HashOf(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestLimitsConfigurable(t *testing.T) {
	_, st, _ := newSet(t)
	s := New(st, Options{Limits: Limits{MaxTitleBytes: 5}})
	if s.Limits().MaxTitleBytes != 5 || s.Limits().MaxBodyBytes != DefaultLimits().MaxBodyBytes {
		t.Errorf("limits = %+v", s.Limits())
	}
	res, _ := call(t, s, writer, "brain_write", `{"title":"toolong","body":"b","hall":"facts"}`)
	if code, _ := errCode(t, res); code != brain.CodeTooLarge {
		t.Errorf("custom title limit ignored: %s", res)
	}
}

// FuzzCall feeds arbitrary arguments to every tool: the result is always
// valid JSON, and an error result always has the documented shape.
func FuzzCall(f *testing.F) {
	for _, seed := range []string{`{}`, `{"query":"x"}`, `{"id":"payments/facts/a"}`, `{"title":"t","body":"b","hall":"facts"}`,
		`{"pages":[{"hall":"facts","title":"t","body":"b"}],"dry_run":true}`, `{"session":"s","entry":{"a":1}}`, `[`, `null`, `{"limit":-1}`, "{\"title\":\"\xff\"}"} {
		for i := range 10 {
			f.Add(uint8(i), seed)
		}
	}
	s, _, _ := newSet(f)
	tools := s.Specs()
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		name := tools[int(which)%len(tools)].Name
		res, isErr := s.Call(context.Background(), curator, name, []byte(args))
		if !json.Valid(res) {
			t.Fatalf("%s(%q) = invalid JSON %q", name, args, res)
		}
		if isErr {
			code, _ := errCode(t, string(res))
			switch code {
			case brain.CodeInvalidArgument, brain.CodeNotFound, brain.CodeAlreadyExists, brain.CodeConflict, brain.CodeForbidden, brain.CodeTooLarge:
			default:
				t.Fatalf("%s(%q) = %s", name, args, res)
			}
		}
	})
}

// keep the index import used when only Stats are referenced.
var _ = search.Stats{}

// Titles, tags and bodies that YAML would misread unquoted come back from
// brain_get exactly as written.
func TestWriteGetRoundTripsSpecialValues(t *testing.T) {
	s, _, _ := newSet(t)
	tests := []struct {
		title string
		tags  []string
		body  string
		id    string
	}{
		{"Use: colons # and 'quotes' \"dq\" [brackets] {braces} - dash", []string{"a, b", "x: y", "- z", "#tag", "[t]"}, "---\nnot: header\n---\nbody", "payments/facts/use-colons-and-quotes-dq-brackets-braces-dash"},
		{"yes", []string{"null", "true", "123", "2026-01-01"}, "b", "payments/facts/yes"},
		{"Ünïcödé tïtle ✓", nil, "emoji 🧠 body\r\nwith CRLF", "payments/facts/unicode-title"},
	}
	for _, tt := range tests {
		args, _ := json.Marshal(map[string]any{"title": tt.title, "tags": tt.tags, "body": tt.body, "hall": "facts"})
		mustCall(t, s, writer, "brain_write", string(args), nil)
		var g struct {
			Frontmatter map[string]any `json:"frontmatter"`
			Body        string         `json:"body"`
		}
		mustCall(t, s, reader, "brain_get", `{"id":"`+tt.id+`"}`, &g)
		if g.Frontmatter["title"] != tt.title || g.Body != tt.body {
			t.Errorf("%s: title %q body %q", tt.id, g.Frontmatter["title"], g.Body)
		}
		got, _ := json.Marshal(g.Frontmatter["tags"])
		want, _ := json.Marshal(tt.tags)
		if tt.tags != nil && string(got) != string(want) {
			t.Errorf("%s: tags %s, want %s", tt.id, got, want)
		}
	}
}

// TestQueryTotalAndSteps: total counts every matching note, whatever the
// limit; the rank step answers the same ids, scores and total without
// rendering, and the fetch step renders the named hits byte for byte as
// brain_query does.
func TestQueryTotalAndSteps(t *testing.T) {
	s, _, _ := newSet(t)
	for i := range 7 {
		mustCall(t, s, writer, "brain_write", fmt.Sprintf(`{"title":"Ledger note %d","body":"ledger entries and reconciliation %s\n","hall":"facts"}`, i, strings.Repeat("ledger ", i)), nil)
	}
	mustCall(t, s, writer, "brain_write", `{"title":"Unrelated","body":"nothing to see\n","hall":"decisions"}`, nil)
	type hits struct {
		Hits  []json.RawMessage `json:"hits"`
		Total *int              `json:"total"`
	}
	decodeHits := func(res []byte) hits {
		t.Helper()
		var h hits
		if err := json.Unmarshal(res, &h); err != nil {
			t.Fatalf("%s: %v", res, err)
		}
		return h
	}
	args := []byte(`{"query":"ledger reconciliation","limit":3}`)
	res, isErr := s.Call(context.Background(), reader, "brain_query", args)
	whole := decodeHits(res)
	if isErr || len(whole.Hits) != 3 || whole.Total == nil || *whole.Total != 7 {
		t.Fatalf("brain_query = %s; want 3 hits of 7 matching notes", res)
	}
	// The steps of a cross-wing search over the same store: the ranking is
	// brain_query's, and a fetch renders the very bytes it renders.
	q := (&search.Args{Query: "ledger reconciliation", Limit: 3}).Tokenized()
	ranked, err := search.ServeRank(context.Background(), s.st, s.lim.Search(), &search.RankRequest{Query: q, Render: 2})
	if err != nil || ranked.Stale || len(ranked.Ranked) != 3 || ranked.Total != 7 || len(ranked.Hits) != 2 ||
		!bytes.Equal(ranked.Hits[0], whole.Hits[0]) || !bytes.Equal(ranked.Hits[1], whole.Hits[1]) {
		t.Fatalf("rank step = %+v, %v", ranked, err)
	}
	var keys []string
	for i, r := range ranked.Ranked {
		var k struct {
			ID    string  `json:"id"`
			Score float64 `json:"score"`
		}
		json.Unmarshal(whole.Hits[i], &k)
		if r.Key != k.ID || r.Score != k.Score {
			t.Fatalf("ranked %d = %+v, brain_query hit %+v", i, r, k)
		}
		keys = append(keys, r.Key)
	}
	fetched, err := search.ServeFetch(context.Background(), s.st, &search.FetchRequest{Query: q, Keys: []string{keys[2], keys[0], "billing/facts/x"}})
	if err != nil || len(fetched.Hits) != 2 {
		t.Fatalf("fetch step = %+v, %v", fetched, err)
	}
	if !bytes.Equal(fetched.Hits[0], whole.Hits[2]) || !bytes.Equal(fetched.Hits[1], whole.Hits[0]) {
		t.Fatalf("fetched hits differ from brain_query's:\n%s\n%s", fetched.Hits, whole.Hits)
	}
	// A stale generation is answered with the fresh statistics, unranked.
	stale, err := search.ServeRank(context.Background(), s.st, s.lim.Search(), &search.RankRequest{Query: q, Generation: s.st.Generation() + 1})
	if err != nil || !stale.Stale || stale.Ranked != nil || stale.Stats == nil || stale.Stats.DocFreq["ledger"] != 7 {
		t.Fatalf("stale rank = %+v, %v", stale, err)
	}
	// The shard's limits hold on the rank step as on brain_query.
	long := (&search.Args{Query: strings.Repeat("word ", 40), Limit: 3}).Tokenized()
	refused, err := search.ServeRank(context.Background(), s.st, s.lim.Search(), &search.RankRequest{Query: long})
	if err != nil || !strings.Contains(string(refused.Refused), `"too_large"`) {
		t.Fatalf("rank of an over-long query = %+v, %v", refused, err)
	}
	// A hall narrows total too.
	res, _ = s.Call(context.Background(), reader, "brain_query", []byte(`{"query":"ledger nothing","hall":"decisions"}`))
	if h := decodeHits(res); h.Total == nil || *h.Total != 1 || len(h.Hits) != 1 {
		t.Fatalf("hall-filtered query = %s", res)
	}
}
