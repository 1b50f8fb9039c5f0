package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/store"
)

// newKeyedSet is newSet with an idempotency journal, as a shard runs it.
func newKeyedSet(t testing.TB, now func() time.Time) (*Set, *store.Store, string) {
	t.Helper()
	root := t.TempDir()
	if now == nil {
		now = fixedClock()
	}
	st, err := store.Open(context.Background(), store.Options{Root: root, Wing: wing, Now: now, RescanInterval: -1,
		History: store.HistoryOptions{AllowPurge: true, Now: fixedClock()}}) // version ids stay the same from run to run
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	journalNow := func() time.Time { return time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC) } // keeps docs output stable
	j, err := idempotency.Open(idempotency.Options{Path: filepath.Join(root, ".brainstem", wing, "idempotency.journal"), Settle: Settle(st), Now: journalNow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return New(st, Options{Journal: j}), st, root
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".md") {
			n++
		}
	}
	return n
}

// TestKeyedWritesApplyOnce: for every write tool, a call with a key and a
// retry with the same key and the same arguments (spelled differently:
// other key order and spacing) give the same bytes and one change; other
// arguments with the key are a conflict and change nothing; another
// caller's same key is another key.
func TestKeyedWritesApplyOnce(t *testing.T) {
	s, st, root := newKeyedSet(t, nil)
	ctx := context.Background()
	mustCall(t, s, writer, "brain_write", `{"title":"Retry budget","body":"Three tries.\n","hall":"facts"}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"To promote","body":"b","inbox":true}`, nil)
	lines := func() int {
		b, _ := os.ReadFile(filepath.Join(root, "sessions", wing, "s1.jsonl"))
		return strings.Count(string(b), "\n")
	}
	supersedes := func() int {
		n, err := st.Get(ctx, "payments/facts/retry-budget")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(n.Raw), "updated_by")
	}
	wiki := func(h string) func() int {
		return func() int { return countFiles(t, filepath.Join(root, "wiki", wing, h)) }
	}
	// The history tools' notes, and the versions they name.
	for _, slug := range []string{"to-restore", "to-archive", "to-move", "to-purge"} {
		mustCall(t, s, writer, "brain_write", `{"title":"`+slug+`","body":"one\n","hall":"facts","slug":"`+slug+`"}`, nil)
		mustCall(t, s, writer, "brain_update", `{"id":"payments/facts/`+slug+`","body":"two\n","reason":"second"}`, nil)
	}
	oldest := func(slug string) string {
		h, err := st.Versions(ctx, "payments/facts/"+slug, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		return h.Versions[1].ID
	}
	versions := func(slug string, purged bool) func() int {
		return func() int {
			h, err := st.Versions(ctx, "payments/facts/"+slug, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, v := range h.Versions {
				if !purged || v.Purged {
					n++
				}
			}
			return n
		}
	}
	restoreV, purgeV := oldest("to-restore"), oldest("to-purge")
	tests := []struct {
		tool        string
		c           Caller
		args, again string // again: the same arguments, spelled otherwise
		other       string // other arguments
		effect      func() int
	}{
		{"brain_write", writer,
			`{"title":"Card timeouts","body":"Visa timed out.\n","hall":"failures","idempotency_key":"w-1"}`,
			`{ "hall" : "failures", "idempotency_key":"w-1", "body":"Visa timed out.\n","title":"Card timeouts" }`,
			`{"title":"Card timeouts","body":"Mastercard timed out.\n","hall":"failures","idempotency_key":"w-1"}`,
			wiki("failures")},
		{"brain_update", writer,
			`{"id":"payments/facts/retry-budget","body":"Two tries.\n","reason":"lowered","idempotency_key":"u-1"}`,
			`{"reason":"lowered","id":"payments/facts/retry-budget","idempotency_key":"u-1","body":"Two tries.\n","wing":"payments"}`,
			`{"id":"payments/facts/retry-budget","body":"One try.\n","reason":"lowered","idempotency_key":"u-1"}`,
			supersedes},
		{"session_log", writer,
			`{"session":"s1","entry":{"did":"x","n":1},"idempotency_key":"s-1"}`,
			`{"session":"s1","entry":{"n":1,"did":"x"},"idempotency_key":"s-1"}`,
			`{"session":"s1","entry":{"did":"y"},"idempotency_key":"s-1"}`,
			lines},
		{"brain_ingest_raw", writer,
			`{"pages":[{"hall":"sources","title":"PSP contract","body":"Section 4."},{"hall":"sources","title":"PSP annex","body":"Annex."}],"idempotency_key":"i-1"}`,
			`{"idempotency_key":"i-1","pages":[{"title":"PSP contract","hall":"sources","body":"Section 4."},{"hall":"sources","body":"Annex.","title":"PSP annex"}]}`,
			`{"pages":[{"hall":"sources","title":"PSP contract","body":"Section 5."}],"idempotency_key":"i-1"}`,
			wiki("sources")},
		{"brain_promote", curator,
			`{"name":"to-promote","hall":"hypotheses","idempotency_key":"p-1"}`,
			`{"hall":"hypotheses","name":"to-promote","idempotency_key":"p-1"}`,
			`{"name":"to-promote","hall":"facts","idempotency_key":"p-1"}`,
			wiki("hypotheses")},
		{"brain_restore", writer,
			`{"id":"payments/facts/to-restore","version":"` + restoreV + `","reason":"back","idempotency_key":"r-1"}`,
			`{"reason":"back","version":"` + restoreV + `","idempotency_key":"r-1","id":"payments/facts/to-restore"}`,
			`{"id":"payments/facts/to-restore","version":"` + restoreV + `","reason":"other","idempotency_key":"r-1"}`,
			versions("to-restore", false)},
		{"brain_archive", curator,
			`{"id":"payments/facts/to-archive","reason":"old","idempotency_key":"a-1"}`,
			`{"reason":"old","id":"payments/facts/to-archive","idempotency_key":"a-1"}`,
			`{"id":"payments/facts/to-archive","reason":"older","idempotency_key":"a-1"}`,
			versions("to-archive", false)},
		{"brain_move", curator,
			`{"id":"payments/facts/to-move","hall":"decisions","reason":"chosen","idempotency_key":"m-1"}`,
			`{"hall":"decisions","id":"payments/facts/to-move","reason":"chosen","idempotency_key":"m-1"}`,
			`{"id":"payments/facts/to-move","hall":"sources","reason":"chosen","idempotency_key":"m-1"}`,
			wiki("decisions")},
		{"brain_purge", curator,
			`{"id":"payments/facts/to-purge","version":"` + purgeV + `","reason":"leak","idempotency_key":"x-1"}`,
			`{"version":"` + purgeV + `","reason":"leak","id":"payments/facts/to-purge","idempotency_key":"x-1"}`,
			`{"id":"payments/facts/to-purge","reason":"leak","idempotency_key":"x-1"}`,
			versions("to-purge", true)},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			before := tt.effect()
			first, isErr := call(t, s, tt.c, tt.tool, tt.args)
			if isErr {
				t.Fatalf("first call: %s", first)
			}
			after := tt.effect()
			if after == before {
				t.Fatalf("the first call changed nothing (%d)", after)
			}
			for _, args := range []string{tt.args, tt.again} {
				again, isErr := call(t, s, tt.c, tt.tool, args)
				if isErr || again != first {
					t.Errorf("retry answered %s (error %v), want the first answer %s", again, isErr, first)
				}
			}
			if got := tt.effect(); got != after {
				t.Errorf("retries changed the wing: %d, want %d", got, after)
			}
			res, isErr := call(t, s, tt.c, tt.tool, tt.other)
			if code, msg := errCode(t, res); !isErr || code != brain.CodeConflict || !strings.Contains(msg, "other arguments") {
				t.Errorf("other arguments with the key = %s, want conflict", res)
			}
			if got := tt.effect(); got != after {
				t.Errorf("the conflicting call changed the wing")
			}
		})
	}
	// Another caller's key of the same name is another key.
	other := Caller{Email: "wanda@example.com", Caps: writer.Caps}
	res, isErr := call(t, s, other, "brain_write", `{"title":"Card timeouts","body":"Visa timed out.\n","hall":"failures","idempotency_key":"w-1"}`)
	if code, _ := errCode(t, res); !isErr || code != brain.CodeAlreadyExists {
		t.Errorf("another caller's w-1 = %s, want already_exists (it runs: the note exists)", res)
	}
	// A key used for one tool is refused for another.
	res, isErr = call(t, s, writer, "session_log", `{"session":"s1","entry":{},"idempotency_key":"w-1"}`)
	if code, msg := errCode(t, res); !isErr || code != brain.CodeConflict || !strings.Contains(msg, "brain_write") {
		t.Errorf("w-1 for session_log = %s, want a conflict naming brain_write", res)
	}
}

// TestKeyFromTheTransport: the key the request carries beside the
// arguments (what the gateway sets) works like the argument, and the two
// must agree.
func TestKeyFromTheTransport(t *testing.T) {
	s, _, root := newKeyedSet(t, nil)
	gw := writer
	gw.IdempotencyKey = "gw-0123456789abcdef0123456789abcdef"
	args := `{"title":"Card timeouts","body":"Visa.\n","hall":"failures"}`
	first := mustCall(t, s, gw, "brain_write", args, nil)
	if again := mustCall(t, s, gw, "brain_write", args, nil); again != first {
		t.Fatalf("retry with the transport key = %s, want %s", again, first)
	}
	// The argument spelling the same key is the same call.
	withArg := `{"title":"Card timeouts","body":"Visa.\n","hall":"failures","idempotency_key":"gw-0123456789abcdef0123456789abcdef"}`
	if again := mustCall(t, s, gw, "brain_write", withArg, nil); again != first {
		t.Fatalf("argument and transport key = %s, want %s", again, first)
	}
	if again := mustCall(t, s, writer, "brain_write", withArg, nil); again != first {
		t.Fatalf("argument alone = %s, want %s", again, first)
	}
	if n := countFiles(t, filepath.Join(root, "wiki", wing, "failures")); n != 1 {
		t.Fatalf("%d notes, want 1", n)
	}
	tests := []struct {
		name, key, args string
	}{
		{"argument differs from transport", gw.IdempotencyKey, `{"title":"A","body":"b","hall":"facts","idempotency_key":"other"}`},
		{"argument too long", "", `{"title":"A","body":"b","hall":"facts","idempotency_key":"` + strings.Repeat("k", brain.MaxIdempotencyKeyBytes+1) + `"}`},
		{"argument with a space", "", `{"title":"A","body":"b","hall":"facts","idempotency_key":"a b"}`},
		{"argument not ASCII", "", `{"title":"A","body":"b","hall":"facts","idempotency_key":"ключ"}`},
		{"argument not a string", "", `{"title":"A","body":"b","hall":"facts","idempotency_key":7}`},
		{"transport key invalid", "a/b", `{"title":"A","body":"b","hall":"facts"}`},
	}
	for _, tt := range tests {
		c := writer
		c.IdempotencyKey = tt.key
		res, isErr := call(t, s, c, "brain_write", tt.args)
		if code, _ := errCode(t, res); !isErr || code != brain.CodeInvalidArgument {
			t.Errorf("%s: %s, want invalid_argument", tt.name, res)
		}
	}
	if n := countFiles(t, filepath.Join(root, "wiki", wing, "facts")); n != 0 {
		t.Errorf("refused calls wrote %d notes", n)
	}
}

// TestKeyedRefusalIsRecorded: a refusal that depends on the wing's state
// (already_exists here) is the key's answer: the retry gets it again even
// after the state changed, and does not write.
func TestKeyedRefusalIsRecorded(t *testing.T) {
	s, _, root := newKeyedSet(t, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Retry budget","body":"x","hall":"facts"}`, nil)
	args := `{"title":"Retry budget","body":"y","hall":"facts","idempotency_key":"k"}`
	first, isErr := call(t, s, writer, "brain_write", args)
	if code, _ := errCode(t, first); !isErr || code != brain.CodeAlreadyExists {
		t.Fatalf("first = %s", first)
	}
	if err := os.Remove(filepath.Join(root, "wiki", wing, "facts", "retry-budget.md")); err != nil {
		t.Fatal(err)
	}
	again, isErr := call(t, s, writer, "brain_write", args)
	if !isErr || again != first {
		t.Fatalf("retry = %s, want the recorded refusal %s", again, first)
	}
	if n := countFiles(t, filepath.Join(root, "wiki", wing, "facts")); n != 0 {
		t.Fatal("the retry of a refused call wrote the note")
	}
}

// TestKeyedWriteConcurrentRetries: many calls racing with one key write
// once and all answer the same bytes.
func TestKeyedWriteConcurrentRetries(t *testing.T) {
	s, _, root := newKeyedSet(t, nil)
	const n = 16
	answers := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, isErr := s.Call(context.Background(), writer, "brain_write", []byte(`{"title":"Race","body":"b","hall":"facts","idempotency_key":"race"}`))
			if isErr {
				t.Errorf("call %d: %s", i, res)
			}
			answers[i] = string(res)
		}()
	}
	wg.Wait()
	for i := range answers {
		if answers[i] != answers[0] {
			t.Fatalf("answers differ: %s vs %s", answers[i], answers[0])
		}
	}
	if got := countFiles(t, filepath.Join(root, "wiki", wing, "facts")); got != 1 {
		t.Fatalf("%d notes written, want 1", got)
	}
}

// TestIngestReportsExactlyAndCompletes: an ingest whose time runs out after
// the first page reports that page created and the others failed (nothing
// else is on disk); a retry with the key writes the rest once, keeps the
// first page created with its hash, and from then on answers the same
// report, byte for byte.
func TestIngestReportsExactlyAndCompletes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	base := fixedClock()
	var mu sync.Mutex
	creates := 0
	// The store reads its clock once per page it writes: cancel the call's
	// context as the second page is being written.
	clock := func() time.Time {
		mu.Lock()
		creates++
		if creates == 2 {
			cancel()
		}
		mu.Unlock()
		return base()
	}
	s, _, root := newKeyedSet(t, clock)
	args := []byte(`{"pages":[{"hall":"sources","title":"One","body":"1"},{"hall":"sources","title":"Two","body":"2"},{"hall":"sources","title":"Three","body":"3"}],"idempotency_key":"imp-1"}`)
	res, isErr := s.Call(ctx, writer, "brain_ingest_raw", args)
	var r ingestResult
	if isErr || json.Unmarshal(res, &r) != nil {
		t.Fatalf("first ingest: %s", res)
	}
	if r.Created != 1 || r.Failed != 2 || r.Pages[0].Status != StatusCreated || r.Pages[1].Status != StatusFailed ||
		r.Pages[2].Status != StatusFailed || !strings.Contains(r.Pages[1].Error, "not written") {
		t.Fatalf("first ingest report = %s", res)
	}
	if n := countFiles(t, filepath.Join(root, "wiki", wing, "sources")); n != 1 {
		t.Fatalf("%d pages on disk, the report says 1", n)
	}
	second, isErr := s.Call(context.Background(), writer, "brain_ingest_raw", args)
	var r2 ingestResult
	if isErr || json.Unmarshal(second, &r2) != nil {
		t.Fatalf("retry: %s", second)
	}
	if r2.Created != 3 || r2.Failed != 0 || r2.Exists != 0 || r2.Pages[0] != r.Pages[0] {
		t.Fatalf("retry report = %s\nfirst = %s", second, res)
	}
	if n := countFiles(t, filepath.Join(root, "wiki", wing, "sources")); n != 3 {
		t.Fatalf("%d pages on disk after the retry, want 3", n)
	}
	third, _ := s.Call(context.Background(), writer, "brain_ingest_raw", args)
	if string(third) != string(second) {
		t.Fatalf("third call = %s, want the completed report %s", third, second)
	}
}

// TestKeyWithoutJournalRefused: a Set without a journal never pretends to
// honour a key.
func TestKeyWithoutJournalRefused(t *testing.T) {
	s, _, root := newSet(t)
	res, isErr := call(t, s, writer, "brain_write", `{"title":"A","body":"b","hall":"facts","idempotency_key":"k"}`)
	if code, msg := errCode(t, res); !isErr || code != brain.CodeInternal || !strings.Contains(msg, "journal") {
		t.Fatalf("= %s", res)
	}
	if n := countFiles(t, filepath.Join(root, "wiki", wing, "facts")); n != 0 {
		t.Fatal("written without the guarantee")
	}
}
