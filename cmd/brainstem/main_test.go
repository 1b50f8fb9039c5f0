package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestMain lets the tests run this binary's main as a subprocess: with
// BRAINSTEM_TEST_MAIN=1 the test binary is brainstem. Run as
// "testbrowser-signin EMAIL URL" it is the browser `brainstem login` opens
// ($BROWSER): a scripted browser signing in as EMAIL.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "testbrowser-signin" {
		p, err := testbrowser.New().SignIn(context.Background(), os.Args[3], nil, os.Args[2], "")
		if err != nil || p.Status != http.StatusOK {
			fmt.Fprintf(os.Stderr, "testbrowser: %v %v\n", err, p)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("BRAINSTEM_TEST_MAIN") == "1" {
		os.Exit(runWithSignals())
	}
	os.Exit(m.Run())
}

func brainstem(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BRAINSTEM_TEST_MAIN=1")
	return cmd
}

func TestUsageAndVersion(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // brainstem token reads the sign-ins there
	t.Setenv("HOME", t.TempDir())
	tests := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"version"}, 0, "brainstem dev", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"nope"}, 2, "", `unknown command "nope"`},
		{[]string{"shard"}, 2, "", "--brain and --wing are required"},
		{[]string{"shard", "--brain", "x", "--wing", "w"}, 2, "", "required to serve over QUIC"},
		{[]string{"dev", "token"}, 2, "", "--email is required"},
		{[]string{"join"}, 2, "", "want exactly one URL"},
		{[]string{"login"}, 2, "", "want exactly one URL"},
		{[]string{"login", "http://brain.example.com"}, 2, "", "plain http is only for a local"},
		{[]string{"token", "a", "b"}, 2, "", "want exactly one URL"},
		{[]string{"token", "--bogus", "https://x.example"}, 2, "", "flag provided but not defined"},
		{[]string{"doctor"}, 2, "", "want exactly one URL"},
		{[]string{"doctor", "ftp://x"}, 2, "", "want an https URL"},
		{[]string{"token", "http://127.0.0.1:1"}, 1, "", "not signed in to http://127.0.0.1:1/mcp: run `brainstem login http://127.0.0.1:1/mcp` first"},
		{[]string{"gateway", "--check-config", "--config", "/does/not/exist.yaml"}, 2, "", "exist.yaml"},
		{[]string{"shard", "--bogus"}, 2, "", "flag provided but not defined"},
		{[]string{"shard", "--check-config"}, 2, "", "--tls-cert is required"},
		{[]string{"check"}, 2, "", "give the brain directory"},
		{[]string{"check", "/does/not/exist"}, 2, "", "exist"},
		{[]string{"check", "../../deploy/examples/brain"}, 0, "68 notes, 8 inbox notes, 0 session logs: ok", ""},
	}
	for _, tt := range tests {
		var out, errb strings.Builder
		code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.inStdout) || !strings.Contains(errb.String(), tt.inStderr) {
			t.Errorf("brainstem %v: code %d, stdout %q, stderr %q; want code %d with %q / %q", tt.args, code, out.String(), errb.String(), tt.code, tt.inStdout, tt.inStderr)
		}
	}
}

// TestEveryCommandHasUsage: the top usage names every command, and every
// command (and dev's subcommands) answers -h with its own usage and flags.
func TestEveryCommandHasUsage(t *testing.T) {
	top := usage("brainstem")
	names := []string{"dev token", "dev idp", "ca init"}
	for name := range commands() {
		names = append(names, name)
		if !strings.Contains(top, "\n  brainstem "+name+" ") {
			t.Errorf("the top usage does not list %q", name)
		}
	}
	for _, name := range names {
		if name == "version" {
			continue
		}
		var out, errb strings.Builder
		code := run(context.Background(), append(strings.Fields(name), "-h"), strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.HasPrefix(errb.String(), "Usage: brainstem "+strings.Fields(name)[0]) || !strings.Contains(errb.String(), "  -") {
			t.Errorf("brainstem %s -h: code %d, stderr %q; want its usage and flags", name, code, errb.String())
		}
	}
}

// devProcess is `brainstem dev` running as a subprocess.
type devProcess struct {
	url, token, idp string
	cmd             *exec.Cmd
}

func startDev(t *testing.T) *devProcess {
	t.Helper()
	return startDevWith(t, "--port", "0", "--data", t.TempDir())
}

// startDevWith starts `brainstem dev` with the other ports free and args
// (which must give --port and --data).
func startDevWith(t *testing.T, args ...string) *devProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := brainstem(ctx, append([]string{"dev", "--admin-port", "0", "--idp-port", "0", "--shard-port", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &devProcess{cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	var printed []string
	for sc.Scan() {
		line := sc.Text()
		printed = append(printed, line)
		fields := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "  MCP URL:"):
			d.url = fields[2]
		case strings.HasPrefix(line, "  Token:"):
			d.token = fields[1]
		case strings.HasPrefix(line, "Identity provider:"):
			d.idp = fields[2]
		}
		if strings.HasPrefix(line, "Press Ctrl-C") {
			break
		}
	}
	if d.url == "" || d.token == "" || d.idp == "" {
		t.Fatalf("brainstem dev printed no URL/token/idp:\n%s", strings.Join(printed, "\n"))
	}
	go io.Copy(io.Discard, stdout)
	for _, want := range []string{"claude mcp add --transport http brainstem " + d.url, "  Console:  http://", "mcp-inspector", "--method tools/list", "mcpServers", "Logs:"} {
		if !strings.Contains(strings.Join(printed, "\n"), want) && !strings.Contains(strings.Join(printed, "\n"), strings.Replace(want, "mcp-inspector", "@modelcontextprotocol/inspector", 1)) {
			t.Errorf("brainstem dev output lacks %q", want)
		}
	}
	return d
}

func (d *devProcess) tokenFor(t *testing.T, email, groups string) string {
	t.Helper()
	out, err := brainstem(context.Background(), "dev", "token", "--email", email, "--groups", groups, "--idp", d.idp).Output()
	if err != nil {
		t.Fatalf("dev token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func connect(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "brainstem-test", Version: "0"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

func call(t *testing.T, c *client.Client, tool string, args any) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(raw)}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", tool, len(res.Content))
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

// TestDevEndToEnd is the newcomer's path: start `brainstem dev`, read what it
// prints, connect with the printed token and use every tool; then the
// read-only user is refused a write and the curator promotes an inbox note.
func TestDevEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brainstem dev")
	}
	d := startDev(t)
	alice := connect(t, d.url, d.token)

	lt, err := alice.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range lt.Tools {
		names[tool.Name] = true
	}
	all := []string{"brain_query", "brain_get", "brain_list", "brain_links", "brain_pending", "brain_write", "brain_update", "brain_ingest_raw", "session_log", "brain_promote", "brain_wings"}
	for _, n := range all {
		if !names[n] {
			t.Errorf("tools/list for alice lacks %s", n)
		}
	}

	mustOK := func(tool string, args any) map[string]any {
		t.Helper()
		text, isErr := call(t, alice, tool, args)
		if isErr {
			t.Fatalf("%s %v: %s", tool, args, text)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s: not JSON: %s", tool, text)
		}
		return v
	}

	wings := mustOK("brain_wings", map[string]any{})
	if n := len(wings["wings"].([]any)); n != 3 {
		t.Errorf("alice reaches %d wings, want 3: %v", n, wings)
	}
	q := mustOK("brain_query", map[string]any{"query": "incident"})
	if len(q["hits"].([]any)) == 0 {
		t.Fatalf("cross-wing query found nothing: %v", q)
	}
	list := mustOK("brain_list", map[string]any{"wing": "payments", "limit": 5})
	first := list["notes"].([]any)[0].(map[string]any)["id"].(string)
	got := mustOK("brain_get", map[string]any{"id": first})
	if got["id"] != first || got["content_hash"] == "" {
		t.Errorf("brain_get %s = %v", first, got)
	}
	mustOK("brain_links", map[string]any{"id": first})
	w := mustOK("brain_write", map[string]any{"wing": "platform", "hall": "facts", "title": "Dev smoke note", "body": "Written by the end-to-end test."})
	up := mustOK("brain_update", map[string]any{"id": w["id"], "body": "Superseded body.", "reason": "test", "expected_hash": w["content_hash"]})
	if up["content_hash"] == w["content_hash"] {
		t.Error("brain_update did not change the hash")
	}
	mustOK("brain_ingest_raw", map[string]any{"wing": "platform", "dry_run": true, "pages": []any{map[string]any{"hall": "sources", "title": "Dry run page", "body": "x"}}})
	mustOK("session_log", map[string]any{"wing": "platform", "session": "e2e-1", "entry": map[string]any{"did": "smoke"}})
	pending := mustOK("brain_pending", map[string]any{"wing": "payments"})
	items := pending["pending"].([]any)
	if len(items) == 0 {
		t.Fatal("the sample payments inbox is empty")
	}
	name := items[0].(map[string]any)["name"].(string)

	// bob may only read payments: his write and his promote are refused.
	bob := connect(t, d.url, d.tokenFor(t, "bob@example.com", ""))
	if text, isErr := call(t, bob, "brain_write", map[string]any{"wing": "payments", "hall": "facts", "title": "Bob was here", "body": "nope"}); !isErr || !strings.Contains(text, "forbidden") {
		t.Errorf("bob's write to payments: isError=%v %s; want forbidden", isErr, text)
	}
	if text, isErr := call(t, bob, "brain_get", map[string]any{"id": first}); isErr {
		t.Errorf("bob cannot read payments: %s", text)
	}
	if text, isErr := call(t, bob, "brain_list", map[string]any{"wing": "people-ops"}); !isErr {
		t.Errorf("bob listed people-ops: %s", text)
	}

	// alice curates payments: promote the oldest inbox note.
	pr := mustOK("brain_promote", map[string]any{"wing": "payments", "name": name, "hall": "facts"})
	if !strings.HasPrefix(pr["id"].(string), "payments/facts/") {
		t.Errorf("promoted to %v", pr["id"])
	}
	after := mustOK("brain_pending", map[string]any{"wing": "payments"})
	if len(after["pending"].([]any)) != len(items)-1 {
		t.Errorf("inbox went from %d to %d notes", len(items), len(after["pending"].([]any)))
	}

	// Ctrl-C stops everything cleanly.
	if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Errorf("brainstem dev exited with %v after SIGINT", err)
	}
}

// TestCheckCommand: `brainstem check` prints every problem with its path and
// exits 1 when there is one, with the report as JSON on request.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	front := "---\ntitle: T\nwing: ops\nhall: facts\ncreated_by: a@example.com\ncreated_at: 2026-01-01T00:00:00Z\n---\n"
	write("wiki/ops/facts/good.md", front+"ok\n")
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"check", dir}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("a valid brain: exit %d\n%s%s", code, out.String(), errb.String())
	}
	write("wiki/ops/facts/bad-.md", front+"see [[ops/facts/missing]]\n")
	write("wiki/ops/facts/linker.md", front+"see [[ops/facts/missing]]\n")
	out.Reset()
	code := run(context.Background(), []string{"check", dir}, strings.NewReader(""), &out, &errb)
	want := []string{
		"wiki/ops/facts/bad-.md: not a note name: slug \"bad-\" has a leading, trailing or doubled '-'",
		"wiki/ops/facts/linker.md: link [[ops/facts/missing]] points at a note that does not exist (wiki/ops/facts/missing.md)",
		": 2 problems",
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"check", "--json", dir}, strings.NewReader(""), &out, &errb); code != 1 {
		t.Fatalf("--json: exit %d", code)
	}
	var rep struct {
		Problems []struct{ Path, Message string }
		Notes    int
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || len(rep.Problems) != 2 || rep.Notes != 2 {
		t.Fatalf("--json report %s (%v)", out.String(), err)
	}
}
