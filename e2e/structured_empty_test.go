package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// emptyScript calls the tools where their lists are empty: a wing without
// notes, inbox or sessions, a note without tags or links, a search without
// hits, a move nothing links to.
var emptyScript = []struct{ tool, args string }{
	{"brain_list", `{"wing":"empty"}`},
	{"brain_list", `{"wing":"empty","archived":true}`},
	{"brain_pending", `{"wing":"empty"}`},
	{"session_list", `{"wing":"empty"}`},
	{"brain_query", `{"query":"nothing matches this","wing":"empty"}`},
	{"brain_query", `{"query":"nothing matches this"}`},
	{"brain_write", `{"wing":"empty","hall":"facts","slug":"lonely","title":"Lonely","body":"No links.\n"}`},
	{"brain_get", `{"id":"empty/facts/lonely"}`},
	{"brain_links", `{"id":"empty/facts/lonely"}`},
	{"brain_history", `{"id":"empty/facts/lonely"}`},
	{"brain_ingest_raw", `{"wing":"empty","pages":[{"hall":"sources","title":"Raw","body":"Page."}],"dry_run":true}`},
	{"brain_move", `{"id":"empty/facts/lonely","hall":"decisions","reason":"a decision"}`},
	{"session_log", `{"wing":"empty","session":"s1","entry":{}}`},
	{"session_read", `{"wing":"empty","session":"s1"}`},
	{"brain_archive", `{"id":"empty/decisions/lonely","reason":"old"}`},
	{"brain_wings", `{}`},
}

// TestStructuredResultsWhenEmpty: the output schemas declare every list
// as an array and every map as an object, never null (a type union
// MCP clients do not all accept); the answers hold to it where their lists
// are empty, validated by a real JSON Schema validator.
func TestStructuredResultsWhenEmpty(t *testing.T) {
	brain := t.TempDir()
	if err := os.MkdirAll(filepath.Join(brain, "wiki", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := devenvtest.Start(t, devenv.Config{Brain: brain})
	c := legacyClient(t, env, "alice@example.com")
	descs := rawList(t, c) // tools/list as the server wrote it
	for name, d := range descs {
		if strings.Contains(string(d), `"null"`) {
			t.Errorf("%s: its outputSchema admits null: %s", name, d)
		}
	}
	schemas := compileOutputSchemas(t, descs, 18)
	for _, step := range emptyScript {
		res := callResult(t, c, step.tool, step.args)
		text := res.Content[0].(mcp.TextContent).Text
		if res.IsError {
			t.Fatalf("%s %s: %s", step.tool, step.args, text)
		}
		checkStructured(t, schemas, step.tool, text, res.RawStructuredContent)
	}
	// brain_wings of someone who reaches no wing.
	sample := startEnv(t)
	nobody := httpClient(t, sample.MCPURL, token(t, sample, "dave@example.com"))
	res := callResult(t, nobody, "brain_wings", `{}`)
	text := res.Content[0].(mcp.TextContent).Text
	if !strings.Contains(text, `"wings":[]`) {
		t.Errorf("brain_wings of someone without wings: %s", text)
	}
	checkStructured(t, compileOutputSchemas(t, rawList(t, legacyClient(t, sample, "alice@example.com")), 18), "brain_wings", text, res.RawStructuredContent)
}

// legacyClient is a client of env on the 2025-06-18 session path, whose
// raw tools/list rawList reads.
func legacyClient(t *testing.T, env *devenv.Env, email string) *client.Client {
	t.Helper()
	return initialize(t, client.NewClient(mustTransport(t, env.MCPURL, token(t, env, email)), client.WithProtocolVersion(mcp.ProtocolVersion20250618)))
}
