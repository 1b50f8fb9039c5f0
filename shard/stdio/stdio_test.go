package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
)

func newSet(t *testing.T) *tools.Set {
	t.Helper()
	now := func() time.Time { return time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC) }
	st, err := store.Open(context.Background(), store.Options{Root: t.TempDir(), Wing: "payments", RescanInterval: -1,
		Now: now, History: store.HistoryOptions{AllowPurge: true, Now: now}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return tools.New(st, tools.Options{})
}

// startServer runs Serve over in-memory pipes and returns an MCP client
// connected to it; cleanup closes both and checks Serve returned nil.
func startServer(t *testing.T, set *tools.Set, caller tools.Caller) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clientToServer, serverIn := io.Pipe()
	serverToClient, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, set, caller, clientToServer, serverOut, nil)
		serverOut.Close()
	}()
	tr := transport.NewIO(serverToClient, serverIn, io.NopCloser(strings.NewReader("")))
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20250618))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serverIn.Close() // EOF on the server's input ends Serve
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cancel()
		c.Close()
	})
	return c
}

func callTool(t *testing.T, c *client.Client, name, args string) (string, bool) {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", name, len(res.Content))
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

// TestStdioEveryTool drives Serve with mcp-go's client: initialize,
// tools/list, then every tool, comparing each result with the bytes a
// direct Set.Call gives on an identical brain.
func TestStdioEveryTool(t *testing.T) {
	set := newSet(t)
	twin := newSet(t) // the same calls, made directly
	caller := tools.Caller{Email: "dev@example.com", Caps: AllCaps}
	c := startServer(t, set, caller)
	ctx := context.Background()

	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20250618, ClientInfo: mcp.Implementation{Name: "test", Version: "0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if init.ServerInfo.Name != "brainstem-payments" || init.Capabilities.Tools == nil {
		t.Errorf("initialize = %+v", init)
	}

	// tools/list, raw, so nothing is dropped by the client's decoding.
	raw, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(99)), Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw.Result, &listed); err != nil {
		t.Fatal(err)
	}
	var want []map[string]json.RawMessage
	json.Unmarshal(set.Descriptors(), &want)
	if len(listed.Tools) != len(want) {
		t.Fatalf("tools/list has %d tools, want %d", len(listed.Tools), len(want))
	}
	// mcp-go lists tools sorted by name; compare them by name.
	byName := map[string]map[string]json.RawMessage{}
	for _, g := range listed.Tools {
		var n string
		json.Unmarshal(g["name"], &n)
		byName[n] = g
	}
	for _, w := range want {
		var n string
		json.Unmarshal(w["name"], &n)
		got := byName[n]
		for _, k := range []string{"name", "description", "inputSchema", "outputSchema", "annotations", "_meta"} {
			if !jsonEqual(t, got[k], w[k]) {
				t.Errorf("tools/list %s.%s = %s, want %s", w["name"], k, got[k], w[k])
			}
		}
	}

	calls := []struct{ name, args string }{
		{"brain_write", `{"title":"Use idempotency keys","body":"Retry safely. See [[billing/facts/ledger]].","hall":"decisions"}`},
		{"brain_write", `{"title":"Retry storms","body":"Maybe.","inbox":true}`},
		{"brain_query", `{"query":"retry"}`},
		{"brain_get", `{"id":"payments/decisions/use-idempotency-keys"}`},
		{"brain_list", `{}`},
		{"brain_links", `{"id":"payments/decisions/use-idempotency-keys"}`},
		{"brain_pending", `{}`},
		{"brain_update", `{"id":"payments/decisions/use-idempotency-keys","body":"Retry safely, always.","reason":"clarity"}`},
		{"brain_ingest_raw", `{"pages":[{"hall":"facts","title":"Settlement","body":"T+2"}]}`},
		{"session_list", `{}`}, // empty yet: a log's updated_at is its file's mtime, another in the twin
		{"session_log", `{"session":"s1","entry":{"did":"things"}}`},
		{"session_read", `{"session":"s1"}`},
		{"brain_promote", `{"name":"retry-storms","hall":"hypotheses"}`},
		{"brain_get", `{"id":"payments/hypotheses/retry-storms"}`},
		{"brain_write", `{"title":"Use idempotency keys","body":"again","hall":"decisions"}`}, // already_exists
		// History: with one clock and the same changes, both brains make the same commits.
		{"brain_history", `{"id":"payments/decisions/use-idempotency-keys"}`},
		{"brain_diff", `{"id":"payments/decisions/use-idempotency-keys","from":"{{v1}}"}`},
		{"brain_restore", `{"id":"payments/decisions/use-idempotency-keys","version":"{{v1}}","reason":"the first was right"}`},
		{"brain_move", `{"id":"payments/facts/settlement","hall":"decisions","reason":"a decision"}`},
		{"brain_archive", `{"id":"payments/decisions/settlement","reason":"old"}`},
		{"brain_purge", `{"id":"payments/decisions/settlement","reason":"confidential"}`},
	}
	seen := map[string]bool{}
	for _, cl := range calls {
		if strings.Contains(cl.args, "{{v1}}") {
			h, _ := callTool(t, c, "brain_history", `{"id":"payments/decisions/use-idempotency-keys"}`)
			var vs struct{ Versions []struct{ Version string } }
			if err := json.Unmarshal([]byte(h), &vs); err != nil || len(vs.Versions) < 2 {
				t.Fatalf("history: %s", h)
			}
			cl.args = strings.ReplaceAll(cl.args, "{{v1}}", vs.Versions[len(vs.Versions)-1].Version)
		}
		got, isErr := callTool(t, c, cl.name, cl.args)
		wantRes, wantErr := twin.Call(ctx, caller, cl.name, []byte(cl.args))
		if got != string(wantRes) || isErr != wantErr {
			t.Errorf("%s(%s):\n stdio  %v %s\n direct %v %s", cl.name, cl.args, isErr, got, wantErr, wantRes)
		}
		seen[cl.name] = true
	}
	for _, tool := range set.Specs() {
		if !seen[tool.Name] {
			t.Errorf("tool %s not exercised over stdio", tool.Name)
		}
	}
	if got, isErr := callTool(t, c, "brain_write", `{"title":"Use idempotency keys","body":"again","hall":"decisions"}`); !isErr || !strings.Contains(got, `"already_exists"`) {
		t.Errorf("duplicate write over stdio = %v %s", isErr, got)
	}
	// mcp-go answers an unknown tool itself, with a JSON-RPC error.
	if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_nope", Arguments: json.RawMessage(`{}`)}}); err == nil {
		t.Error("unknown tool over stdio succeeded")
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestServeStopsOnCancel(t *testing.T) {
	set := newSet(t)
	ctx, cancel := context.WithCancel(context.Background())
	in, w := io.Pipe()
	defer w.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, set, tools.Caller{Email: "a@b.c", Caps: AllCaps}, in, io.Discard, nil) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel = %v", err)
	}
}

func TestCheckEmail(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{" Ann@Example.COM\n", "ann@example.com", true},
		{"", "", false},
		{"\n", "", false},
		{"no-at-sign", "", false},
		{"@example.com", "", false},
		{"ann@", "", false},
		{"a nn@example.com", "", false},
	}
	for _, tt := range tests {
		got, err := checkEmail(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("checkEmail(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrNoEmail) {
			t.Errorf("checkEmail(%q) error %v does not wrap ErrNoEmail", tt.in, err)
		}
	}
}

func TestDefaultEmail(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Chdir(home) // not inside a repository with its own config
	if _, err := DefaultEmail(context.Background()); !errors.Is(err, ErrNoEmail) {
		t.Errorf("without user.email: %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\temail = Dev@Example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := DefaultEmail(context.Background())
	if err != nil || got != "dev@example.com" {
		t.Errorf("DefaultEmail = %q, %v", got, err)
	}
}

func FuzzCheckEmail(f *testing.F) {
	for _, s := range []string{"a@b.c", " A@B.C\n", "", "@", "a@", "a b@c", "\xff@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := checkEmail(s)
		if err != nil {
			if !errors.Is(err, ErrNoEmail) {
				t.Fatalf("error %v does not wrap ErrNoEmail", err)
			}
			return
		}
		if e != strings.ToLower(e) || strings.TrimSpace(e) != e || !strings.Contains(e, "@") || strings.HasPrefix(e, "@") || strings.HasSuffix(e, "@") {
			t.Fatalf("checkEmail(%q) accepted %q", s, e)
		}
	})
}

// TestStdioPrompts: the stdio server offers the set's prompts with the
// same messages as the set answers, and refuses bad arguments with the
// same message.
func TestStdioPrompts(t *testing.T) {
	set := newSet(t)
	caller := tools.Caller{Email: "dev@example.com", Caps: AllCaps}
	c := startServer(t, set, caller)
	ctx := context.Background()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "0"}}}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil || len(list.Prompts) != len(set.Prompts()) {
		t.Fatalf("prompts/list: %+v %v", list, err)
	}
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = "review_inbox", map[string]string{"wing": "payments"}
	res, err := c.GetPrompt(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	raw, isErr := set.GetPrompt(ctx, caller, "review_inbox", []byte(`{"wing":"payments"}`))
	var want toolspec.PromptResult
	if isErr || json.Unmarshal(raw, &want) != nil || len(want.Messages) != 1 || len(res.Messages) != 1 {
		t.Fatalf("review_inbox: %+v (set: %s)", res, raw)
	}
	if tc, ok := res.Messages[0].Content.(mcp.TextContent); !ok || tc.Text != want.Messages[0].Content.Text || !strings.Contains(tc.Text, `brain_pending with {"wing": "payments"}`) {
		t.Errorf("stdio's message %+v is not the set's %s", res.Messages[0].Content, raw)
	}
	req.Params.Arguments = map[string]string{"wing": "payments", "limit": "7"}
	if _, err := c.GetPrompt(ctx, req); err == nil || !strings.Contains(err.Error(), "limit must be one of") {
		t.Errorf("a bad argument: %v", err)
	}
}
