// Package join connects a developer's machine to a Brainstem gateway:
// `brainstem login` (sign in and show the wings the user reaches) and
// `brainstem join` (check the whole sign-in chain, then register the MCP
// server with Claude Code and print the Cursor and VS Code settings). The
// OAuth steps are package signin's; this package adds the Probe (an MCP
// client, mcp-go's) that proves a token works, and the clients' settings.
package join

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/loopback"
	"github.com/brainstem/brainstem/signin"
)

// ErrURL: the URL given is not one of a Brainstem gateway.
var ErrURL = errors.New("join: not a gateway URL")

// MCPURL turns "brain.acme.com", "https://brain.acme.com" or
// "https://brain.acme.com/mcp" into "https://brain.acme.com/mcp". The
// scheme and host are lower-cased; plain http is only for loopback hosts.
func MCPURL(raw string) (string, error) {
	u, err := ParseMCPURL(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme == "http" && !loopback.Is(u.Hostname()) {
		return "", fmt.Errorf("%w: %q: plain http is only for a local `brainstem dev`; use https", ErrURL, raw)
	}
	return u.String(), nil
}

// ParseMCPURL is MCPURL without the https rule, for `brainstem doctor`,
// which reports plain http as a failed step instead.
func ParseMCPURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fmt.Errorf("%w: empty URL", ErrURL)
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: %q is not a URL like https://brain.acme.com", ErrURL, raw)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("%w: %q: want an https URL", ErrURL, raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %q: a gateway URL has no user info, query or fragment", ErrURL, raw)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(p, "/mcp") {
		p += "/mcp"
	}
	return &url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host), Path: p}, nil
}

// Plan is what joining registers.
type Plan struct {
	Name   string
	MCPURL string
	Token  string // header mode: clients without OAuth send it
}

// ClaudeArgs are the arguments of `claude mcp add` for this plan: the URL
// only (Claude Code signs in by itself through the gateway), or with the
// token as a header in header mode.
func (p *Plan) ClaudeArgs() []string {
	args := []string{"mcp", "add", "--transport", "http", "--scope", "user", p.Name, p.MCPURL}
	if p.Token != "" {
		args = append(args, "--header", "Authorization: Bearer "+p.Token)
	}
	return args
}

func (p *Plan) server(withType bool) map[string]any {
	s := map[string]any{"url": p.MCPURL}
	if withType {
		s["type"] = "http"
	}
	if p.Token != "" {
		s["headers"] = map[string]string{"Authorization": "Bearer " + p.Token}
	}
	return s
}

// CursorJSON is the .cursor/mcp.json snippet.
func (p *Plan) CursorJSON() string {
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{p.Name: p.server(false)}}, "", "  ")
	return string(b)
}

// VSCodeJSON is the .vscode/mcp.json snippet.
func (p *Plan) VSCodeJSON() string {
	b, _ := json.MarshalIndent(map[string]any{"servers": map[string]any{p.Name: p.server(true)}}, "", "  ")
	return string(b)
}

// Quote renders args as a shell command line.
func Quote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$`\\!*?;&|<>(){}[]#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// Login signs in to mcpURL through sc (the browser flow, or the device
// flow when sc.Device is set), then calls brain_wings with the new token
// and prints who is signed in and the wings they reach.
func Login(ctx context.Context, sc *signin.Client, hc *http.Client, mcpURL string, out io.Writer) (*signin.Record, error) {
	rec, err := sc.Login(ctx, mcpURL)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\nSigned in to %s as %s.\n", mcpURL, who(rec))
	w, err := wingsWith(ctx, hc, mcpURL, rec.AccessToken)
	if err != nil {
		return rec, fmt.Errorf("signed in, but the MCP endpoint does not answer as expected: %w", err)
	}
	printWings(out, w)
	fmt.Fprintf(out, "The sign-in is kept in %s.\n`brainstem token %s` prints a fresh access token (this one is valid until %s).\n",
		sc.Store.Path(mcpURL), mcpURL, rec.ExpiresAt.Local().Format(time.RFC3339))
	return rec, nil
}

func who(rec *signin.Record) string {
	return cmp.Or(rec.Email, "you (the token names no email)")
}

func wingsWith(ctx context.Context, hc *http.Client, mcpURL, token string) (*Wings, error) {
	p, err := OpenProbe(ctx, hc, mcpURL, token)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Wings(ctx)
}

func printWings(out io.Writer, w *Wings) {
	if len(w.Wings) == 0 {
		fmt.Fprintln(out, "No wing admits you yet: ask the curators of the wing you need to add you to its policy.")
	} else {
		fmt.Fprintf(out, "You can reach %s:\n", plural(len(w.Wings), "wing"))
		for _, x := range w.Wings {
			fmt.Fprintf(out, "  %-16s %s\n", x.Wing, strings.Join(x.Capabilities, ", "))
		}
	}
	for _, u := range w.Unavailable {
		fmt.Fprintf(out, "  %-16s unavailable right now (%s: %s)\n", u.Wing, u.Code, u.Error)
	}
}

// Options configure Run.
type Options struct {
	URL    string // as the user typed it
	Name   string // the MCP server's name in the clients; default "brainstem"
	Token  string // header mode, for clients without OAuth: send this bearer token
	DryRun bool   // check everything, sign in if needed, but run no `claude mcp add`
	// SignIn signs in when there is no usable stored sign-in (required
	// unless Token is set).
	SignIn *signin.Client
	// HTTP calls the gateway; nil means a client with a 30 s timeout.
	HTTP *http.Client
	// Claude is the claude CLI; "" means `claude` looked up on $PATH.
	Claude string
	// Out receives the report; Err the claude CLI's error output.
	Out, Err io.Writer
}

// ErrCheckFailed: a step of the chain failed, so nothing was registered.
var ErrCheckFailed = errors.New("join: a check failed; nothing was registered")

// Run checks the whole chain before it registers anything — metadata,
// registration, sign-in (a stored one, or the browser flow), and a call
// with the token — then registers the server with Claude Code when it is
// installed and prints the Cursor and VS Code settings.
func Run(ctx context.Context, opt Options) error {
	opt.Name = cmp.Or(opt.Name, "brainstem")
	opt.Out = cmp.Or(opt.Out, io.Discard)
	opt.Err = cmp.Or(opt.Err, io.Discard)
	hc := cmp.Or(opt.HTTP, &http.Client{Timeout: 30 * time.Second})
	mcpURL, err := MCPURL(opt.URL)
	if err != nil {
		return err
	}
	out := opt.Out
	fmt.Fprintf(out, "Checking %s before registering anything:\n", mcpURL)
	fail := func(step string, err error) error {
		fmt.Fprintf(out, "  ✗ %s: %v\n\nNothing was registered. `brainstem doctor %s` shows which step fails and how to fix it.\n", step, err, mcpURL)
		return fmt.Errorf("%w: %s: %w", ErrCheckFailed, step, err)
	}
	token := opt.Token
	if token == "" {
		if opt.SignIn == nil {
			return errors.New("join: no sign-in client")
		}
		var step string
		if token, step, err = checkSignIn(ctx, opt, hc, mcpURL); err != nil {
			return fail(step, err)
		}
	} else {
		metaURL, err := signin.ProtectedResourceMetadataURL(mcpURL)
		if err == nil {
			_, err = signin.FetchResourceMetadata(ctx, hc, metaURL, mcpURL)
		}
		if err != nil {
			return fail("metadata", err)
		}
		fmt.Fprintln(out, "  ✓ metadata: a Brainstem MCP endpoint")
	}
	w, err := wingsWith(ctx, hc, mcpURL, token)
	if err != nil {
		return fail("access", err)
	}
	if len(w.Wings) == 0 {
		fmt.Fprintln(out, "  ✓ access: signed in, but no wing admits you yet (ask the curators of the wing you need)")
	} else {
		fmt.Fprintf(out, "  ✓ access: %s: %s\n", plural(len(w.Wings), "wing"), w)
	}
	return register(ctx, opt, mcpURL)
}

// checkSignIn checks the gateway's metadata and registration, then signs
// in (a stored sign-in, or the browser flow) and returns the access token,
// or the step that failed and why.
func checkSignIn(ctx context.Context, opt Options, hc *http.Client, mcpURL string) (token, step string, err error) {
	out := opt.Out
	d, err := signin.Discover(ctx, hc, mcpURL)
	if err != nil {
		return "", "metadata", err
	}
	fmt.Fprintf(out, "  ✓ metadata: a Brainstem MCP endpoint; sign-in through %s\n", d.Server.Issuer)
	if _, err := signin.Register(ctx, hc, d.Server.RegistrationEndpoint, "Brainstem CLI (brainstem join check)", []string{signin.RegisteredRedirectURI}); err != nil {
		return "", "registration", err
	}
	fmt.Fprintln(out, "  ✓ registration: MCP clients can register themselves")
	rec, err := opt.SignIn.Token(ctx, mcpURL)
	how := "stored sign-in"
	if errors.Is(err, signin.ErrNotSignedIn) || errors.Is(err, signin.ErrSignInEnded) {
		fmt.Fprintln(out, "  … sign-in: not signed in yet; signing in now")
		rec, err = opt.SignIn.Login(ctx, mcpURL)
		how = "signed in now"
	}
	if err != nil {
		return "", "sign-in", err
	}
	if err := opt.SignIn.Accepted(ctx, mcpURL, rec.AccessToken); err != nil {
		return "", "sign-in", err
	}
	fmt.Fprintf(out, "  ✓ sign-in: %s (%s, kept in %s)\n", who(rec), how, opt.SignIn.Store.Path(mcpURL))
	return rec.AccessToken, "", nil
}

// register registers the server with Claude Code (or says how to) and
// prints the Cursor and VS Code settings.
func register(ctx context.Context, opt Options, mcpURL string) error {
	out := opt.Out
	plan := &Plan{Name: opt.Name, MCPURL: mcpURL, Token: opt.Token}
	line := "claude " + Quote(plan.ClaudeArgs())
	fmt.Fprintln(out, "\nClaude Code:")
	claude, lookErr := opt.Claude, error(nil)
	if claude == "" {
		claude, lookErr = exec.LookPath("claude")
	}
	switch {
	case opt.DryRun:
		fmt.Fprintf(out, "  dry run: would run\n  %s\n", line)
	case lookErr != nil:
		fmt.Fprintf(out, "  Claude Code is not installed here (no `claude` on $PATH). After installing it\n  (npm install -g @anthropic-ai/claude-code), run:\n  %s\n", line)
	default:
		cmd := exec.CommandContext(ctx, claude, plan.ClaudeArgs()...)
		cmd.Stdout, cmd.Stderr = out, opt.Err
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("join: %s failed: %w; if a server named %q exists already, remove it with `claude mcp remove --scope user %s` and run join again",
				line, err, opt.Name, opt.Name)
		}
		fmt.Fprintf(out, "  registered as %q (user scope): %s\n", opt.Name, line)
	}
	if opt.Token == "" {
		fmt.Fprintf(out, "  In Claude Code, run /mcp, choose %s and authenticate: it signs in through the gateway by itself.\n", opt.Name)
		fmt.Fprintf(out, "  Next, the hooks (a brief at each session start, the notes that match a prompt, a capture before it stops):\n"+
			"  brainstem hooks install --url %s\n  (the Brainstem plugin carries the same hooks: use one or the other; docs/agents.md)\n", mcpURL)
	}
	fmt.Fprintf(out, "\nCursor (~/.cursor/mcp.json):\n%s\n\nVS Code (.vscode/mcp.json):\n%s\n", plan.CursorJSON(), plan.VSCodeJSON())
	if opt.Token == "" {
		fmt.Fprintf(out, "\nClients without OAuth sign-in can send a header instead: `brainstem token %s --json-header`\nprints {\"Authorization\":\"Bearer …\"} (Claude Code's headersHelper runs such a command).\n", mcpURL)
	}
	return nil
}

// plural renders "1 wing", "3 wings".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// PrintToken prints a fresh access token for mcpURL from the sign-in sc
// keeps (refreshed when it is about to expire): the token alone, or with
// jsonHeader {"Authorization":"Bearer …"}, the output Claude Code's
// headersHelper expects (`brainstem token`).
func PrintToken(ctx context.Context, sc *signin.Client, mcpURL string, jsonHeader bool, out io.Writer) error {
	rec, err := sc.Token(ctx, mcpURL)
	switch {
	case errors.Is(err, signin.ErrNotSignedIn):
		return fmt.Errorf("not signed in to %s: run `brainstem login %s` first", mcpURL, mcpURL)
	case errors.Is(err, signin.ErrSignInEnded):
		return fmt.Errorf("%w; run `brainstem login %s` to sign in again", err, mcpURL)
	case err != nil:
		return err
	}
	if err := sc.Accepted(ctx, mcpURL, rec.AccessToken); err != nil {
		return err
	}
	if !jsonHeader {
		_, err = fmt.Fprintln(out, rec.AccessToken)
		return err
	}
	b, err := json.Marshal(map[string]string{"Authorization": "Bearer " + rec.AccessToken})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}
