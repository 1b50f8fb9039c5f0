package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/edge"
)

// TestMiddlewareOrder: the /mcp chain applies its checks in the order of
// docs/architecture.md. Request k breaks the rule of check k and of every
// later check, so it must get check k's refusal and no later one's.
func TestMiddlewareOrder(t *testing.T) {
	frozen := time.Now()
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen},
		func(c *config.Config, o *Options) {
			c.Limits.CallsPerSecond, c.Limits.Burst = 1, 1
			c.Limits.MaxBodyBytes = 1024
			o.Now = func() time.Time { return frozen }
		})
	tok := "Bearer " + e.idp.token(t, "alice@acme.com")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	// The one call the bucket allows; every request below comes after it.
	if resp, body := rawPost(t, e.url, initBody, map[string]string{"Authorization": tok}); resp.StatusCode != 200 {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	type request struct {
		hdr  map[string]string
		body string
	}
	breaks := []struct {
		check  string
		apply  func(*request)
		status int
		says   string // in the body
	}{
		{"origin", func(r *request) { r.hdr["Origin"] = "https://evil.example" }, 403, "allowed_origins"},
		{"protocol version", func(r *request) { r.hdr["Mcp-Protocol-Version"] = "1999-01-01" }, 400, "MCP-Protocol-Version"},
		{"authentication", func(r *request) { delete(r.hdr, "Authorization") }, 401, "bearer token"},
		{"body", func(r *request) {
			r.body = `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
		}, 413, "max_body_bytes"},
		{"JSON-RPC id", func(r *request) {
			if len(r.body) < 1024 {
				r.body = `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`
			}
		}, 400, "JSON-RPC id"},
		{"session owner", func(r *request) {
			r.hdr["Mcp-Session-Id"] = edge.NewSessionID("mallory@acme.com")
			if r.hdr["Mcp-Protocol-Version"] == "" {
				r.hdr["Mcp-Protocol-Version"] = "2025-06-18"
			}
		}, 404, "Mcp-Session-Id"},
		{"rate limit", func(*request) {}, 429, string(brain.CodeRateLimited)},
	}
	for k, b := range breaks {
		t.Run(b.check, func(t *testing.T) {
			r := request{hdr: map[string]string{"Authorization": tok}, body: list}
			for _, later := range breaks[k:] {
				later.apply(&r)
			}
			resp, body := rawPost(t, e.url, r.body, r.hdr)
			if resp.StatusCode != b.status || !strings.Contains(string(body), b.says) {
				t.Fatalf("got %d %s, want the %s check's %d", resp.StatusCode, body, b.check, b.status)
			}
		})
	}
}
