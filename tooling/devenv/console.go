package devenv

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/join"
)

// Run is `brainstem dev`: it starts the environment, printing each wing's
// indexing progress and then the banner (PrintBanner, with a token for
// user) on out, and runs until ctx ends (a clean stop) or a server fails.
func Run(ctx context.Context, cfg Config, out io.Writer, user, logPath string) error {
	if cfg.Progress == nil {
		cfg.Progress = PrintProgress(out)
	}
	fmt.Fprintln(out, "Starting Brainstem dev: identity provider, shards and gateway on", cmp.Or(cfg.Host, "127.0.0.1"))
	start := time.Now()
	env, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.PrintBanner(out, user, time.Since(start), logPath); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nStopping…")
	case err := <-env.Err():
		return err
	}
	return env.Close()
}

// RunIdP is `brainstem dev idp`: it serves the development identity
// provider alone on addr (a loopback address) until ctx ends, printing its
// issuer URL on out (see ServeIdP).
func RunIdP(ctx context.Context, addr string, ttl time.Duration, logger *slog.Logger, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dev idp: %w (choose another --port)", err)
	}
	issuer, done, err := ServeIdP(ctx, ln, ttl, logger)
	if err != nil {
		ln.Close()
		return err
	}
	fmt.Fprintln(out, "identity provider:", issuer)
	return <-done
}

// OpenLog opens the log file of `brainstem dev`, brainstem.log in data (made
// 0700 if missing), or in a new temporary directory when data is "".
func OpenLog(data string) (*os.File, error) {
	dir := data
	if dir == "" {
		d, err := os.MkdirTemp("", "brainstem-dev-logs-")
		if err != nil {
			return nil, fmt.Errorf("devenv: log directory: %w", err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("devenv: log directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "brainstem.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	return f, nil
}

// PrintProgress returns a Config.Progress that prints each wing's indexing
// to w at every quarter and at the end.
func PrintProgress(w io.Writer) func(wing string, done, total int) {
	var mu sync.Mutex
	last := map[string]int{}
	return func(wing string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		pct := 100
		if total > 0 {
			pct = done * 100 / total
		}
		if pct/25 != last[wing]/25 || done == total {
			last[wing] = pct
			fmt.Fprintf(w, "  indexing %-12s %5d/%d notes\n", wing, done, total)
		}
	}
}

// PrintBanner prints what `brainstem dev` shows once it is ready: the MCP
// URL, how to sign in, the Claude Code, Cursor and VS Code settings (join's
// snippets, the ones `brainstem join` prints), a ready token for user for
// clients without OAuth, and where the brain and the logs are.
func (e *Env) PrintBanner(w io.Writer, user string, took time.Duration, logPath string) error {
	tok, exp, err := e.Token(user, nil)
	if err != nil {
		return err
	}
	var notes int64
	for _, n := range e.Notes {
		notes += n
	}
	header := "Authorization: Bearer " + tok
	gw := strings.TrimSuffix(e.MCPURL, "/mcp")
	plan := join.Plan{Name: "brainstem", MCPURL: e.MCPURL}
	indent := func(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
	_, err = fmt.Fprintf(w, `
Brainstem dev is ready: %d wings (%s), %d notes, in %s.

  MCP URL:  %s
  Console:  %s  (curators: sign in in a browser; alice@example.com curates every wing)
  Sign-in:  any MCP client with OAuth signs in with the URL alone: the gateway's authorization
            server sends the browser to the development IdP, where any email is accepted
            (bob@example.com reads payments only; carol@example.com with group people-team
            curates people-ops).

Connect Claude Code (it opens the browser to sign in; run /mcp, choose brainstem):
  claude %s

Cursor (.cursor/mcp.json):
    %s

VS Code (.vscode/mcp.json):
    %s

For clients without OAuth, a ready token (user %s, expires %s):
  Token:    %s
  claude mcp add --transport http brainstem %s --header "%s"
  npx @modelcontextprotocol/inspector --cli %s --transport http --method tools/list --header "%s"
  Other users: go run ./cmd/brainstem dev token --email bob@example.com --idp %s

Enterprise-managed authorization (ID-JAG, no consent screen): the IdP vouches for its client
%s, which exchanges the assertion at the gateway (docs/sign-in.md):
  curl -s %s/dev/id-jag -d email=alice@example.com -d audience=%s -d resource=%s
  curl -s %s/token -d grant_type=%s -d client_id=%s -d assertion=<id_jag>

Identity provider: %s   Metrics and probes: %s/metrics  %s/readyz
Brain:  %s
%sLogs:   %s
Press Ctrl-C to stop.
`, len(e.Wings), strings.Join(e.Wings, ", "), notes, took.Round(time.Millisecond),
		e.MCPURL, e.ConsoleURL, join.Quote(plan.ClaudeArgs()), indent(plan.CursorJSON()), indent(plan.VSCodeJSON()),
		user, exp.UTC().Format(time.RFC3339), tok, e.MCPURL, header, e.MCPURL, header, e.IssuerURL,
		devidp.DefaultAssertionClientID, e.IssuerURL, gw, e.MCPURL, gw, oauth.GrantTypeJWTBearer, devidp.DefaultAssertionClientID,
		e.IssuerURL, e.AdminURL, e.AdminURL, e.BrainDir, e.remoteLine(), logPath)
	return err
}

// remoteLine is the banner's line about Config.GitRemote ("" without).
func (e *Env) remoteLine() string {
	if e.remote == nil {
		return ""
	}
	return fmt.Sprintf("Git:    every wing syncs with %s (branch %s): pushes within %s, pulls every %s.\n"+
		"        git clone it, edit a note under wiki/<wing>/, commit and push: brain_get and search have it.\n",
		e.remote.Redacted(), e.remote.WithDefaults().Branch, DevPushDelay, DevPullInterval)
}

// maxTokenAnswer bounds the identity provider's answer to FetchToken.
const maxTokenAnswer = 1 << 20

// FetchToken asks the identity provider of a running `brainstem dev` (its
// POST /dev/token) for a token for email and groups (comma-separated).
func FetchToken(ctx context.Context, idpURL, email, groups string) (token, expiresAt string, err error) {
	form := url.Values{"email": {email}, "groups": {groups}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(idpURL, "/")+"/dev/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", "", fmt.Errorf("dev token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("dev token: is `brainstem dev` running? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return "", "", fmt.Errorf("dev token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("dev token: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return "", "", fmt.Errorf("dev token: %w", err)
	}
	return out.Token, out.ExpiresAt, nil
}
