// Package join connects a developer's MCP clients to a Brainstem gateway: it
// checks the URL serves an MCP endpoint with RFC 9728 metadata and produces
// the Claude Code command and the Cursor / VS Code settings for it.
package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Options tune the connection.
type Options struct {
	Name       string       // the MCP server name in the clients; default "brainstem"
	Token      string       // optional bearer token (development)
	HTTPClient *http.Client // nil → a client with a 10 s timeout
}

// Plan is what joining registers.
type Plan struct {
	Name                 string
	MCPURL               string
	AuthorizationServers []string
	Token                string
}

// ErrNotBrainstem means the URL does not serve the metadata of an MCP endpoint.
var ErrNotBrainstem = errors.New("join: not a Brainstem MCP endpoint")

// Discover normalises rawURL (a bare host, a base URL or the /mcp URL) and
// fetches its protected-resource metadata to make sure it is an MCP endpoint.
func Discover(ctx context.Context, rawURL string, opt Options) (*Plan, error) {
	if opt.Name == "" {
		opt.Name = "brainstem"
	}
	hc := opt.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	mcpURL, err := MCPURL(rawURL)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(mcpURL)
	metaURL := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + u.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metaURL, nil)
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("join: cannot reach %s: %w", metaURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("join: reading %s: %w", metaURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %s", ErrNotBrainstem, metaURL, resp.Status)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, fmt.Errorf("%w: %s is not JSON metadata: %v", ErrNotBrainstem, metaURL, err)
	}
	if meta.Resource != mcpURL {
		return nil, fmt.Errorf("%w: %s describes resource %q, not %q", ErrNotBrainstem, metaURL, meta.Resource, mcpURL)
	}
	return &Plan{Name: opt.Name, MCPURL: mcpURL, AuthorizationServers: meta.AuthorizationServers, Token: opt.Token}, nil
}

// MCPURL turns "brain.acme.com", "https://brain.acme.com" or
// "https://brain.acme.com/mcp" into "https://brain.acme.com/mcp".
func MCPURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("join: empty URL")
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("join: %q is not a URL like https://brain.acme.com", raw)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", fmt.Errorf("join: %q: want an https URL", raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return "", fmt.Errorf("join: %q: plain http is only for a local `brainstem dev`; use https", raw)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(p, "/mcp") {
		p += "/mcp"
	}
	return u.Scheme + "://" + u.Host + p, nil
}

func isLoopback(host string) bool {
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1"
}

// ClaudeArgs are the arguments of `claude mcp add` for this plan.
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
