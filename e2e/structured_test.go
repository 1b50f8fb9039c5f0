package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// structuredScript calls every tool once, in an order that gives each the
// state it needs. {{s}} is the client's suffix (each client works on notes
// of its own); {{v1 ID}} is the first version of note ID.
var structuredScript = []struct{ tool, args string }{
	{"brain_wings", `{}`},
	{"brain_write", `{"wing":"payments","hall":"facts","slug":"st-{{s}}","title":"Structured {{s}}","body":"One. See [[payments/facts/st-{{s}}-b]].\n"}`},
	{"brain_write", `{"wing":"payments","hall":"facts","slug":"st-{{s}}-b","title":"Structured B {{s}}","body":"B <b>&</b>.\n","tags":["x"]}`},
	{"brain_get", `{"id":"payments/facts/st-{{s}}"}`},
	{"brain_update", `{"id":"payments/facts/st-{{s}}","body":"Two.\n","reason":"a second version"}`},
	{"brain_history", `{"id":"payments/facts/st-{{s}}"}`},
	{"brain_diff", `{"id":"payments/facts/st-{{s}}","from":"{{v1 payments/facts/st-{{s}}}}"}`},
	{"brain_get", `{"id":"payments/facts/st-{{s}}","version":"{{v1 payments/facts/st-{{s}}}}"}`},
	{"brain_restore", `{"id":"payments/facts/st-{{s}}","version":"{{v1 payments/facts/st-{{s}}}}","reason":"one was right"}`},
	{"brain_list", `{"wing":"payments","limit":3}`},
	{"brain_links", `{"id":"payments/facts/st-{{s}}-b"}`},
	{"brain_query", `{"query":"structured","limit":3}`},
	{"brain_query", `{"query":"structured","wing":"payments","scope":"all"}`},
	{"brain_ingest_raw", `{"wing":"payments","pages":[{"hall":"sources","title":"Ingested {{s}}","body":"Page."}]}`},
	{"brain_write", `{"wing":"payments","hall":"hypotheses","slug":"st-inbox-{{s}}","title":"Maybe {{s}}","body":"Maybe.\n","inbox":true}`},
	{"brain_pending", `{"wing":"payments"}`},
	{"brain_promote", `{"wing":"payments","name":"st-inbox-{{s}}","hall":"hypotheses"}`},
	{"session_log", `{"wing":"payments","session":"st-{{s}}","entry":{"did":"structured"}}`},
	{"session_list", `{"wing":"payments"}`},
	{"session_read", `{"wing":"payments","session":"st-{{s}}"}`},
	{"brain_move", `{"id":"payments/facts/st-{{s}}-b","hall":"decisions","reason":"a decision"}`},
	{"brain_archive", `{"id":"payments/sources/ingested-{{s}}","reason":"old"}`},
	{"brain_list", `{"wing":"payments","archived":true}`},
	{"brain_purge", `{"id":"payments/sources/ingested-{{s}}","reason":"confidential"}`},
}

var firstVersion = regexp.MustCompile(`\{\{v1 ([^}]+)\}\}`)

// TestStructuredResults: every tool declares an outputSchema, and every
// successful answer carries structuredContent that is the text content's
// JSON and validates against that schema (santhosh-tekuri/jsonschema, a
// real validator), through the gateway on the 2026-07-28 stateless path
// and on the 2025-06-18 session path; an error answer carries none.
func TestStructuredResults(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 },
		Shard:   func(c *shard.Config) { c.History.AllowPurge = true },
	})
	tok := token(t, env, "alice@example.com")
	clients := []struct {
		name string
		c    *client.Client
	}{
		{"modern", httpClient(t, env.MCPURL, tok)},
		{"legacy", initialize(t, client.NewClient(mustTransport(t, env.MCPURL, tok), client.WithProtocolVersion(mcp.ProtocolVersion20250618)))},
	}
	schemas := compileOutputSchemas(t, rawList(t, clients[1].c), 19) // tools/list as the server wrote it
	for _, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, step := range structuredScript {
				args := strings.ReplaceAll(step.args, "{{s}}", cl.name)
				args = firstVersion.ReplaceAllStringFunc(args, func(m string) string {
					h := historyOf(t, cl.c, firstVersion.FindStringSubmatch(m)[1])
					return h.Versions[len(h.Versions)-1].Version
				})
				res := callResult(t, cl.c, step.tool, args)
				text := res.Content[0].(mcp.TextContent).Text
				if res.IsError {
					t.Fatalf("%s %s: %s", step.tool, args, text)
				}
				checkStructured(t, schemas, step.tool, text, res.RawStructuredContent)
				seen[step.tool] = true
			}
			for name := range schemas {
				if !seen[name] {
					t.Errorf("%s: the script never calls %s", cl.name, name)
				}
			}
			// An error answer carries no structured content.
			res := callResult(t, cl.c, "brain_get", `{"id":"payments/facts/no-such-note"}`)
			if !res.IsError || res.RawStructuredContent != nil {
				t.Errorf("an error answer: isError %v, structuredContent %s", res.IsError, res.RawStructuredContent)
			}
		})
	}
}

// TestStructuredResultsOverStdio: the shard's stdio mode answers with the
// same structuredContent beside the text.
func TestStructuredResultsOverStdio(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{AllowPurge: true}) // every tool listed: brain_purge only where purging is on
	// The schemas as the gateway lists them, which TestToolConformance
	// holds equal to stdio's listing.
	legacy := initialize(t, client.NewClient(mustTransport(t, env.MCPURL, token(t, env, "alice@example.com")), client.WithProtocolVersion(mcp.ProtocolVersion20250618)))
	schemas := compileOutputSchemas(t, rawList(t, legacy), 19)
	c := stdioClient(t, env.BrainDir, "payments", "alice@example.com")
	for _, step := range []struct{ tool, args string }{
		{"brain_get", `{"id":"payments/decisions/use-idempotency-keys"}`},
		{"brain_query", `{"query":"idempotency","limit":2}`},
		{"brain_list", `{"limit":2}`},
		{"brain_write", `{"hall":"facts","title":"Over stdio","body":"s\n"}`},
	} {
		res := callResult(t, c, step.tool, step.args)
		if res.IsError {
			t.Fatalf("%s: %s", step.tool, res.Content[0].(mcp.TextContent).Text)
		}
		checkStructured(t, schemas, step.tool, res.Content[0].(mcp.TextContent).Text, res.RawStructuredContent)
	}
}

// compileOutputSchemas compiles each listed tool's outputSchema, requiring
// one of every tool, and at least atLeast tools (the 18 brain tools, and
// brain_wings through the gateway).
func compileOutputSchemas(t *testing.T, descs map[string]json.RawMessage, atLeast int) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	c := jsonschema.NewCompiler()
	for name, d := range descs {
		var desc struct {
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := json.Unmarshal(d, &desc); err != nil || len(desc.OutputSchema) == 0 {
			t.Errorf("%s declares no outputSchema (%v)", name, err)
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(desc.OutputSchema))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		url := "mem://brainstem/" + name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out[name], err = c.Compile(url); err != nil {
			t.Fatalf("%s: the outputSchema does not compile: %v", name, err)
		}
	}
	if len(out) < atLeast {
		t.Fatalf("only %d tools listed", len(out))
	}
	return out
}

// checkStructured: structured is the text's JSON, and it validates.
func checkStructured(t *testing.T, schemas map[string]*jsonschema.Schema, tool, text string, structured json.RawMessage) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(structured, &a); err != nil {
		t.Errorf("%s: structuredContent %q: %v", tool, structured, err)
		return
	}
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		t.Fatalf("%s: text %q: %v", tool, text, err)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("%s: structuredContent differs from the text\n%s\n%s", tool, structured, text)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas[tool].Validate(inst); err != nil {
		t.Errorf("%s: the answer does not validate against its outputSchema: %v\n%s", tool, err, text)
	}
}

func callResult(t *testing.T, c *client.Client, tool, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", tool, len(res.Content))
	}
	return res
}
