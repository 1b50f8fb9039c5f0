package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/search"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/tools.md")

const docsPath = "../../docs/tools.md"

// example is one documented call, run for real against a fixture brain.
type example struct {
	tool, args string
	c          Caller
}

// docExamples run in this order (the docs show them per tool). {{hash ID}}
// in args is replaced by the note's current content hash.
var docExamples = []example{
	{"brain_write", `{"title":"Card network timeouts","body":"Visa timed out for 40 minutes; our retries kept within [[facts/retry-budget]].\n","hall":"failures","tags":["incident","cards"],"idempotency_key":"4f9c2e1a-card-timeouts"}`, writer},
	{"brain_query", `{"query":"retry budget","wing":"payments","limit":2}`, reader},
	{"brain_get", `{"id":"payments/facts/retry-budget"}`, reader},
	{"brain_list", `{"limit":2}`, reader},
	{"brain_links", `{"id":"payments/facts/retry-budget"}`, reader},
	{"brain_pending", `{}`, reader},
	{"brain_update", `{"id":"payments/facts/retry-budget","body":"Clients retry a charge at most twice.\n","reason":"lowered after the card network incident","expected_hash":"{{hash payments/facts/retry-budget}}"}`, writer},
	{"brain_ingest_raw", `{"pages":[{"hall":"sources","title":"PSP contract","body":"Section 4: timeouts."},{"hall":"facts","title":"Retry budget","body":"duplicate"}]}`, writer},
	{"session_log", `{"session":"2026-11-30-incident","entry":{"did":"wrote the incident note","note":"payments/failures/card-network-timeouts"}}`, writer},
	{"brain_promote", `{"name":"retry-storms","hall":"hypotheses"}`, curator},
	{"session_list", `{}`, reader},
	{"session_read", `{"session":"2026-11-30-incident","limit":10}`, reader},
	{"brain_history", `{"id":"payments/facts/retry-budget"}`, reader},
	{"brain_diff", `{"id":"payments/facts/retry-budget","from":"{{version payments/facts/retry-budget 1}}"}`, reader},
	{"brain_restore", `{"id":"payments/facts/retry-budget","version":"{{version payments/facts/retry-budget 1}}","reason":"three retries was right after all"}`, writer},
	{"brain_archive", `{"id":"payments/sources/psp-contract","reason":"superseded by the signed contract"}`, curator},
	{"brain_move", `{"id":"payments/facts/retry-budget","hall":"decisions","reason":"a limit we chose, not a fact we found"}`, curator},
	{"brain_purge", `{"id":"payments/sources/psp-contract","reason":"the contract is confidential"}`, curator},
}

// docLegacyExamples are calls in the predecessor's shapes (toolspec.Legacy),
// run in this order on a fixture of their own, so they change none of the
// other examples' answers.
var docLegacyExamples = []example{
	{"brain_query", `{"query":"retry storms","limit":2}`, reader},
	{"brain_write", `{"content":"---\ntitle: Card network timeouts\n---\nVisa timed out for 40 minutes.\n","filename":"card-timeouts.md","type":"incident","domain":"payments"}`, writer},
	{"brain_update", `{"wing":"payments","hall":"facts","slug":"retry-budget","body":"Clients retry a charge at most twice.\n","reason":"lowered after the card network incident"}`, writer},
	{"brain_ingest_raw", `{"source":"psp-handbook","pages":[{"title":"Settlement window","type":"concept","content":"Captures settle within two days.\n"}]}`, writer},
	{"session_log", `{"session_id":"2026-11-30-incident","skill":"incident-review","phase":"triage","final_status":"ok","duration_ms":5400,"message":"wrote the incident note"}`, writer},
	{"brain_promote", `{"filename":"retry-storms.md","wing":"payments","hall":"hypotheses","slug":"retry-storms"}`, curator},
	{"session_read", `{"session_id":"2026-11-30-incident"}`, reader},
}

// docErrorExamples illustrate error results (run after docExamples).
var docErrorExamples = []example{
	{"brain_write", `{"title":"Use idempotency keys","body":"again","hall":"decisions"}`, writer},
	{"brain_update", `{"id":"payments/decisions/use-idempotency-keys","body":"x","reason":"stale","expected_hash":"{{hash payments/decisions/retry-budget}}"}`, writer},
	{"brain_get", `{"id":"payments/facts/retry-budget"}`, reader},
	{"brain_query", `{"query":"retry","colour":"blue"}`, reader},
	{"brain_write", `{"title":"Card network timeouts","body":"Mastercard timed out too.\n","hall":"failures","idempotency_key":"4f9c2e1a-card-timeouts"}`, writer},
}

// docFixture is the brain the examples run against.
func docFixture(t *testing.T) *Set {
	s, _, _ := newKeyedSet(t, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Use idempotency keys","body":"Every charge carries an idempotency key, so a retry within the [[facts/retry-budget]] never charges twice. The ledger side is [[billing/decisions/ledger-entries]].\n","hall":"decisions","tags":["api"]}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Retry budget","body":"Clients retry a charge at most three times, with jittered backoff.\n","hall":"facts"}`, nil)
	mustCall(t, s, writer, "brain_write", `{"title":"Retry storms after deploys","body":"Several incidents began minutes after a deploy; maybe clients reconnect all at once and retry together.\n","hall":"hypotheses","slug":"retry-storms","inbox":true}`, nil)
	return s
}

var (
	hashRef    = regexp.MustCompile(`\{\{hash ([^}]+)\}\}`)
	versionRef = regexp.MustCompile(`\{\{version ([^ }]+) ([0-9]+)\}\}`)
)

// runExample runs ex, with {{hash ID}} replaced by the note's content hash
// and {{version ID N}} by its Nth newest version (0: the newest).
func runExample(t *testing.T, s *Set, ex example) (args, result string, isErr bool) {
	args = hashRef.ReplaceAllStringFunc(ex.args, func(m string) string {
		n, err := s.st.Get(context.Background(), hashRef.FindStringSubmatch(m)[1])
		if err != nil {
			t.Fatal(err)
		}
		return n.Hash
	})
	args = versionRef.ReplaceAllStringFunc(args, func(m string) string {
		sub := versionRef.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		h, err := s.st.Versions(context.Background(), sub[1], "", n+1)
		if err != nil || len(h.Versions) <= n {
			t.Fatalf("%s: %v", m, err)
		}
		return h.Versions[n].ID
	})
	res, isErr := s.Call(context.Background(), ex.c, ex.tool, []byte(args))
	return args, string(res), isErr
}

func indentJSON(t *testing.T, s string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		t.Fatalf("indent %s: %v", s, err)
	}
	return b.String()
}

// generatedBlocks renders every generated block of docs/tools.md by name.
func generatedBlocks(t *testing.T) map[string]string {
	s := docFixture(t)
	blocks := map[string]string{}
	byTool := map[string]string{}
	for _, ex := range docExamples {
		args, res, isErr := runExample(t, s, ex)
		if isErr {
			t.Fatalf("doc example %s(%s) failed: %s", ex.tool, args, res)
		}
		byTool[ex.tool] = fmt.Sprintf("Example arguments:\n\n```json\n%s\n```\n\nResult:\n\n```json\n%s\n```\n", indentJSON(t, args), indentJSON(t, res))
	}
	legacy := legacyBlocks(t)
	var errs strings.Builder
	for _, ex := range docErrorExamples {
		args, res, isErr := runExample(t, s, ex)
		if !isErr {
			t.Fatalf("doc error example %s(%s) succeeded: %s", ex.tool, args, res)
		}
		fmt.Fprintf(&errs, "`%s` with\n\n```json\n%s\n```\n\nreturns (isError: true)\n\n```json\n%s\n```\n\n", ex.tool, indentJSON(t, args), res)
	}
	blocks["errors"] = errs.String()
	yes := map[bool]string{true: "yes", false: "no"}
	for _, sp := range s.Specs() {
		var b strings.Builder
		fmt.Fprintf(&b, "**Capability:** `%s` · read-only: %s · destructive: %s · idempotent: %s\n\n", sp.Capability().Strongest(), yes[sp.ReadOnly], yes[sp.Destructive], yes[sp.Idempotent])
		fmt.Fprintf(&b, "%s\n\n", sp.Description)
		b.WriteString(sp.ArgsTable())
		b.WriteString("\n")
		ex, ok := byTool[sp.Name]
		if !ok {
			t.Fatalf("no doc example for %s", sp.Name)
		}
		b.WriteString(ex)
		if sp.Legacy != nil {
			fmt.Fprintf(&b, "\n**The predecessor's shape.** %s\n", sp.Legacy.Doc)
			if tbl := sp.LegacyTable(); tbl != "" {
				b.WriteString("\n" + tbl)
			}
			b.WriteString(legacy[sp.Name])
		}
		blocks[sp.Name] = b.String()
	}
	var lim strings.Builder
	lim.WriteString("| limit | default | error |\n|---|---|---|\n")
	d := DefaultLimits()
	for _, r := range []struct {
		what string
		v    int
		code brain.Code
	}{
		{"arguments of one call (bytes)", d.MaxArgsBytes, brain.CodeTooLarge},
		{"note body (bytes)", d.MaxBodyBytes, brain.CodeTooLarge},
		{"title (bytes)", d.MaxTitleBytes, brain.CodeTooLarge},
		{"tags per note", d.MaxTags, brain.CodeTooLarge},
		{"tag (bytes)", d.MaxTagBytes, brain.CodeTooLarge},
		{"update reason (bytes)", d.MaxReasonBytes, brain.CodeTooLarge},
		{"query (bytes)", d.MaxQueryBytes, brain.CodeTooLarge},
		{"searchable words per query", d.MaxQueryTerms, brain.CodeTooLarge},
		{"pages per brain_ingest_raw", d.MaxPages, brain.CodeTooLarge},
		{"session_log entry (compact JSON bytes)", d.MaxEntryBytes, brain.CodeTooLarge},
		{"brain_query limit", search.MaxLimit, brain.CodeInvalidArgument},
		{"brain_list limit", ListMaxLimit, brain.CodeInvalidArgument},
		{"brain_pending limit", PendingMaxLimit, brain.CodeInvalidArgument},
	} {
		fmt.Fprintf(&lim, "| %s | %d | `%s` |\n", r.what, r.v, r.code)
	}
	blocks["limits"] = lim.String()
	for name, b := range promptBlocks(t, s) {
		blocks[name] = b
	}
	blocks["codes"] = codesTable()
	blocks["names"] = namesList()
	for name, b := range gatewayBlocks(t) {
		blocks[name] = b
	}
	return blocks
}

// legacyBlocks runs docLegacyExamples and renders each as its tool's
// block shows it, by tool.
func legacyBlocks(t *testing.T) map[string]string {
	s := docFixture(t)
	out := map[string]string{}
	for _, ex := range docLegacyExamples {
		args, res, isErr := runExample(t, s, ex)
		if isErr {
			t.Fatalf("legacy doc example %s(%s) failed: %s", ex.tool, args, res)
		}
		out[ex.tool] = fmt.Sprintf("\nExample arguments, in the predecessor's shape:\n\n```json\n%s\n```\n\nResult:\n\n```json\n%s\n```\n", indentJSON(t, args), indentJSON(t, res))
	}
	for _, sp := range s.Specs() {
		if _, ok := out[sp.Name]; sp.LegacyTable() != "" && !ok {
			t.Fatalf("no legacy doc example for %s", sp.Name)
		}
	}
	return out
}

// docPromptExamples are the documented prompts/get arguments, by prompt.
var docPromptExamples = map[string]string{
	"capture_learnings":  `{"wing":"payments","focus":"the card network incident"}`,
	"search_before_task": `{"task":"Add a retry to the PSP capture call"}`,
	"review_inbox":       `{"wing":"payments","limit":"25"}`,
}

// promptBlocks renders each prompt's block: its capability, description,
// arguments and the messages prompts/get answers for the example.
func promptBlocks(t *testing.T, s *Set) map[string]string {
	out := map[string]string{}
	all := Caller{Email: "doc@example.com", Caps: brain.CapRead | brain.CapWrite | brain.CapCurate}
	for _, p := range s.Prompts() {
		args, ok := docPromptExamples[p.Name]
		if !ok {
			t.Fatalf("no doc example for prompt %s", p.Name)
		}
		res, isErr := s.GetPrompt(context.Background(), all, p.Name, []byte(args))
		if isErr {
			t.Fatalf("doc example of prompt %s: %s", p.Name, res)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "**%s** · for callers with `%s` in the wing\n\n%s\n\n", p.Title, p.Capability().Strongest(), p.Description)
		b.WriteString((&toolspec.Spec{Args: p.Args}).ArgsTable())
		fmt.Fprintf(&b, "\nExample arguments:\n\n```json\n%s\n```\n\nResult:\n\n```json\n%s\n```\n", indentJSON(t, args), indentJSON(t, string(res)))
		out["prompt_"+p.Name] = b.String()
	}
	return out
}

// codesTable is every code a client can receive (brain.Codes), who answers
// with it and what it means.
func codesTable() string {
	var b strings.Builder
	b.WriteString("| code | from | meaning |\n|---|---|---|\n")
	from := map[brain.Source]string{brain.FromShard: "shard", brain.FromGateway: "gateway", brain.FromShard | brain.FromGateway: "shard, gateway"}
	for _, c := range brain.Codes() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Code, from[c.From], c.Meaning)
	}
	return b.String()
}

// namesList states the naming rules of package brain.
func namesList() string {
	return fmt.Sprintf("- **wing**: %s.\n- **hall**: one of %s.\n- **slug** and inbox **name**: %s; not `%s`.\n"+
		"- **session**: %s.\n\nNo name may be a reserved device name (%s). A wing is a DNS label: it also names the wing's\n"+
		"Kubernetes objects and TLS server name, and the gateway, the shards and the Helm chart apply the same rule.\n",
		brain.WingRule, "`"+strings.Join(brain.Halls(), "`, `")+"`", brain.SlugRule, brain.IndexSlug, brain.SessionRule, brain.ReservedNames)
}

var blockRE = regexp.MustCompile(`(?s)<!-- generated:([a-z_]+) -->\n(.*?)<!-- /generated:([a-z_]+) -->`)

// TestDocsInSync fails when docs/tools.md drifts from the tools: every
// tool has a "## `name`" section whose generated block (capability,
// description, the argument table built from the schema, and an example
// whose result is the real output of the call) matches. Run
// `go test ./shard/tools -run TestDocsInSync -update` to regenerate.
func TestDocsInSync(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	want := generatedBlocks(t)
	found := map[string]bool{}
	var drift []string
	out := blockRE.ReplaceAllStringFunc(string(doc), func(m string) string {
		sub := blockRE.FindStringSubmatch(m)
		name, body, end := sub[1], sub[2], sub[3]
		if name != end {
			t.Errorf("block %s closed as %s", name, end)
			return m
		}
		found[name] = true
		w, ok := want[name]
		if !ok {
			t.Errorf("docs/tools.md has a generated block %q that nothing generates", name)
			return m
		}
		if body != w {
			drift = append(drift, name)
		}
		return "<!-- generated:" + name + " -->\n" + w + "<!-- /generated:" + name + " -->"
	})
	for name := range want {
		if !found[name] {
			t.Errorf("docs/tools.md lacks the generated block %q (add <!-- generated:%s --><!-- /generated:%s -->)", name, name, name)
		}
	}
	s, _, _ := newSet(t)
	headings := regexp.MustCompile("(?m)^## `([a-z_]+)`$").FindAllStringSubmatch(string(doc), -1)
	var names []string
	for _, h := range headings {
		names = append(names, h[1])
	}
	if got, wantNames := strings.Join(names, ","), strings.Join(append(s.names(), toolspec.WingsTool), ","); got != wantNames {
		t.Errorf("tool sections of docs/tools.md = %s, want %s (descriptor order, then the gateway's own)", got, wantNames)
	}
	if len(drift) == 0 {
		return
	}
	if *update {
		if err := os.WriteFile(docsPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %v in %s", drift, docsPath)
		return
	}
	t.Errorf("docs/tools.md is out of date for %v: run go test ./shard/tools -run TestDocsInSync -update and review the diff", drift)
}
