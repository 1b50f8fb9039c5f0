package join_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/join"
	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

func TestMCPURL(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"brain.acme.com", "https://brain.acme.com/mcp", false},
		{"https://brain.acme.com", "https://brain.acme.com/mcp", false},
		{"https://Brain.ACME.com/", "https://brain.acme.com/mcp", false},
		{"HTTPS://brain.acme.com/mcp", "https://brain.acme.com/mcp", false},
		{"https://acme.com/brain/mcp/", "https://acme.com/brain/mcp", false},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp", false},
		{" http://localhost:8080/mcp ", "http://localhost:8080/mcp", false},
		{"http://brain.acme.com", "", true},
		{"ftp://brain.acme.com", "", true},
		{"https://brain.acme.com/?x=1", "", true},
		{"https://u:p@brain.acme.com", "", true},
		{"", "", true},
		{"https://", "", true},
	}
	for _, tt := range tests {
		got, err := join.MCPURL(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("MCPURL(%q) = %q, %v; want %q, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, join.ErrURL) {
			t.Errorf("MCPURL(%q): %v is not ErrURL", tt.in, err)
		}
	}
}

func TestPlan(t *testing.T) {
	p := &join.Plan{Name: "brainstem", MCPURL: "https://brain.acme.com/mcp"}
	if got, want := join.Quote(p.ClaudeArgs()), "mcp add --transport http --scope user brainstem https://brain.acme.com/mcp"; got != want {
		t.Errorf("claude args:\n got %s\nwant %s", got, want)
	}
	for _, js := range []string{p.CursorJSON(), p.VSCodeJSON()} {
		if strings.Contains(js, "headers") || !strings.Contains(js, p.MCPURL) {
			t.Errorf("OAuth mode snippet carries a header or lacks the URL: %s", js)
		}
	}
	p.Token = "tok en"
	if got, want := join.Quote(p.ClaudeArgs()), "mcp add --transport http --scope user brainstem https://brain.acme.com/mcp --header 'Authorization: Bearer tok en'"; got != want {
		t.Errorf("claude args:\n got %s\nwant %s", got, want)
	}
	for _, js := range []string{p.CursorJSON(), p.VSCodeJSON()} {
		var v map[string]any
		if err := json.Unmarshal([]byte(js), &v); err != nil || !strings.Contains(js, "Bearer tok en") {
			t.Errorf("header mode snippet %s (%v)", js, err)
		}
	}
}

func startDev(t *testing.T, mutate func(*config.Config)) *devenv.Env {
	t.Helper()
	return devenvtest.Start(t, devenv.Config{Gateway: mutate})
}

// browserAs signs in as email with a scripted browser; noBrowser fails the
// test if the sign-in asks for a browser at all.
func browserAs(t *testing.T, email string) signin.Browser {
	return signin.BrowserFunc(func(ctx context.Context, authURL string) error {
		p, err := testbrowser.New().SignIn(ctx, authURL, nil, email, "")
		if err == nil && p.Status != http.StatusOK {
			t.Errorf("the sign-in ended with %d at %s", p.Status, p.URL)
		}
		return err
	})
}

func noBrowser(t *testing.T) signin.Browser {
	return signin.BrowserFunc(func(context.Context, string) error {
		t.Error("a browser was opened although a stored sign-in exists")
		return errors.New("no browser in this test")
	})
}

// fakeClaude is a `claude` executable that records its arguments.
func fakeClaude(t *testing.T) (path string, args func() string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("uses a shell script as the claude CLI")
	}
	dir := t.TempDir()
	rec := filepath.Join(dir, "args")
	path = filepath.Join(dir, "claude")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + rec + "'\necho 'Added HTTP MCP server'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, func() string {
		b, err := os.ReadFile(rec)
		if err != nil {
			return ""
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
}

// TestLoginThenJoin is the developer's path: login in the browser, then
// join (dry run, with Claude Code, without it) on the stored sign-in,
// refreshed when its access token expired; and join in header mode.
func TestLoginThenJoin(t *testing.T) {
	env := startDev(t, nil)
	ctx := context.Background()
	store := &signin.Store{Dir: filepath.Join(t.TempDir(), "signins")}
	var out strings.Builder
	sc := &signin.Client{Store: store, Browser: browserAs(t, "alice@example.com"), Out: &out}
	rec, err := join.Login(ctx, sc, http.DefaultClient, env.MCPURL, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	for _, want := range []string{"Signed in to " + env.MCPURL + " as alice@example.com", "You can reach 3 wings:", "payments", "read, write, curate", store.Path(env.MCPURL), "brainstem token " + env.MCPURL} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("login output lacks %q:\n%s", want, &out)
		}
	}

	// The access token expired: join refreshes it, opens no browser.
	expired := *rec
	expired.ExpiresAt = time.Now().Add(-time.Minute)
	if err := store.Save(&expired); err != nil {
		t.Fatal(err)
	}
	stored := &signin.Client{Store: store, Browser: noBrowser(t)}
	claudeLine := "claude mcp add --transport http --scope user brainstem " + env.MCPURL
	out.Reset()
	if err := join.Run(ctx, join.Options{URL: strings.TrimSuffix(env.MCPURL, "/mcp"), DryRun: true, SignIn: stored, Out: &out}); err != nil {
		t.Fatalf("join --dry-run: %v\n%s", err, &out)
	}
	for _, want := range []string{"✓ metadata", "✓ registration", "✓ sign-in: alice@example.com (stored sign-in", "✓ access: 3 wings",
		"dry run: would run\n  " + claudeLine + "\n", "run /mcp, choose brainstem and authenticate", `"url": "` + env.MCPURL + `"`, "--json-header",
		"brainstem hooks install --url " + env.MCPURL + "\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("join --dry-run output lacks %q:\n%s", want, &out)
		}
	}
	if strings.Contains(out.String(), "Bearer ey") || strings.Contains(out.String(), `"headers"`) {
		t.Errorf("OAuth mode printed a header:\n%s", &out)
	}
	if after, _ := store.Load(env.MCPURL); after.AccessToken == rec.AccessToken {
		t.Error("join used the expired access token without refreshing it")
	}

	// With Claude Code installed: it is run with the URL only.
	claude, args := fakeClaude(t)
	out.Reset()
	if err := join.Run(ctx, join.Options{URL: env.MCPURL, SignIn: stored, Claude: claude, Out: &out}); err != nil {
		t.Fatalf("join: %v\n%s", err, &out)
	}
	if got, want := args(), "mcp add --transport http --scope user brainstem "+env.MCPURL; got != want {
		t.Errorf("claude ran with %q, want %q", got, want)
	}
	if !strings.Contains(out.String(), `registered as "brainstem"`) {
		t.Errorf("join output:\n%s", &out)
	}

	// Without Claude Code: said plainly, with the exact next step.
	t.Setenv("PATH", t.TempDir())
	out.Reset()
	if err := join.Run(ctx, join.Options{URL: env.MCPURL, SignIn: stored, Out: &out}); err != nil {
		t.Fatalf("join: %v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "Claude Code is not installed here") || !strings.Contains(out.String(), "\n  "+claudeLine+"\n") {
		t.Errorf("join without claude:\n%s", &out)
	}

	// Header mode, for clients without OAuth: bob's development token.
	tok, _, err := env.Token("bob@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := join.Run(ctx, join.Options{URL: env.MCPURL, Token: tok, Claude: claude, Out: &out}); err != nil {
		t.Fatalf("join --token: %v\n%s", err, &out)
	}
	if got := args(); !strings.HasSuffix(got, "--header Authorization: Bearer "+tok) {
		t.Errorf("claude ran with %q, want the header", got)
	}
	if !strings.Contains(out.String(), "payments (read)") || !strings.Contains(out.String(), `"Authorization": "Bearer `+tok) {
		t.Errorf("join --token output:\n%s", &out)
	}
}

// TestJoinSignsInWhenNeeded: without a stored sign-in, join runs the
// browser flow before it registers.
func TestJoinSignsInWhenNeeded(t *testing.T) {
	env := startDev(t, nil)
	var out strings.Builder
	sc := &signin.Client{Store: &signin.Store{Dir: t.TempDir()}, Browser: browserAs(t, "carol@example.com"), Out: &out}
	if err := join.Run(context.Background(), join.Options{URL: env.MCPURL, DryRun: true, SignIn: sc, Out: &out}); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "signing in now") || !strings.Contains(out.String(), "✓ sign-in: carol@example.com (signed in now") {
		t.Errorf("join output:\n%s", &out)
	}
}

// TestJoinChecksBeforeRegistering: a broken chain registers nothing.
func TestJoinChecksBeforeRegistering(t *testing.T) {
	env := startDev(t, func(c *config.Config) { c.PublicURL = "http://127.0.0.1:1" })
	claude, args := fakeClaude(t)
	var out strings.Builder
	sc := &signin.Client{Store: &signin.Store{Dir: t.TempDir()}, Browser: noBrowser(t)}
	err := join.Run(context.Background(), join.Options{URL: env.MCPURL, SignIn: sc, Claude: claude, Out: &out})
	if !errors.Is(err, join.ErrCheckFailed) || !errors.Is(err, signin.ErrResourceMismatch) {
		t.Fatalf("join = %v, want ErrCheckFailed for the resource", err)
	}
	if args() != "" {
		t.Errorf("claude was run: %q", args())
	}
	if !strings.Contains(out.String(), "✗ metadata") || !strings.Contains(out.String(), "Nothing was registered") || !strings.Contains(out.String(), "brainstem doctor "+env.MCPURL) {
		t.Errorf("join output:\n%s", &out)
	}

	// Header mode with a refused token registers nothing either.
	good := startDev(t, nil)
	out.Reset()
	err = join.Run(context.Background(), join.Options{URL: good.MCPURL, Token: "not-a-token", Claude: claude, Out: &out})
	var te *join.TokenRefusedError
	if !errors.As(err, &te) || te.Status != http.StatusUnauthorized || te.Code != "invalid_token" {
		t.Fatalf("join --token garbage = %v, want a 401 invalid_token refusal", err)
	}
	if args() != "" {
		t.Errorf("claude was run: %q", args())
	}
}
