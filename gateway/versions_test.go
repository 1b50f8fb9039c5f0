package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
)

// TestProtocolVersions: server/discover names every protocol revision the
// endpoint serves, and those are every revision initialize accepts (which
// answers with the revision asked for) plus the stateless one, and every
// one the MCP-Protocol-Version header may carry.
func TestProtocolVersions(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	tok := "Bearer " + e.idp.token(t, "alice@acme.com")
	discover := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{` + modernMeta + `}}`
	resp, body := rawPost(t, e.url, discover, map[string]string{"Authorization": tok, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	var d struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &d) != nil || len(d.Result.SupportedVersions) == 0 {
		t.Fatalf("server/discover: %d %s", resp.StatusCode, body)
	}
	listed := d.Result.SupportedVersions
	if !slices.Contains(listed, "2026-07-28") {
		t.Errorf("server/discover lists %v, without the stateless revision", listed)
	}
	accepted := 0
	for _, v := range mcp.ValidProtocolVersions {
		if mcp.IsModernProtocol(v) {
			continue
		}
		init := strings.Replace(initBody, "2025-06-18", v, 1)
		resp, body := rawPost(t, e.url, init, map[string]string{"Authorization": tok})
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"protocolVersion":"`+v+`"`) {
			t.Errorf("initialize %s: %d %s", v, resp.StatusCode, body)
			continue
		}
		accepted++
		if !slices.Contains(listed, v) {
			t.Errorf("initialize accepts %s, server/discover lists %v", v, listed)
		}
		resp, body = rawPost(t, e.url, init, map[string]string{"Authorization": tok, "Mcp-Protocol-Version": v})
		if resp.StatusCode != 200 {
			t.Errorf("MCP-Protocol-Version %s: %d %s", v, resp.StatusCode, body)
		}
	}
	if accepted < 4 || !slices.Contains(listed, "2024-11-05") {
		t.Errorf("initialize accepted %d revisions; server/discover lists %v", accepted, listed)
	}
	for _, v := range listed {
		if !slices.Contains(mcp.ValidProtocolVersions, v) {
			t.Errorf("server/discover lists %s, which mcp-go does not serve", v)
		}
	}
}
