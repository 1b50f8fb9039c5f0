package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// The predecessor's call shapes (issue 35) on every path a call takes —
// the shard's stdio MCP mode, the shard over brainstem/1, and the gateway
// — a test per row of the predecessor's table (hyperguild-tools.md), each
// call exactly as its callers send it: no wing (the gateway routes those
// to its default_wing, the predecessor's single brain), the predecessor's
// defaults and answers. The conformance suite's paths (conformance_test.go)
// carry the calls. Each path writes notes of its own (tagged with its
// name), since the three share one brain directory.

// legacyRow is one row of the predecessor's table.
type legacyRow struct {
	tool string
	run  func(t *testing.T, p path, brainDir string)
}

func TestLegacyShapes(t *testing.T) {
	var keys sync.Map
	env := devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
		c.DefaultWing = "payments"
	}})
	paths := []path{stdioPath(t, env.BrainDir, "payments", &keys), shardPath(t, env, "payments"), gatewayPath(t, env)}
	rows := []legacyRow{
		{"brain_query", legacyQuery},
		{"brain_write", legacyWrite},
		{"brain_ingest_raw", legacyIngest},
		{"brain_ingest", legacyIngestLLM},
		{"session_log", legacySessionLog},
		{"session_read", legacySessionRead},
		{"brain_pending", legacyPending},
		{"brain_promote", legacyPromote},
		{"brain_update", legacyUpdate},
		{"brain_get", legacyGet},
	}
	for _, r := range rows {
		t.Run(r.tool, func(t *testing.T) {
			for _, p := range paths {
				t.Run(p.name, func(t *testing.T) { r.run(t, p, env.BrainDir) })
			}
		})
	}
	t.Run("mixed shapes", func(t *testing.T) { legacyMixed(t, paths) })
	t.Run("gateway without default_wing", func(t *testing.T) { legacyNoDefaultWing(t) })
}

// okCall calls a tool that must succeed and decodes its answer into v.
func okCall(t *testing.T, p path, tool, args string, v any) string {
	t.Helper()
	text, isErr := p.call(t, tool, args)
	if isErr {
		t.Fatalf("%s %s %s: %s", p.name, tool, args, text)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(text), v); err != nil {
			t.Fatalf("%s %s: %v: %s", p.name, tool, err, text)
		}
	}
	return text
}

// refusedAs calls a tool that must answer the tool error code, its
// message holding each of in.
func refusedAs(t *testing.T, p path, tool, args, code string, in ...string) string {
	t.Helper()
	text, isErr := p.call(t, tool, args)
	var e struct {
		Error struct{ Code, Message string }
	}
	if !isErr || json.Unmarshal([]byte(text), &e) != nil || e.Error.Code != code {
		t.Fatalf("%s %s %s = %s; want %s", p.name, tool, args, text, code)
	}
	for _, w := range in {
		if !strings.Contains(e.Error.Message, w) {
			t.Errorf("%s %s %s: %q does not say %q", p.name, tool, args, e.Error.Message, w)
		}
	}
	return text
}

func fileHash(t *testing.T, brainDir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(brainDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// brain_query {query, limit}: the inbox and the wiki, 5 by default, the
// hits again as results.
func legacyQuery(t *testing.T, p path, _ string) {
	word := "quokka" + p.name
	for i := range 7 {
		okCall(t, p, "brain_write", fmt.Sprintf(`{"content":"# Quokka %d\nA %s sighting.\n","filename":"quokka-%s-%d"}`, i, word, p.name, i), nil)
	}
	var r struct {
		Hits    []json.RawMessage `json:"hits"`
		Total   int64             `json:"total"`
		Results []json.RawMessage `json:"results"`
	}
	text := okCall(t, p, "brain_query", `{"query":"`+word+`"}`, &r)
	if len(r.Hits) != 5 || len(r.Results) != 5 || r.Total != 7 {
		t.Fatalf("%s: %s: want 5 hits of 7, and as many results", p.name, text)
	}
	for i := range r.Hits {
		if string(r.Hits[i]) != string(r.Results[i]) || !strings.Contains(string(r.Hits[i]), `"unreviewed":true`) {
			t.Fatalf("%s: result %d is %s, hit %s: want the same inbox hit", p.name, i, r.Results[i], r.Hits[i])
		}
	}
	okCall(t, p, "brain_query", `{"query":"`+word+`","limit":2}`, &r)
	if len(r.Results) != 2 {
		t.Errorf("%s: limit 2 gave %d results", p.name, len(r.Results))
	}
	own := okCall(t, p, "brain_query", `{"query":"`+word+`","wing":"payments"}`, nil)
	if strings.Contains(own, `"results"`) || !strings.Contains(own, `"hits":[]`) {
		t.Errorf("%s: the tool's own shape = %s: the wiki only, no results", p.name, own)
	}
}

// brain_write {content, filename, type, domain}: the inbox; the answer's
// path and content_hash are the file's.
func legacyWrite(t *testing.T, p path, brainDir string) {
	var r struct {
		ID, Path    string
		ContentHash string `json:"content_hash"`
	}
	okCall(t, p, "brain_write", `{"content":"---\ntitle: Card timeouts `+p.name+`\n---\nVisa timed out.\n","filename":"legacy-write-`+p.name+`","type":"incident","domain":"payments"}`, &r)
	if r.ID != "" || r.Path != "inbox/payments/legacy-write-"+p.name+".md" || r.ContentHash != fileHash(t, brainDir, r.Path) {
		t.Fatalf("%s: %+v", p.name, r)
	}
	b, _ := os.ReadFile(filepath.Join(brainDir, filepath.FromSlash(r.Path)))
	for _, want := range []string{"title: Card timeouts " + p.name + "\n", "created_by: alice@example.com\n", "type: incident\n", "domain: payments\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: the note lacks %q:\n%s", p.name, want, b)
		}
	}
	okCall(t, p, "brain_write", `{"content":"# Auto `+p.name+`\n"}`, &r)
	if !regexp.MustCompile(`^inbox/payments/\d{4}-\d{2}-\d{2}-\d{6}-auto(-\d+)?\.md$`).MatchString(r.Path) {
		t.Errorf("%s: without a filename: %s", p.name, r.Path)
	}
	refusedAs(t, p, "brain_write", `{"content":"x","filename":"../escape.md"}`, "invalid_argument", "filename")
}

// brain_ingest_raw {source, pages:[{title, type, content}]}: pages are the
// paths (would be) written.
func legacyIngest(t *testing.T, p path, brainDir string) {
	args := `{"source":"handbook","pages":[{"title":"Concept ` + p.name + `","type":"concept","content":"A concept.\n"},{"title":"Choice ` + p.name + `","type":"decision","content":"We chose.\n"}]`
	want := `"pages":["wiki/payments/facts/concept-` + p.name + `.md","wiki/payments/decisions/choice-` + p.name + `.md"]`
	if dry := okCall(t, p, "brain_ingest_raw", args+`,"dry_run":true}`, nil); !strings.Contains(dry, want) {
		t.Fatalf("%s: dry run = %s", p.name, dry)
	}
	if _, err := os.Stat(filepath.Join(brainDir, "wiki", "payments", "facts", "concept-"+p.name+".md")); err == nil {
		t.Fatalf("%s: the dry run wrote", p.name)
	}
	if res := okCall(t, p, "brain_ingest_raw", args+`}`, nil); !strings.Contains(res, want) || !strings.Contains(res, `"created":2`) {
		t.Fatalf("%s: ingest = %s", p.name, res)
	}
	if _, err := os.Stat(filepath.Join(brainDir, "wiki", "payments", "decisions", "choice-"+p.name+".md")); err != nil {
		t.Errorf("%s: %v", p.name, err)
	}
}

// brain_ingest (LLM extraction) is not one of Brainstem's tools: no path
// offers it (docs/decisions.md).
func legacyIngestLLM(t *testing.T, p path, _ string) {
	if _, listed := p.list(t)["brain_ingest"]; listed {
		t.Errorf("%s lists brain_ingest", p.name)
	}
}

// session_log {session_id, flat fields}: one line; final_status checked.
func legacySessionLog(t *testing.T, p path, brainDir string) {
	sess := "legacy-log-" + p.name
	var r struct {
		Session, Path string
		Line          int
	}
	okCall(t, p, "session_log", `{"session_id":"`+sess+`","skill":"review","phase":"end","project_root":"/src","final_status":"ok","file_path":"a.go","model_used":"m","duration_ms":1200,"message":"done"}`, &r)
	if r.Session != sess || r.Line != 1 || r.Path != "sessions/payments/"+sess+".jsonl" {
		t.Fatalf("%s: %+v", p.name, r)
	}
	b, _ := os.ReadFile(filepath.Join(brainDir, filepath.FromSlash(r.Path)))
	if !strings.Contains(string(b), `"entry":{"session_id":"`+sess+`","skill":"review","phase":"end","project_root":"/src","final_status":"ok","file_path":"a.go","model_used":"m","duration_ms":1200,"message":"done"}`) {
		t.Errorf("%s: the log: %s", p.name, b)
	}
	refusedAs(t, p, "session_log", `{"session_id":"`+sess+`","final_status":"great"}`, "invalid_argument", "final_status must be one of ok, error, skipped")
	refusedAs(t, p, "session_log", `{"skill":"review"}`, "invalid_argument", "session_id is required")
}

// (session read) {session_id}: the entries in file order; a log that does
// not exist gives no entries, not an error.
func legacySessionRead(t *testing.T, p path, _ string) {
	sess := "legacy-read-" + p.name
	okCall(t, p, "session_log", `{"session_id":"`+sess+`","phase":"one"}`, nil)
	okCall(t, p, "session_log", `{"session_id":"`+sess+`","phase":"two"}`, nil)
	var r struct {
		Entries []struct {
			Line  int
			Entry struct{ Phase string }
		}
		Total int
	}
	okCall(t, p, "session_read", `{"session_id":"`+sess+`"}`, &r)
	if r.Total != 2 || len(r.Entries) != 2 || r.Entries[0].Entry.Phase != "one" || r.Entries[1].Entry.Phase != "two" {
		t.Errorf("%s: %+v", p.name, r)
	}
	missing := okCall(t, p, "session_read", `{"session_id":"never-logged-`+p.name+`"}`, nil)
	if !strings.Contains(missing, `"entries":[],"total":0`) {
		t.Errorf("%s: a log that does not exist = %s", p.name, missing)
	}
}

// brain_pending {limit}: 20 by default, oldest first, with the
// predecessor's filename, created_at and excerpt.
func legacyPending(t *testing.T, p path, _ string) {
	for i := range 21 {
		okCall(t, p, "brain_write", fmt.Sprintf(`{"content":"Pending idea %d.\n","filename":"pending-%s-%02d"}`, i, p.name, i), nil)
	}
	var r struct {
		Pending []map[string]any `json:"pending"`
	}
	okCall(t, p, "brain_pending", `{}`, &r)
	if len(r.Pending) != 20 {
		t.Fatalf("%s: %d notes, want the predecessor's default 20", p.name, len(r.Pending))
	}
	for _, n := range r.Pending {
		if n["filename"] != fmt.Sprint(n["name"])+".md" || n["created_at"] == "" || n["excerpt"] == nil {
			t.Fatalf("%s: %v", p.name, n)
		}
	}
	okCall(t, p, "brain_pending", `{"limit":21}`, &r)
	if len(r.Pending) != 21 {
		t.Errorf("%s: limit 21 gave %d", p.name, len(r.Pending))
	}
}

// brain_promote {filename, wing, hall, slug}.
func legacyPromote(t *testing.T, p path, brainDir string) {
	name := "promote-" + p.name
	okCall(t, p, "brain_write", `{"content":"# Promote me\nAn idea.\n","filename":"`+name+`.md"}`, nil)
	refusedAs(t, p, "brain_promote", `{"filename":"`+name+`.md","wing":"payments","hall":"ideas","slug":"x"}`, "invalid_argument", "hall must be one of")
	var r struct{ ID, Path string }
	okCall(t, p, "brain_promote", `{"filename":"`+name+`.md","wing":"payments","hall":"facts","slug":"promoted-`+p.name+`"}`, &r)
	if r.ID != "payments/facts/promoted-"+p.name || r.Path != "wiki/payments/facts/promoted-"+p.name+".md" {
		t.Fatalf("%s: %+v", p.name, r)
	}
	if _, err := os.Stat(filepath.Join(brainDir, "inbox", "payments", name+".md")); err == nil {
		t.Errorf("%s: the inbox note is still there", p.name)
	}
}

// brain_update: by wing + hall + slug, or a path in slug or path; the
// answer's superseded is the hash it replaced.
func legacyUpdate(t *testing.T, p path, brainDir string) {
	slug := "legacy-update-" + p.name
	var r struct {
		ID, Superseded string
		ContentHash    string `json:"content_hash"`
	}
	okCall(t, p, "brain_write", `{"title":"Legacy update `+p.name+`","body":"v1\n","hall":"facts","wing":"payments"}`, &r)
	path := "wiki/payments/facts/" + slug + ".md"
	for _, args := range []string{
		`{"wing":"payments","hall":"facts","slug":"` + slug + `","body":"v2\n","reason":"by wing, hall and slug"}`,
		`{"slug":"` + path + `","body":"v3\n"}`,
		`{"path":"` + path + `","body":"v4\n","reason":"by path"}`,
	} {
		prev := r.ContentHash
		okCall(t, p, "brain_update", args, &r)
		if r.ID != "payments/facts/"+slug || r.Superseded != prev || r.ContentHash != fileHash(t, brainDir, path) {
			t.Fatalf("%s %s: %+v (superseded should be %s)", p.name, args, r, prev)
		}
	}
	refusedAs(t, p, "brain_update", `{"wing":"payments","hall":"facts","slug":"no-such-`+p.name+`","body":"x"}`, "not_found")
	if _, err := os.Stat(filepath.Join(brainDir, "wiki", "payments", "facts", "no-such-"+p.name+".md")); err == nil {
		t.Errorf("%s: a legacy update created a note", p.name)
	}
}

// brain_get {id} or {path}: the brain-relative path in either, the same
// bytes on every path.
func legacyGet(t *testing.T, p path, _ string) {
	byID := okCall(t, p, "brain_get", `{"id":"wiki/payments/facts/legacy-update-`+p.name+`.md"}`, nil)
	byPath := okCall(t, p, "brain_get", `{"path":"wiki/payments/facts/legacy-update-`+p.name+`.md"}`, nil)
	if byID != byPath || !strings.HasPrefix(byID, `{"id":"payments/facts/legacy-update-`+p.name+`","path":"wiki/payments/facts/`) {
		t.Errorf("%s: by id %s, by path %s", p.name, byID, byPath)
	}
}

// legacyMixed: a call mixing the two shapes is refused, naming both, in the
// same bytes on every path.
func legacyMixed(t *testing.T, paths []path) {
	for _, c := range [][2]string{
		{"brain_write", `{"wing":"payments","content":"x","title":"t","body":"b"}`},
		{"brain_update", `{"wing":"payments","id":"payments/facts/x","slug":"x","body":"b"}`},
		{"brain_ingest_raw", `{"wing":"payments","source":"s","pages":[{"title":"t","body":"b","hall":"facts"}]}`},
		{"session_log", `{"wing":"payments","session_id":"s","entry":{}}`},
		{"session_read", `{"wing":"payments","session_id":"s","session":"s"}`},
		{"brain_promote", `{"wing":"payments","filename":"x","name":"x","hall":"facts","slug":"x"}`},
	} {
		var first string
		for i, p := range paths {
			text := refusedAs(t, p, c[0], c[1], "invalid_argument", "mix two shapes", "predecessor's", "Brainstem's")
			if i == 0 {
				first = text
			} else if text != first {
				t.Errorf("%s %s: %s answers\n%s\n%s answers\n%s", c[0], c[1], paths[0].name, first, p.name, text)
			}
		}
	}
}

// legacyNoDefaultWing: without default_wing, the gateway refuses a
// wing-scoped call that names no wing, naming wing; a search still fans
// out.
func legacyNoDefaultWing(t *testing.T) {
	env := startEnv(t)
	gw := gatewayPath(t, env)
	refusedAs(t, gw, "brain_write", `{"content":"x"}`, "invalid_argument", `"wing"`)
	if text := okCall(t, gw, "brain_query", `{"query":"retry"}`, nil); !strings.Contains(text, `"wings":[`) || !strings.Contains(text, `"results":[`) {
		t.Errorf("a legacy search without a wing = %s", text)
	}
}

// TestDevDefaultWing: `brainstem dev --default-wing platform` lets a
// caller of the predecessor's single brain write without naming a wing
// (its brain_write shape lands in platform's inbox); without the flag the
// same call is refused naming wing.
func TestDevDefaultWing(t *testing.T) {
	legacy := `{"content":"---\ntitle: Retry budget\n---\nKeep retries under the budget.\n","filename":"retry-budget","type":"concept"}`
	for _, c := range []struct {
		def    string
		refuse bool
	}{{"platform", false}, {"", true}} {
		env := devenvtest.Start(t, devenv.Config{DefaultWing: c.def,
			Gateway: func(g *config.Config) { g.Limits.CallsPerSecond, g.Limits.Burst = 1e6, 1e6 }})
		alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
		text, isErr := call(t, alice, "brain_write", legacy)
		if c.refuse {
			if !isErr || !strings.Contains(text, "invalid_argument") || !strings.Contains(text, "wing") {
				t.Fatalf("without a default wing: %s", text)
			}
			continue
		}
		if isErr || !strings.Contains(text, `"path":"inbox/platform/retry-budget.md"`) {
			t.Fatalf("with default wing platform: %s", text)
		}
	}
}
