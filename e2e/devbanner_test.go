package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/gateway/oauth/idjag"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/signins"
)

// banner is what `brainstem dev` prints once env is ready.
func banner(t *testing.T, env *devenv.Env) string {
	t.Helper()
	var b strings.Builder
	if err := env.PrintBanner(&b, "alice@example.com", time.Second, "/tmp/brainstem.log"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// bannerLine is the banner's line holding want, without its indent.
func bannerLine(t *testing.T, text, want string) string {
	t.Helper()
	for line := range strings.Lines(text) {
		if strings.Contains(line, want) {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("the banner has no line with %q:\n%s", want, text)
	return ""
}

// TestDevBannerServiceAccount: the service account's curl line, run as
// printed by a shell, gets an access token that /mcp accepts, for the
// wing the sample policy grants client:ci-bot (platform, write) only.
func TestDevBannerServiceAccount(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl to run the printed line with")
	}
	env := devenvtest.Start(t, devenv.Config{})
	line := bannerLine(t, banner(t, env), "grant_type=client_credentials")
	if !strings.HasPrefix(line, "curl ") {
		t.Fatalf("not a curl line: %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", line).Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var answer struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || answer.AccessToken == "" || answer.ExpiresIn != 600 {
		t.Fatalf("%s answered %s (%v)", line, out, err)
	}
	c := httpClient(t, env.MCPURL, answer.AccessToken)
	if text, _ := call(t, c, "brain_wings", `{}`); text != `{"wings":[{"wing":"platform","capabilities":["read","write"]}]}` {
		t.Errorf("brain_wings with the service account's token: %s", text)
	}
	mustJSON(t, c, "brain_write", `{"wing":"platform","hall":"facts","title":"Written by ci-bot","body":"From the banner's curl.\n"}`, nil)
	if code, _ := callErr(t, c, "brain_list", `{"wing":"payments"}`); code != "unknown_wing" {
		t.Errorf("ci-bot in payments: %s, want unknown_wing", code)
	}
}

// TestDevBannerSignins: `brainstem signins list` with the flags the banner
// prints (the gateway's admin URL and the operator token file dev wrote)
// is answered by the gateway; with another token it is refused.
func TestDevBannerSignins(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{})
	line := bannerLine(t, banner(t, env), "signins list")
	_, args, ok := strings.Cut(line, "go run ./cmd/brainstem signins ")
	if !ok {
		t.Fatalf("not a signins line: %q", line)
	}
	var out, errb strings.Builder
	usage := func(string) string { return "" }
	if err := signins.Run(context.Background(), strings.Fields(args), &out, &errb, usage); err != nil {
		t.Fatalf("signins %s: %v\n%s", args, err, errb.String())
	}
	if !strings.Contains(out.String(), "sign-ins seen by 1 of 1 replicas") {
		t.Errorf("signins %s:\n%s", args, out.String())
	}
	// The token file is what makes it work: another token is refused.
	other := t.TempDir() + "/other"
	if err := os.WriteFile(other, []byte(strings.Repeat("x", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := signins.Run(context.Background(), []string{"list", "--admin", env.AdminURL, "--token-file", other}, &out, &errb, usage); err == nil {
		t.Error("signins list with another token succeeded")
	}
}

// TestDevAllowPurge: with AllowPurge (`brainstem dev --allow-purge`) alice,
// who curates every wing, is offered brain_purge and purges a note;
// without it the tool is not offered and the call fails. The banner says
// which.
func TestDevAllowPurge(t *testing.T) {
	const args = `{"id":"platform/facts/purge-me","reason":"a leaked secret"}`
	const write = `{"wing":"platform","hall":"facts","slug":"purge-me","title":"Purge me","body":"token=s3cret\n"}`
	for _, allow := range []bool{true, false} {
		env := devenvtest.Start(t, devenv.Config{AllowPurge: allow})
		c := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
		mustJSON(t, c, "brain_write", write, nil)
		text := banner(t, env)
		tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		offered := strings.Contains(fmt.Sprint(tools.Tools), "brain_purge")
		if offered != allow {
			t.Errorf("AllowPurge %v: tools/list offers brain_purge: %v", allow, offered)
		}
		if allow {
			var res struct {
				Removed bool `json:"removed"`
			}
			mustJSON(t, c, "brain_purge", args, &res)
			if !res.Removed {
				t.Error("brain_purge did not remove the note")
			}
			if !strings.Contains(text, "Purge:  on (--allow-purge)") {
				t.Errorf("the banner does not say purge is on:\n%s", text)
			}
			continue
		}
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_purge", Arguments: json.RawMessage(args)}})
		if err == nil && !res.IsError {
			t.Errorf("brain_purge without --allow-purge succeeded: %+v", res)
		}
		if !strings.Contains(text, "restart with --allow-purge") {
			t.Errorf("the banner does not say how to turn purge on:\n%s", text)
		}
	}
}

// TestDevBannerURLsAnswer: the identity provider's URLs on the banner
// answer 200 (the issuer URL redirects to its discovery document).
func TestDevBannerURLsAnswer(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{})
	line := bannerLine(t, banner(t, env), "Identity provider:")
	n := 0
	for _, f := range strings.Fields(line) {
		u := strings.Trim(f, "()")
		if !strings.HasPrefix(u, "http://") {
			continue
		}
		n++
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Issuer string `json:"issuer"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || doc.Issuer != env.IssuerURL {
			t.Errorf("GET %s: %d, issuer %q (%v)", u, resp.StatusCode, doc.Issuer, err)
		}
	}
	if n != 2 {
		t.Errorf("%d URLs on %q, want the issuer and its discovery document", n, line)
	}
}

// TestDevShortTokens: --token-ttl 2m gives the demo tokens, the gateway's
// access tokens (here from an identity assertion) and the service
// account's tokens two minutes, and the banner says so.
func TestDevShortTokens(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{TokenTTL: 2 * time.Minute})
	if line := bannerLine(t, banner(t, env), "Tokens:"); !strings.Contains(line, "demo tokens live 2m, the gateway's access tokens 2m, service accounts' 2m") {
		t.Errorf("the banner's tokens line: %q", line)
	}
	if _, exp, err := env.Token("alice@example.com", nil); err != nil || time.Until(exp) > 2*time.Minute || time.Until(exp) < time.Minute {
		t.Errorf("a demo token expires %v (%v), want in 2 minutes", exp, err)
	}
	assertion, _, err := env.IDJAG("alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	status, out := postToken(t, tokenEndpoint(t, env), url.Values{"grant_type": {idjag.GrantTypeJWTBearer},
		"client_id": {devidp.DefaultAssertionClientID}, "assertion": {assertion}}, "")
	if status != http.StatusOK || out["expires_in"] != float64(120) {
		t.Errorf("an access token for an identity assertion: %d %v, want expires_in 120", status, out)
	}
	secret, err := os.ReadFile(env.ServiceAccountSecretFile)
	if err != nil {
		t.Fatal(err)
	}
	status, out = postToken(t, tokenEndpoint(t, env), url.Values{"grant_type": {"client_credentials"}}, devenv.ServiceAccountID+":"+strings.TrimSpace(string(secret)))
	if status != http.StatusOK || out["expires_in"] != float64(120) {
		t.Errorf("the service account's token: %d %v, want expires_in 120", status, out)
	}
}
