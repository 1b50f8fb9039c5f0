package join

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/signin"
)

// MaxWingsAnswerBytes bounds brain_wings' answer.
const MaxWingsAnswerBytes = 1 << 20

// TokenRefusedError: the MCP endpoint refused the bearer token (401/403).
type TokenRefusedError struct {
	Status      int
	Code        string // invalid_token, insufficient_scope, …
	Description string
}

func (e *TokenRefusedError) Error() string {
	s := fmt.Sprintf("the MCP endpoint refused the token (HTTP %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	s += ")"
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// Probe checks a bearer token against the MCP endpoint the way an agent
// uses it: an MCP client (mcp-go's Streamable HTTP client) connected with
// the token, which lists the tools and calls brain_wings. A refusal of the
// token is a *TokenRefusedError.
type Probe struct {
	c   *client.Client
	rec *authRecorder
}

// OpenProbe connects to mcpURL with token: initialize, after which the
// probe's requests follow.
func OpenProbe(ctx context.Context, hc *http.Client, mcpURL, token string) (*Probe, error) {
	rec := &authRecorder{next: cmp.Or(hc.Transport, http.DefaultTransport)}
	h := *hc
	h.Transport = rec
	c, err := client.NewStreamableHttpClient(mcpURL, transport.WithHTTPBasicClient(&h),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	p := &Probe{c: c, rec: rec}
	if err := c.Start(ctx); err != nil {
		return nil, p.wrap(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "brainstem", Version: "cli"}}}); err != nil {
		_ = c.Close()
		return nil, p.wrap(err)
	}
	return p, nil
}

// Close closes the probe's connection.
func (p *Probe) Close() error { return p.c.Close() }

// Tools lists the names of the tools the caller may use, sorted.
func (p *Probe) Tools(ctx context.Context) ([]string, error) {
	res, err := p.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, p.wrap(err)
	}
	names := make([]string, 0, len(res.Tools))
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}

// Wings is brain_wings' answer (toolspec.WingsAnswer).
type Wings toolspec.WingsAnswer

// String renders the wings for a person: "payments (read, write), …".
func (w *Wings) String() string {
	parts := make([]string, 0, len(w.Wings))
	for _, x := range w.Wings {
		parts = append(parts, fmt.Sprintf("%s (%s)", x.Wing, strings.Join(x.Capabilities, ", ")))
	}
	return strings.Join(parts, ", ")
}

// ErrToolFailed: a tool answered with an error.
var ErrToolFailed = errors.New("join: the tool answered an error")

// Wings calls brain_wings.
func (p *Probe) Wings(ctx context.Context) (*Wings, error) {
	res, err := p.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_wings", Arguments: map[string]any{}}})
	if err != nil {
		return nil, p.wrap(err)
	}
	if len(res.Content) != 1 {
		return nil, fmt.Errorf("%w: brain_wings answered %d content items, want 1", ErrToolFailed, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return nil, fmt.Errorf("%w: brain_wings answered %T, want text", ErrToolFailed, res.Content[0])
	}
	if len(text.Text) > MaxWingsAnswerBytes {
		return nil, fmt.Errorf("%w: brain_wings answered %d bytes", ErrToolFailed, len(text.Text))
	}
	if res.IsError {
		return nil, fmt.Errorf("%w: brain_wings: %.500s", ErrToolFailed, text.Text)
	}
	var w Wings
	if err := json.Unmarshal([]byte(text.Text), &w); err != nil {
		return nil, fmt.Errorf("%w: brain_wings' answer is not JSON: %v", ErrToolFailed, err)
	}
	return &w, nil
}

// wrap turns mcp-go's 401/403 errors into a TokenRefusedError carrying the
// challenge's error and description.
func (p *Probe) wrap(err error) error {
	if st, hdr := p.rec.last(); st == http.StatusUnauthorized || st == http.StatusForbidden {
		e := &TokenRefusedError{Status: st}
		if cs, perr := signin.ParseChallenges(hdr...); perr == nil {
			if b, ok := signin.Bearer(cs); ok {
				e.Code, e.Description = b.Params["error"], b.Params["error_description"]
			}
		}
		return e
	}
	return fmt.Errorf("join: %w", err)
}

// authRecorder remembers the last refusal's status and challenge, which
// mcp-go's errors do not carry.
type authRecorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	status int
	hdr    []string
}

func (a *authRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		a.mu.Lock()
		a.status, a.hdr = resp.StatusCode, resp.Header.Values("WWW-Authenticate")
		a.mu.Unlock()
	}
	return resp, err
}

func (a *authRecorder) last() (int, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.hdr
}
