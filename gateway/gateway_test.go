package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/search"
)

// TestRoutingAndBytes: calls routed by wing argument, by id and by path
// reach the right wing, and the shard's result bytes arrive unchanged, over
// both the stateless (2026-07-28) and the session (2025-06-18) protocol.
func TestRoutingAndBytes(t *testing.T) {
	e := newEnv(t, []string{"payments", "search"}, map[string]auth.Policy{"payments": policyOpen, "search": policyOpen})
	e.wings["payments"].addNote("payments/decisions/idem", "use idempotency keys", "a@acme.com")
	e.wings["search"].addNote("search/facts/bm25", "bm25 is fine", "b@acme.com")
	tok := e.idp.token(t, "Alice@Acme.com")

	for _, legacy := range []bool{false, true} {
		c := e.client(t, tok, legacy)
		tests := []struct {
			name, args, wantWing, wantID string
		}{
			{"by wing", `{"wing":"payments","id":"payments/decisions/idem"}`, "payments", "payments/decisions/idem"},
			{"by id", `{"id":"search/facts/bm25"}`, "search", "search/facts/bm25"},
			{"by wiki path", `{"path":"wiki/payments/decisions/idem.md","id":"payments/decisions/idem"}`, "payments", "payments/decisions/idem"},
			{"by inbox path", `{"path":"inbox/search/x.md","id":"search/facts/bm25"}`, "search", "search/facts/bm25"},
		}
		for _, tc := range tests {
			text, isErr := call(t, c, "brain_get", tc.args)
			if isErr {
				t.Fatalf("%s (legacy=%v): tool error %s", tc.name, legacy, text)
			}
			// The exact bytes the test wing produced.
			wantBody := map[string]string{"payments": `"use idempotency keys"`, "search": `"bm25 is fine"`}[tc.wantWing]
			author := map[string]string{"payments": "a@acme.com", "search": "b@acme.com"}[tc.wantWing]
			want := `{"id": "` + tc.wantID + `",  "author":"` + author + `", "body":` + wantBody + `, "wing":"` + tc.wantWing + `", "html":"<&>"}`
			if text != want {
				t.Errorf("%s (legacy=%v):\n got %s\nwant %s", tc.name, legacy, text, want)
			}
		}
	}
	// A tool error from the shard is passed on unchanged with isError.
	c := e.client(t, tok, false)
	text, isErr := call(t, c, "brain_get", `{"id":"payments/nope"}`)
	if !isErr || text != string(brain.EncodeError(brain.CodeNotFound, "no note payments/nope")) {
		t.Fatalf("shard tool error: %v %s", isErr, text)
	}
}

// TestRoutingErrors: the gateway's own tool errors.
func TestRoutingErrors(t *testing.T) {
	e := newEnv(t, []string{"payments", "search", "secret"}, map[string]auth.Policy{
		"payments": policyOpen,
		"search":   {Readers: []string{"*"}},
		"secret":   {Readers: []string{"email:boss@acme.com"}},
	})
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	tests := []struct {
		name, tool, args string
		code             brain.Code
		msgHas           string
	}{
		{"unknown wing lists reachable", "brain_get", `{"wing":"nope","id":"x"}`, brain.CodeUnknownWing, "payments, search"},
		{"no wing", "brain_get", `{"id":""}`, brain.CodeInvalidArgument, "no wing"},
		{"a wing that is no wing name: unknown", "brain_get", `{"wing":"/","id":"x"}`, brain.CodeUnknownWing, `no wing \"/\" that you can reach`},
		{"wing not a string", "brain_get", `{"wing":7}`, brain.CodeInvalidArgument, "must be a string"},
		{"not admitted by policy: as unknown", "brain_get", `{"wing":"secret","id":"secret/x"}`, brain.CodeUnknownWing, "payments, search"},
		{"no admission through an id either", "brain_get", `{"id":"secret/x"}`, brain.CodeUnknownWing, `no wing \"secret\"`},
		{"query no query", "brain_query", `{"limit":3}`, brain.CodeInvalidArgument, "query"},
		{"query bad limit", "brain_query", `{"query":"x","limit":0}`, brain.CodeInvalidArgument, "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr := call(t, c, tc.tool, tc.args)
			if !isErr {
				t.Fatalf("want error, got %s", text)
			}
			if got := errCode(t, text); got != tc.code {
				t.Fatalf("code %s, want %s (%s)", got, tc.code, text)
			}
			if !strings.Contains(text, tc.msgHas) {
				t.Fatalf("message %s lacks %q", text, tc.msgHas)
			}
		})
	}
	// The shard decides capabilities: a reader calling a write tool gets the
	// shard's forbidden tool error, not "tool not found".
	text, isErr := call(t, c, "brain_write", `{"wing":"search","id":"search/x","body":"b"}`)
	if !isErr || errCode(t, text) != "forbidden" {
		t.Fatalf("write without capability: %v %s", isErr, text)
	}
	// The refusal is remembered: no second mint for the secret wing.
	before := e.wings["secret"].mints.Load()
	call(t, c, "brain_get", `{"wing":"secret","id":"secret/x"}`)
	if after := e.wings["secret"].mints.Load(); after != before {
		t.Fatalf("denied mint repeated: %d → %d", before, after)
	}
}

// TestUnavailableAndTimeout: a stopped shard answers unavailable; a shard
// slower than call_timeout answers timeout.
func TestUnavailableAndTimeout(t *testing.T) {
	e := newEnv(t, []string{"payments", "search"}, map[string]auth.Policy{"payments": policyOpen, "search": policyOpen},
		func(c *config.Config, _ *Options) { c.Shards.CallTimeout = 1500 * time.Millisecond })
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)

	// Timeout: brain_slow never finishes by itself.
	text, isErr := call(t, c, "brain_slow", `{"wing":"search"}`)
	if !isErr || errCode(t, text) != brain.CodeTimeout {
		t.Fatalf("slow call: %v %s", isErr, text)
	}

	// A stopped shard is unavailable to a caller holding a grant for it
	// (to one without, it is a wing that does not exist: TestDownWingNotDisclosed).
	call(t, c, "brain_get", `{"wing":"payments","id":"payments/x"}`)
	e.shards["payments"].stop()
	text, isErr = call(t, c, "brain_get", `{"wing":"payments","id":"payments/x"}`)
	if !isErr || errCode(t, text) != brain.CodeUnavailable {
		t.Fatalf("stopped shard: %v %s", isErr, text)
	}
}

// TestFanout: brain_query without a wing merges every readable wing's hits
// by globally consistent scores, keeps each hit's bytes, and a wing that is
// down is listed as unavailable without failing the query.
func TestFanout(t *testing.T) {
	e := newEnv(t, []string{"a", "b", "c", "hidden"}, map[string]auth.Policy{
		"a": policyOpen, "b": policyOpen, "c": policyOpen,
		"hidden": {Readers: []string{"email:other@acme.com"}},
	}, func(c *config.Config, _ *Options) { c.Shards.CallTimeout = 2 * time.Second })
	e.wings["a"].addNote("a/f/1", "rust rust go", "x@acme.com")
	e.wings["a"].addNote("a/f/2", "python", "x@acme.com")
	e.wings["a"].addNote("a/f/3", "python java", "x@acme.com")
	e.wings["b"].addNote("b/f/1", "rust", "x@acme.com")
	e.wings["b"].addNote("b/f/2", "go go go", "x@acme.com")
	e.wings["c"].addNote("c/f/1", "rust everywhere", "x@acme.com")
	e.wings["hidden"].addNote("hidden/f/1", "rust secret", "x@acme.com")
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)

	text, isErr := call(t, c, "brain_query", `{"query":"rust go","limit":4}`)
	if isErr {
		t.Fatal(text)
	}
	var got struct {
		Hits        []json.RawMessage          `json:"hits"`
		Total       int64                      `json:"total"`
		Wings       []string                   `json:"wings"`
		Unavailable []toolspec.UnavailableWing `json:"unavailable"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatal(err)
	}
	// Expected ranking: one index over the union of a, b, c (hidden is not
	// readable) — scored with global statistics.
	union := newTestWing(t, "union", policyOpen)
	for _, n := range []string{"a", "b", "c"} {
		for _, note := range e.wings[n].notes {
			union.addNote(note.ID, note.Body, note.Author)
		}
	}
	var want shardHits
	if err := json.Unmarshal(union.query(search.Terms("rust go"), 4, nil).Result, &want); err != nil {
		t.Fatal(err)
	}
	if len(got.Hits) != 4 || got.Total != want.Total {
		t.Fatalf("hits %d total %d, want 4 and %d: %s", len(got.Hits), got.Total, want.Total, text)
	}
	for i := range got.Hits {
		var g, w hitKey
		_ = json.Unmarshal(got.Hits[i], &g)
		_ = json.Unmarshal(want.Hits[i], &w)
		if g.ID != w.ID || g.Score != w.Score {
			t.Errorf("hit %d: got %s, want %s", i, got.Hits[i], want.Hits[i])
		}
		if !strings.HasPrefix(string(got.Hits[i]), `{ "id":`) {
			t.Errorf("hit bytes rewritten: %s", got.Hits[i])
		}
	}
	if !slices.Equal(got.Wings, []string{"a", "b", "c"}) || len(got.Unavailable) != 0 {
		t.Fatalf("wings %v unavailable %v", got.Wings, got.Unavailable)
	}
	if strings.Contains(text, "hidden") {
		t.Fatalf("a wing the caller cannot read leaked into the answer: %s", text)
	}

	// One wing down: the query still answers, listing it.
	e.shards["b"].stop()
	text, isErr = call(t, c, "brain_query", `{"query":"rust"}`)
	if isErr {
		t.Fatal(text)
	}
	got.Unavailable = nil
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Wings, []string{"a", "c"}) || len(got.Unavailable) != 1 || got.Unavailable[0].Wing != "b" || got.Unavailable[0].Code != brain.CodeUnavailable {
		t.Fatalf("with b down: wings %v unavailable %+v", got.Wings, got.Unavailable)
	}
	if len(got.Hits) != 2 {
		t.Fatalf("with b down: %d hits: %s", len(got.Hits), text)
	}

	// A wing given explicitly is a plain routed call.
	text, isErr = call(t, c, "brain_query", `{"query":"python","wing":"a"}`)
	if isErr || !strings.HasPrefix(text, `{"hits":[{ "id":"a/f/`) || strings.Contains(text, `"wings"`) {
		t.Fatalf("wing-scoped query: %v %s", isErr, text)
	}
}

// TestBrainWingsAndToolFilter: brain_wings lists reachable wings with
// capabilities; tools/list shows only tools usable in some wing.
func TestBrainWingsAndToolFilter(t *testing.T) {
	e := newEnv(t, []string{"payments", "search", "secret"}, map[string]auth.Policy{
		"payments": {Readers: []string{"*"}, Writers: []string{"domain:acme.com"}, Curators: []string{"group:curators"}},
		"search":   {Readers: []string{"*"}},
		"secret":   {Readers: []string{"email:boss@acme.com"}},
	})
	tests := []struct {
		email  string
		groups []string
		wings  string
		tools  []string
	}{
		{"alice@acme.com", nil, `{"wings":[{"wing":"payments","capabilities":["read","write"]},{"wing":"search","capabilities":["read"]}]}`,
			[]string{"brain_get", "brain_query", "brain_slow", "brain_wings", "brain_write"}},
		{"eve@other.org", nil, `{"wings":[{"wing":"payments","capabilities":["read"]},{"wing":"search","capabilities":["read"]}]}`,
			[]string{"brain_get", "brain_query", "brain_slow", "brain_wings"}},
		{"carol@acme.com", []string{"curators"}, `{"wings":[{"wing":"payments","capabilities":["read","write","curate"]},{"wing":"search","capabilities":["read"]}]}`,
			[]string{"brain_get", "brain_promote", "brain_query", "brain_slow", "brain_wings", "brain_write"}},
		{"boss@acme.com", nil, `{"wings":[{"wing":"payments","capabilities":["read","write"]},{"wing":"search","capabilities":["read"]},{"wing":"secret","capabilities":["read"]}]}`,
			[]string{"brain_get", "brain_query", "brain_slow", "brain_wings", "brain_write"}},
	}
	for _, tc := range tests {
		t.Run(tc.email, func(t *testing.T) {
			for _, legacy := range []bool{false, true} {
				c := e.client(t, e.idp.token(t, tc.email, tc.groups...), legacy)
				text, isErr := call(t, c, "brain_wings", `{}`)
				if isErr || text != tc.wings {
					t.Fatalf("brain_wings: %v\n got %s\nwant %s", isErr, text, tc.wings)
				}
				res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
				}
				slices.Sort(names)
				if !slices.Equal(names, tc.tools) {
					t.Fatalf("tools/list (legacy=%v) = %v, want %v", legacy, names, tc.tools)
				}
			}
		})
	}
}

// TestToolDescriptorsKept: annotations and _meta of shard tools reach the
// client.
func TestToolDescriptorsKept(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	tok := "Bearer " + e.idp.token(t, "alice@acme.com")
	resp, body := rawPost(t, e.url, initBody, map[string]string{"Authorization": tok})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, e.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, map[string]string{
		"Authorization": tok, "Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, want := range []string{`"readOnlyHint":true`, `"brainstem/capability":"read"`, `"anyOf":[{"required":["id"]}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("tools/list lacks %s: %s", want, body)
		}
	}
}

// TestFanoutRendersOnlyFinalHits: a cross-wing search ranks on every wing,
// then asks only the wings holding the final hits to render them, and only
// those: one extra round trip, no snippet the merge throws away. total is
// the number of matching notes, as one wing holding them all counts it. An
// older shard that answers the whole query in the rank step still merges,
// and a wing that fails the fetch step is listed as unavailable.
func TestFanoutRendersOnlyFinalHits(t *testing.T) {
	e := newEnv(t, []string{"a", "b", "c", "all"}, map[string]auth.Policy{
		"a": policyOpen, "b": policyOpen, "c": policyOpen,
		"all": {Readers: []string{"email:other@acme.com"}}, // alice's cross-wing search covers a, b, c
	})
	for i := range 30 {
		w := []string{"a", "b", "c"}[i%3]
		body := "ledger " + strings.Repeat("entries ", i%7) + strings.Repeat("audit ", i%5)
		e.wings[w].addNote(fmt.Sprintf("%s/f/%02d", w, i), body, "x@acme.com")
		e.wings["all"].addNote(fmt.Sprintf("%s/f/%02d", w, i), body, "x@acme.com")
	}
	e.wings["c"].addNote("c/f/zz", "unrelated words", "x@acme.com")
	e.wings["all"].addNote("c/f/zz", "unrelated words", "x@acme.com")
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	other := e.client(t, e.idp.token(t, "other@acme.com"), false)

	type answer struct {
		Hits        []json.RawMessage          `json:"hits"`
		Total       int64                      `json:"total"`
		Wings       []string                   `json:"wings"`
		Unavailable []toolspec.UnavailableWing `json:"unavailable"`
	}
	search := func(c *client.Client, args string) answer {
		t.Helper()
		text, isErr := call(t, c, "brain_query", args)
		if isErr {
			t.Fatal(text)
		}
		var a answer
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	keys := func(hits []json.RawMessage) []hitKey {
		var out []hitKey
		for _, h := range hits {
			var k hitKey
			_ = json.Unmarshal(h, &k)
			out = append(out, k)
		}
		return out
	}
	reset := func() {
		for _, w := range e.wings {
			w.rendered.Store(0)
			w.queryCalls.Store(0)
		}
	}

	for _, q := range []string{`{"query":"ledger audit","limit":4}`, `{"query":"entries","limit":7}`, `{"query":"audit","scope":"wiki"}`} {
		reset()
		got := search(c, q)
		one := search(other, strings.Replace(q, "{", `{"wing":"all",`, 1))
		if !slices.Equal(keys(got.Hits), keys(one.Hits)) || got.Total != one.Total || got.Total <= int64(len(got.Hits)) {
			t.Fatalf("%s: merged %v total %d; one wing %v total %d", q, keys(got.Hits), got.Total, keys(one.Hits), one.Total)
		}
		rendered, ahead := int64(0), int64(0)
		for _, n := range []string{"a", "b", "c"} {
			w := e.wings[n]
			rendered += w.rendered.Load()
			ahead += w.lastRender.Load()
			held := int64(0)
			for _, k := range keys(got.Hits) {
				if strings.HasPrefix(k.ID, n+"/") {
					held++
				}
			}
			want := int64(1) // rank, rendering its best hits ahead
			if held > w.lastRender.Load() {
				want = 2 // then fetch the final hits beyond them
			}
			if w.queryCalls.Load() != want {
				t.Errorf("%s: wing %s holds %d final hits, rendered %d ahead, and got %d search calls, want %d", q, n, held, w.lastRender.Load(), w.queryCalls.Load(), want)
			}
			if w.lastRender.Load() < 1 || w.lastRender.Load() > int64(len(got.Hits))/3+2 {
				t.Errorf("%s: wing %s rendered %d ahead for %d final hits over three equal wings", q, n, w.lastRender.Load(), len(got.Hits))
			}
		}
		if rendered < int64(len(got.Hits)) || rendered > int64(len(got.Hits))+ahead {
			t.Errorf("%s: wings rendered %d hits for %d final ones (%d ahead)", q, rendered, len(got.Hits), ahead)
		}
	}

	// The replica: the same search again asks no wing for statistics, and
	// a wing that changed meanwhile answers stale, is asked again with the
	// new statistics, and the ranking stays the union's.
	stats := func() (n int64) {
		for _, w := range []string{"a", "b", "c"} {
			n += e.wings[w].statsCalls.Load()
		}
		return n
	}
	before := stats()
	search(c, `{"query":"ledger audit","limit":4}`)
	if stats() != before {
		t.Errorf("a repeated search asked for statistics %d times", stats()-before)
	}
	e.wings["b"].addNote("b/f/new", "audit audit audit", "x@acme.com")
	e.wings["all"].addNote("b/f/new", "audit audit audit", "x@acme.com")
	got := search(c, `{"query":"ledger audit","limit":5}`)
	one := search(other, `{"wing":"all","query":"ledger audit","limit":5}`)
	if !slices.Equal(keys(got.Hits), keys(one.Hits)) || got.Total != one.Total || len(got.Unavailable) != 0 || stats() != before {
		t.Fatalf("after a change: %v total %d, want %v total %d (unavailable %v, %d stats calls)", keys(got.Hits), got.Total, keys(one.Hits), one.Total, got.Unavailable, stats()-before)
	}

	// A wing that fails the fetch step is listed; its hits are left out
	// (wing a renders one hit ahead, so it is asked to fetch the others).
	e.wings["a"].failFetch.Store(true)
	e.wings["a"].renderCap.Store(1)
	got = search(c, `{"query":"ledger","limit":30}`)
	if len(got.Unavailable) != 1 || got.Unavailable[0].Wing != "a" || slices.Contains(got.Wings, "a") {
		t.Fatalf("fetch failure: wings %v unavailable %+v", got.Wings, got.Unavailable)
	}
	for _, k := range keys(got.Hits) {
		if strings.HasPrefix(k.ID, "a/") {
			t.Fatalf("hit %s of the failed wing kept", k.ID)
		}
	}
	if got.Total != 20 || len(got.Hits) != 20 {
		t.Fatalf("fetch failure: %d hits, total %d; want wing b's and c's 20", len(got.Hits), got.Total)
	}
}
