package agenthooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/hooks"
	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// bin is the brainstem binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "brainstem-hooks-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "brainstem")
	build := exec.Command("go", "build", "-o", bin, "./cmd/brainstem")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/brainstem: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startEnv is the development environment with the sample brain, and no
// per-user rate limit.
func startEnv(t testing.TB) *devenv.Env {
	t.Helper()
	return devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
	}})
}

// person is someone on a machine: a home, configuration and cache
// directories, and a stored sign-in to the gateway.
type person struct {
	email               string
	token               string
	home, config, cache string
	url                 string
}

// newPerson signs email in to env's gateway as `brainstem login` leaves
// it: a sign-in file holding a fresh access token (one of the development
// identity provider's, which the gateway accepts).
func newPerson(t testing.TB, env *devenv.Env, email string) *person {
	t.Helper()
	tok, exp, err := env.Token(email, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &person{email: email, token: tok, home: t.TempDir(), url: env.MCPURL}
	p.config, p.cache = filepath.Join(p.home, ".config"), filepath.Join(p.home, ".cache")
	p.store(t, env, tok, exp, "")
	return p
}

// store saves the person's sign-in.
func (p *person) store(t testing.TB, env *devenv.Env, token string, expires time.Time, refresh string) {
	t.Helper()
	rec := &signin.Record{Version: signin.RecordVersion, MCPURL: p.url, Issuer: env.IssuerURL, TokenEndpoint: env.IssuerURL + "/token",
		ClientID: "brainstem-cli", AccessToken: token, TokenType: "Bearer", ExpiresAt: expires, RefreshToken: refresh,
		Email: p.email, SignedInAt: time.Now()}
	if err := (&signin.Store{Dir: filepath.Join(p.config, "brainstem", "signins")}).Save(rec); err != nil {
		t.Fatal(err)
	}
}

// settings writes the person's hooks.json.
func (p *person) settings(t testing.TB, doc string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.config, "brainstem", hooks.SettingsFile), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// answer is one run of a hook process.
type answer struct {
	out      hooks.Output
	stdout   string
	stderr   string
	code     int
	elapsed  time.Duration
	contexts string // hookSpecificOutput.additionalContext
}

// hook runs `brainstem hook <event> args…` as Claude Code does, input on
// stdin, and checks what every hook answer must be: exit status 0, one JSON
// object on stdout, no token in any output.
func (p *person) hook(t testing.TB, event, input string, args ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"hook", event}, args...)...)
	cmd.Env = []string{"HOME=" + p.home, "XDG_CONFIG_HOME=" + p.config, "XDG_CACHE_HOME=" + p.cache, "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(input), &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	a := answer{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		a.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("brainstem hook %s: %v", event, err)
	}
	if a.code != 0 {
		t.Fatalf("brainstem hook %s: exit status %d, stderr %s", event, a.code, a.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(a.stdout))
	if err := dec.Decode(&a.out); err != nil || dec.More() {
		t.Fatalf("brainstem hook %s: stdout is not one JSON object: %q (%v)", event, a.stdout, err)
	}
	if p.token != "" && strings.Contains(a.stdout+a.stderr, p.token) {
		t.Fatalf("brainstem hook %s printed the token", event)
	}
	if a.out.HookSpecificOutput != nil {
		a.contexts = a.out.HookSpecificOutput.AdditionalContext
	}
	return a
}

// input is a hook's stdin as Claude Code's hooks reference shows it, for
// session in cwd, with the event's own fields.
func input(t testing.TB, event, session, cwd, transcript string, fields map[string]any) string {
	t.Helper()
	ev, ok := hooks.LookupEvent(event)
	if !ok {
		t.Fatalf("no hook %s", event)
	}
	in := map[string]any{"session_id": session, "transcript_path": transcript, "cwd": cwd,
		"permission_mode": "default", "hook_event_name": ev.Claude}
	for k, v := range fields {
		in[k] = v
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// transcriptLine is one line of a Claude Code transcript.
type transcriptLine map[string]any

func toolUse(id, name string, in map[string]any) transcriptLine {
	return transcriptLine{"type": "assistant", "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": in}}}}
}

func toolResult(id, text string) transcriptLine {
	return transcriptLine{"type": "user", "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": []any{map[string]any{"type": "text", "text": text}}}}}}
}

// writeTranscript writes lines as a transcript file and returns its path.
func writeTranscript(t testing.TB, lines ...transcriptLine) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"type":"user","message":{"role":"user","content":"add exponential backoff to the PSP client"}}` + "\n")
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	p := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// gitRepo makes a repository about payments retries: its name, branch,
// README title and commits are what session-start searches the brain with.
func gitRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "payments-retries")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Payments retries\n\nHow our PSP client retries captures.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "retry-budget"}, {"add", "."},
		{"commit", "-q", "-m", "Add exponential backoff to PSP capture retries"},
		{"commit", "-q", "--allow-empty", "-m", "Idempotency keys on retried payment API calls"}} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}
