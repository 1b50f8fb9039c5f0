// Package rawmcp is the benchmarks' MCP client: it posts prepared
// tools/call bodies over one keep-alive pool, under either era (2026-07-28
// stateless, or 2025-06-18 on a session it initializes), and checks each
// answer for a result that is not an error. It costs a fraction of mcp-go's
// client (which spends about as much CPU per call as the gateway), so on
// two shared cores the servers' differences show.
package rawmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
)

// ErrAnswer is an answer that is not a tool result, or a tool error.
var ErrAnswer = errors.New("rawmcp: not a successful tool result")

// modernMeta is the _meta every 2026-07-28 request carries.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"rawmcp","version":"0"}}`

// Client calls tools at one MCP URL as one caller.
type Client struct {
	url     string
	hc      *http.Client
	token   string
	session string // the Mcp-Session-Id, for 2025-06-18
	id      atomic.Int64
}

// Pool is a keep-alive pool wide enough for n concurrent callers (the
// default transport keeps two idle connections per host, which would make
// a benchmark measure TCP handshakes).
func Pool(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n}}
}

// New is a client of url with the bearer token over hc; with session set it
// initializes a 2025-06-18 session first.
func New(ctx context.Context, hc *http.Client, url, token string, session bool) (*Client, error) {
	c := &Client{url: url, hc: hc, token: token}
	if !session {
		return c, nil
	}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rawmcp","version":"0"}}}`
	resp, body, err := c.post(ctx, init, nil)
	if err != nil {
		return nil, err
	}
	if c.session = resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != http.StatusOK || c.session == "" {
		return nil, fmt.Errorf("%w: initialize answered %d %s", ErrAnswer, resp.StatusCode, body)
	}
	if _, _, err := c.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// Call calls tool with args (a JSON object) and returns the answer's bytes.
func (c *Client) Call(ctx context.Context, tool string, args []byte) ([]byte, error) {
	id := strconv.FormatInt(c.id.Add(1), 10)
	meta, h := "", http.Header{}
	if c.session == "" {
		meta = "," + modernMeta
		h.Set("Mcp-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", tool)
	}
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(args) + meta + `}}`
	resp, answer, err := c.post(ctx, body, h)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"result":{`)) || bytes.Contains(answer, []byte(`"isError":true`)) {
		return answer, fmt.Errorf("%w: %s answered %d %.300s", ErrAnswer, tool, resp.StatusCode, answer)
	}
	return answer, nil
}

func (c *Client) post(ctx context.Context, body string, h http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp, answer, err
}
