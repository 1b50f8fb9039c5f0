package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// The MCP revision the hooks speak: stateless, so that each tool call is
// one HTTP request with no initialize or session before it, which a
// process that lives for one hook needs.
const protocolVersion = "2026-07-28"

// maxAnswerBytes bounds an answer of the gateway.
const maxAnswerBytes = 4 << 20

// Errors of a gateway call.
var (
	// errRefused: the gateway refused the token (401 or 403).
	errRefused = errors.New("hooks: the gateway refused the sign-in")
	// errGateway: no usable answer (unreachable, an HTTP error, a
	// JSON-RPC error, an answer that does not decode).
	errGateway = errors.New("hooks: no usable answer from the gateway")
	// errTool: the tool answered with a tool error.
	errTool = errors.New("hooks: the tool answered an error")
)

// The tools and prompt the hooks use; brain_query is search.Tool.
const (
	toolWings      = "brain_wings"
	toolWrite      = "brain_write"
	toolSessionLog = "session_log"
	promptCapture  = "capture_learnings"
)

// gatewayClient calls one gateway's MCP endpoint with one bearer token.
type gatewayClient struct {
	url, token string
	hc         *http.Client
}

// rpcAnswer is a JSON-RPC answer.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// callTool calls a tool with args (a value that encodes as a JSON object)
// and returns its text content; a tool error is errTool with the text.
func (c *gatewayClient) callTool(ctx context.Context, tool string, args any) (string, error) {
	raw, err := c.request(ctx, "tools/call", tool, map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
		return "", fmt.Errorf("%w: %s answered no single text content", errGateway, tool)
	}
	if res.IsError {
		return res.Content[0].Text, fmt.Errorf("%w: %s", errTool, tool)
	}
	return res.Content[0].Text, nil
}

// getPrompt gets a prompt and returns the text of its messages, joined by
// blank lines.
func (c *gatewayClient) getPrompt(ctx context.Context, name string, args map[string]string) (string, error) {
	raw, err := c.request(ctx, "prompts/get", name, map[string]any{"name": name, "arguments": args})
	if err != nil {
		return "", err
	}
	var res struct {
		Messages []struct {
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("%w: prompt %s does not decode", errGateway, name)
	}
	var parts []string
	for _, m := range res.Messages {
		if m.Content.Type == "text" && m.Content.Text != "" {
			parts = append(parts, m.Content.Text)
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: prompt %s has no text", errGateway, name)
	}
	return strings.Join(parts, "\n\n"), nil
}

// request sends one stateless JSON-RPC request (method, with name in the
// Mcp-Name header) and returns its result.
func (c *gatewayClient) request(ctx context.Context, method, name string, params map[string]any) (json.RawMessage, error) {
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": protocolVersion, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errGateway, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errGateway, err)
	}
	h := req.Header
	h.Set("Authorization", "Bearer "+c.token)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", protocolVersion)
	h.Set("Mcp-Method", method)
	h.Set("Mcp-Name", name)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errGateway, scrub(err, c.token))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w (HTTP %d)", errRefused, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: HTTP %d", errGateway, resp.StatusCode)
	}
	b, err := readAnswer(resp)
	if err != nil {
		return nil, err
	}
	var a rpcAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%w: the answer is not JSON-RPC", errGateway)
	}
	if a.Error != nil || a.Result == nil {
		return nil, fmt.Errorf("%w: %s %s answered no result", errGateway, method, name)
	}
	return a.Result, nil
}

// readAnswer reads the JSON-RPC message of an answer: the body itself, or
// the first data event of an event stream.
func readAnswer(resp *http.Response) ([]byte, error) {
	r := io.LimitReader(resp.Body, maxAnswerBytes+1)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		b, err := io.ReadAll(r)
		if err != nil || len(b) > maxAnswerBytes {
			return nil, fmt.Errorf("%w: reading the answer failed or it is over %d bytes", errGateway, maxAnswerBytes)
		}
		return b, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswerBytes)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		case len(line) == 0 && len(data) > 0:
			return data, nil
		}
	}
	if len(data) > 0 {
		return data, nil
	}
	return nil, fmt.Errorf("%w: the event stream ended without an answer", errGateway)
}

// scrub removes token from an error's text: a transport error may quote
// the request.
func scrub(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "…"))
}
