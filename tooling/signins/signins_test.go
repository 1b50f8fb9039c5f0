package signins

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/cli"
	"github.com/brainstem/brainstem/tooling/devenv"
)

// TestSigninsCommand: `brainstem signins end` against the real gateway of
// the development environment ends alice's sign-ins at once (her token is
// refused at /mcp, bob's is not), writes the entry to the file, and
// `signins list` shows the replica enforcing it; a wrong operator token is
// a failure that changes nothing.
func TestSigninsCommand(t *testing.T) {
	dir := t.TempDir()
	ended, tokFile := filepath.Join(dir, "ended.yaml"), filepath.Join(dir, "token")
	if err := os.WriteFile(ended, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte(strings.Repeat("ab", 20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := devenv.Start(context.Background(), devenv.Config{Data: filepath.Join(dir, "data"), Logger: slog.New(slog.DiscardHandler),
		Gateway: func(c *config.Config) { c.Signins = config.SigninsConfig{EndedFile: ended, AdminTokenFile: tokFile} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	token := func(email string) string {
		t.Helper()
		tok, _, err := env.Token(email, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// status is a stateless tools/list (MCP 2026-07-28) with tok.
	status := func(tok string) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
		req, _ := http.NewRequest(http.MethodPost, env.MCPURL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// cli runs the command as the binary does (its exit code included).
	runCLI := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		err := Run(context.Background(), args[1:], &out, &errb, func(string) string { return "usage\n" })
		return cli.ExitCode(err, &errb), out.String() + errb.String()
	}
	wrong := filepath.Join(dir, "wrong")
	_ = os.WriteFile(wrong, []byte(strings.Repeat("cd", 20)), 0o600)
	if code, out := runCLI("signins", "end", "--admin", env.AdminURL, "--token-file", wrong, "--email", "alice@example.com"); code != 1 || !strings.Contains(out, "401") {
		t.Fatalf("a wrong token: %d %s", code, out)
	}
	alice, bob := token("alice@example.com"), token("bob@example.com") // issued before the end
	if st := status(alice); st != http.StatusOK {
		t.Fatalf("alice before the end: %d", st)
	}
	code, out := runCLI("signins", "end", "--admin", env.AdminURL, "--token-file", tokFile, "--email", "Alice@Example.com",
		"--reason", "left", "--file", ended)
	if code != 0 || !strings.Contains(out, "the sign-ins of alice@example.com are ended") {
		t.Fatalf("end: %d %s", code, out)
	}
	if st := status(alice); st != http.StatusUnauthorized {
		t.Fatalf("alice after the end: %d", st)
	}
	if st := status(bob); st != http.StatusOK {
		t.Fatalf("bob: %d", st)
	}
	data, _ := os.ReadFile(ended)
	if es, err := offboard.Parse(data); err != nil || len(es) != 1 || es[0].Email != "alice@example.com" || es[0].Reason != "left" {
		t.Fatalf("the file: %v %+v\n%s", err, es, data)
	}
	code, out = runCLI("signins", "list", "--admin", env.AdminURL, "--token-file", tokFile, "--email", "alice@example.com")
	if code != 0 || !strings.Contains(out, "enforces: alice@example.com") || !strings.Contains(out, "seen by 1 of 1 replicas") {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, out := runCLI("signins", "end", "--admin", env.AdminURL, "--token-file", tokFile); code != 2 || !strings.Contains(out, "--email is required") {
		t.Fatalf("no email: %d %s", code, out)
	}
	if code, out := runCLI("signins", "end", "--admin", "ftp://x", "--token-file", tokFile, "--email", "a@b.co"); code != 2 {
		t.Fatalf("bad admin URL: %d %s", code, out)
	}
}
