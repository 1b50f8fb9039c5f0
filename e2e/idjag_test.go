package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/gateway/oauth/idjag"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// TestEnterpriseManagedAuthorization: issue 21's acceptance for ID-JAG on
// the development environment as `brainstem dev` runs it. The
// development IdP's ID-JAG for alice (what its token exchange gives the
// client it manages) is exchanged at the gateway's /token with the JWT
// bearer grant, with no browser and no consent, and the token calls /mcp
// as alice; the same assertion again is refused.
func TestEnterpriseManagedAuthorization(t *testing.T) {
	logs := &logcheck.Buffer{}
	env, err := devenv.Start(context.Background(), devenv.Config{Data: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(logs, nil)), AuditLog: logs})
	if err != nil {
		t.Fatal(err)
	}
	issuer := strings.TrimSuffix(env.MCPURL, "/mcp")
	resp, err := http.Get(issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		TokenEndpoint string   `json:"token_endpoint"`
		Grants        []string `json:"grant_types_supported"`
		Profiles      []string `json:"authorization_grant_profiles_supported"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if !strings.Contains(strings.Join(meta.Grants, " "), idjag.GrantTypeJWTBearer) || len(meta.Profiles) != 1 || meta.Profiles[0] != idjag.GrantProfileIDJAG {
		t.Fatalf("metadata: %+v", meta)
	}
	jag, _, err := env.IDJAG("alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"grant_type": {idjag.GrantTypeJWTBearer}, "client_id": {devidp.DefaultAssertionClientID},
		"assertion": {jag}, "resource": {env.MCPURL}}
	status, out := postToken(t, meta.TokenEndpoint, form, "")
	at, _ := out["access_token"].(string)
	if status != http.StatusOK || at == "" || out["refresh_token"] != nil {
		t.Fatalf("jwt-bearer: %d %v", status, out)
	}
	c := httpClient(t, env.MCPURL, at)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	if text, _ := call(t, c, "brain_wings", `{}`); !strings.Contains(text, "payments") {
		t.Fatalf("brain_wings as alice: %s", text)
	}
	if status, out := postToken(t, meta.TokenEndpoint, form, ""); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("replay: %d %v", status, out)
	}
}
