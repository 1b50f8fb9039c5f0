package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/gateway"
	"github.com/brainstem/brainstem/internal/devenv"
	"github.com/brainstem/brainstem/join"
)

const devUsage = `Usage: brainstem dev [flags]
       brainstem dev token --email E [--groups a,b] [--idp URL]
       brainstem dev idp [--port N] [--host H] [--token-ttl D]

Runs the development identity provider, one shard per wing and a gateway on
loopback over a fresh copy of the sample brain, then prints the MCP URL, a
bearer token and the lines that connect Claude Code, Cursor, VS Code and the
MCP Inspector. Ctrl-C stops everything. 'dev idp' runs only the development
identity provider (with a new signing key each start), for a gateway and
shards run as separate processes.

Flags:
`

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "token" {
		return runDevToken(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "idp" {
		return runDevIdP(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("dev", stderr, devUsage)
	brain := fs.String("brain", "", "serve this existing brain directory in place (default: a copy of the sample brain)")
	data := fs.String("data", "", "keep state (brain copy, shard keys, policies, logs) in this directory between runs (default: a temporary directory removed on exit)")
	host := fs.String("host", "127.0.0.1", "loopback address to listen on")
	port := fs.Int("port", 8080, "gateway port (the MCP URL)")
	adminPort := fs.Int("admin-port", 9090, "gateway admin port (/metrics, /healthz, /readyz)")
	idpPort := fs.Int("idp-port", 5556, "development identity provider port")
	shardPort := fs.Int("shard-port", 7401, "first shard UDP port; wing i uses shard-port+i")
	user := fs.String("email", "alice@example.com", "the demo user whose token is printed")
	rate := fs.Float64("calls-per-second", 0, "per-user rate limit of the gateway (0: the gateway default); raise it to load-test with `brainstem load`")
	logLevel := fs.String("log-level", "info", "log level of the log file: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logDir := *data
	if logDir == "" {
		d, err := os.MkdirTemp("", "brainstem-dev-logs-")
		if err != nil {
			return err
		}
		logDir = d
	} else if err := os.MkdirAll(logDir, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(logDir, "brainstem.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	logger, err := newLogger(logFile, "json", *logLevel)
	if err != nil {
		return err
	}

	fmt.Fprintln(stdout, "Starting Brainstem dev: identity provider, shards and gateway on", *host)
	var mu sync.Mutex
	lastPct := map[string]int{}
	start := time.Now()
	env, err := devenv.Start(ctx, devenv.Config{
		Brain: *brain, Data: *data, Host: *host,
		GatewayPort: *port, AdminPort: *adminPort, IdPPort: *idpPort, ShardBasePort: *shardPort,
		Version: version, Logger: logger, AuditLog: logFile,
		Gateway: func(c *gateway.Config) {
			if *rate > 0 {
				c.Limits.CallsPerSecond, c.Limits.Burst = *rate, int(*rate)*2
			}
		},
		Progress: func(wing string, done, total int) {
			mu.Lock()
			defer mu.Unlock()
			pct := 100
			if total > 0 {
				pct = done * 100 / total
			}
			if pct/25 != lastPct[wing]/25 || done == total {
				lastPct[wing] = pct
				fmt.Fprintf(stdout, "  indexing %-12s %5d/%d notes\n", wing, done, total)
			}
		},
	})
	if err != nil {
		return err
	}
	defer env.Close()
	tok, exp, err := env.Token(*user, nil)
	if err != nil {
		return err
	}
	printDevBanner(stdout, env, *user, tok, exp, time.Since(start), logPath)
	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "\nStopping…")
	case err := <-env.Err():
		return err
	}
	return env.Close()
}

func printDevBanner(w io.Writer, env *devenv.Env, user, tok string, exp time.Time, took time.Duration, logPath string) {
	var notes int64
	for _, n := range env.Notes {
		notes += n
	}
	idp := env.IssuerURL
	header := "Authorization: Bearer " + tok
	plan := join.Plan{Name: "brainstem", MCPURL: env.MCPURL}
	fmt.Fprintf(w, `
Brainstem dev is ready: %d wings (%s), %d notes, in %s.

  MCP URL:  %s
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

Identity provider: %s   Metrics and probes: %s/metrics  %s/readyz
Brain:  %s
Logs:   %s
Press Ctrl-C to stop.
`, len(env.Wings), strings.Join(env.Wings, ", "), notes, took.Round(time.Millisecond),
		env.MCPURL, join.Quote(plan.ClaudeArgs()), indent(plan.CursorJSON()), indent(plan.VSCodeJSON()),
		user, exp.UTC().Format(time.RFC3339), tok, env.MCPURL, header, env.MCPURL, header, idp,
		idp, env.AdminURL, env.AdminURL, env.BrainDir, logPath)
}

// indent indents the lines after the first of a JSON snippet for the banner.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

func runDevToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev token", stderr, "Usage: brainstem dev token --email E [--groups a,b] [--idp URL]\n\nPrints a token from a running `brainstem dev`.\n\nFlags:\n")
	email := fs.String("email", "", "the user's email (required)")
	groups := fs.String("groups", "", "comma-separated groups, e.g. people-team")
	idp := fs.String("idp", "http://127.0.0.1:5556", "the identity provider URL `brainstem dev` printed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *email == "" {
		return usageError{"dev token: --email is required"}
	}
	form := url.Values{"email": {*email}, "groups": {*groups}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*idp, "/")+"/dev/token", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("dev token: is `brainstem dev` running? %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("dev token: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("dev token: %w", err)
	}
	fmt.Fprintln(stdout, out.Token)
	fmt.Fprintln(stderr, "expires", out.ExpiresAt)
	return nil
}

func runDevIdP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev idp", stderr, "Usage: brainstem dev idp [--port N] [--host H] [--token-ttl D]\n\n"+
		"Runs the development identity provider alone on loopback until stopped: discovery, JWKS,\n"+
		"the login form, and POST /dev/token (what 'brainstem dev token' calls). Every start makes a\n"+
		"new signing key. It prints its issuer URL.\n\nFlags:\n")
	host := fs.String("host", "127.0.0.1", "loopback address to listen on")
	port := fs.Int("port", 5556, "port to listen on (0: any free port)")
	ttl := fs.Duration("token-ttl", 8*time.Hour, "lifetime of the tokens it issues")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLogger(stderr, "json", *logLevel)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("dev idp: %w (choose another --port)", err)
	}
	issuer, done, err := devenv.ServeIdP(ctx, ln, *ttl, logger)
	if err != nil {
		ln.Close()
		return err
	}
	fmt.Fprintln(stdout, "identity provider:", issuer)
	return <-done
}
