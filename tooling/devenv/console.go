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
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/idjag"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
	"github.com/brainstem/brainstem/join"
)

// Run is `brainstem dev`: it starts the environment, printing each wing's
// indexing progress, what it does next (Config.Status) and then the banner
// (PrintBanner, with a token for user) on out, and runs until ctx ends (a
// clean stop) or a server fails.
func Run(ctx context.Context, cfg Config, out io.Writer, user, logPath string) error {
	if cfg.Progress == nil {
		cfg.Progress = PrintProgress(out)
	}
	if cfg.Status == nil {
		cfg.Status = func(msg string) { fmt.Fprintln(out, "  "+msg) }
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
// clients without OAuth, the demo service account, offboarding, purge and
// where the brain and the logs are.
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
            (bob@example.com writes platform and reads payments; carol@example.com with group
            people-team curates people-ops and reads platform).

Connect Claude Code (it opens the browser to sign in; run /mcp, choose brainstem):
  claude %s

Cursor (.cursor/mcp.json):
    %s

VS Code (.vscode/mcp.json):
    %s

For clients without OAuth, a ready token (user %s, expires %s):
  Token:    %s
  claude mcp add --transport http brainstem %s --header "%s"
  npx @modelcontextprotocol/inspector@2.12.0 --cli %s --transport http --method tools/list --header "%s"
  Other users: go run ./cmd/brainstem dev token --email bob@example.com --idp %s

Enterprise-managed authorization (ID-JAG, no consent screen): the IdP vouches for its client
%s, which exchanges the assertion at the gateway (docs/sign-in.md):
  curl -s %s/dev/id-jag -d email=alice@example.com -d audience=%s -d resource=%s
  curl -s %s/token -d grant_type=%s -d client_id=%s -d assertion=<id_jag>
%s
Identity provider: %s  (discovery: %s/.well-known/openid-configuration)
Metrics and probes: %s/metrics  %s/readyz
Brain:  %s
%sLogs:   %s
Press Ctrl-C to stop.
`, len(e.Wings), strings.Join(e.Wings, ", "), notes, took.Round(time.Millisecond),
		e.MCPURL, e.ConsoleURL, join.Quote(plan.ClaudeArgs()), indent(plan.CursorJSON()), indent(plan.VSCodeJSON()),
		user, exp.UTC().Format(time.RFC3339), tok, e.MCPURL, header, e.MCPURL, header, e.IssuerURL,
		devidp.DefaultAssertionClientID, e.IssuerURL, gw, e.MCPURL, gw, idjag.GrantTypeJWTBearer, devidp.DefaultAssertionClientID,
		e.tryLines(), e.IssuerURL, e.IssuerURL, e.AdminURL, e.AdminURL, e.BrainDir, e.remoteLine(), logPath)
	return err
}

// tryLines are the banner's lines for what else can be tried: the demo
// service account, offboarding with the operator token, the tokens'
// lifetimes (--token-ttl) and purge (--allow-purge).
func (e *Env) tryLines() string {
	gw := strings.TrimSuffix(e.MCPURL, "/mcp")
	secret, admin := join.Quote([]string{e.ServiceAccountSecretFile}), join.Quote([]string{e.AdminTokenFile})
	purge := "Purge:  off: brain_purge is refused; restart with --allow-purge to try it.\n"
	if e.cfg.AllowPurge {
		purge = "Purge:  on (--allow-purge): a curator (alice@example.com) removes a note's content from history\n" +
			"        for good: brain_purge {\"id\":\"<wing>/<hall>/<slug>\",\"reason\":\"leaked secret\"} (docs/history.md)\n"
	}
	return fmt.Sprintf(`
A service account, as a CI job signs in (client_credentials; client:%[1]s writes platform):
  curl -s -u "%[1]s:$(cat %[2]s)" -d grant_type=%[3]s %[4]s%[5]s
  (its access_token is a bearer token for %[6]s)

Offboarding with the gateway's operator token (signins.admin_token_file):
  go run ./cmd/brainstem signins list --admin %[7]s --token-file %[8]s
  go run ./cmd/brainstem signins end --admin %[7]s --token-file %[8]s --email bob@example.com

Tokens: demo tokens live %[9]s, the gateway's access tokens %[10]s, service accounts' %[11]s (--token-ttl).
%[12]s`, ServiceAccountID, secret, machine.GrantTypeClientCredentials, gw, oauth.PathToken, e.MCPURL,
		e.AdminURL, admin, human(e.cfg.TokenTTL), human(e.AccessTokenTTL), human(e.ServiceAccountTokenTTL), purge)
}

// human is a duration as a person writes it: 8h, 10m, 1m30s.
func human(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
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
