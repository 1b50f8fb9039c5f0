package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// These tests are the CI-style scripts of issue 21's machine identities:
// a job holding a client secret, and one holding a private key, each gets
// a token from the gateway with nothing but net/http (as curl would) and
// calls /mcp with a real MCP client, against the real gateway, shards and
// development IdP on loopback.

// machineEnv starts the development environment in data with the given
// service accounts, logging and auditing into logs.
func machineEnv(t *testing.T, data string, accounts []oauth.ServiceAccount, logs *logcheck.Buffer) *devenv.Env {
	t.Helper()
	env, err := devenv.Start(context.Background(), devenv.Config{
		Data:     data,
		Logger:   slog.New(slog.NewJSONHandler(logs, nil)),
		AuditLog: logs,
		Gateway: func(c *config.Config) {
			c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
			c.OAuth.ServiceAccounts = accounts
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// tokenEndpoint discovers the token endpoint from the gateway's
// authorization server metadata, as a script would.
func tokenEndpoint(t *testing.T, env *devenv.Env) string {
	t.Helper()
	issuer := strings.TrimSuffix(env.MCPURL, "/mcp")
	resp, err := http.Get(issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		TokenEndpoint string   `json:"token_endpoint"`
		Grants        []string `json:"grant_types_supported"`
		Methods       []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(m.Grants), "client_credentials") || !strings.Contains(fmt.Sprint(m.Methods), "private_key_jwt") {
		t.Fatalf("metadata does not offer the client credentials grant: %+v", m)
	}
	return m.TokenEndpoint
}

// postToken posts a token request; basic, when set, is "id:secret".
func postToken(t *testing.T, endpoint string, form url.Values, basic string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id, secret, ok := strings.Cut(basic, ":"); ok {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// accessToken checks a token answer of a service account: an access
// token for 10 minutes and no refresh token.
func accessToken(t *testing.T, answer func() (int, map[string]any)) string {
	t.Helper()
	status, out := answer()
	at, _ := out["access_token"].(string)
	if status != http.StatusOK || at == "" || out["refresh_token"] != nil || out["expires_in"] != float64(600) {
		t.Fatalf("token: %d %v", status, out)
	}
	return at
}

// secretToken is the secret script: client_secret_basic, resource = the
// MCP URL.
func secretToken(t *testing.T, env *devenv.Env, id, secret string) (int, map[string]any) {
	t.Helper()
	return postToken(t, tokenEndpoint(t, env), url.Values{"grant_type": {"client_credentials"}, "resource": {env.MCPURL}}, id+":"+secret)
}

// keyToken is the private_key_jwt script.
func keyToken(t *testing.T, env *devenv.Env, id string, key ed25519.PrivateKey) (int, map[string]any) {
	t.Helper()
	endpoint := tokenEndpoint(t, env)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": id, "sub": id, "aud": endpoint, "iat": now.Unix(),
		"exp": now.Add(2 * time.Minute).Unix(), "jti": hex.EncodeToString(jti)})
	jws, err := s.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	assertion, _ := jws.CompactSerialize()
	return postToken(t, endpoint, url.Values{"grant_type": {"client_credentials"}, "resource": {env.MCPURL},
		"client_assertion_type": {machine.ClientAssertionTypeJWT}, "client_assertion": {assertion}}, "")
}

func newMachineSecret(t *testing.T) (secret, hash string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	secret = base64.StdEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(secret))
	return secret, hex.EncodeToString(sum[:])
}

// allowMachines names client:ci and client:bot as writers of the platform
// wing, and reloads its policy; the other wings do not name them.
func allowMachines(t *testing.T, env *devenv.Env) {
	t.Helper()
	p := env.PolicyPath("platform")
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(old), "writers:\n", "writers:\n  - \"client:ci\"\n  - \"client:bot\"\n", 1)
	if edited == string(old) {
		t.Fatalf("no writers list in %s", p)
	}
	if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := env.ReloadPolicy("platform"); err != nil {
		t.Fatal(err)
	}
}

// machineCalls lists the tools, writes a note to platform and returns its
// author in brain_history; a wing the policy does not name is unknown_wing.
func machineCalls(t *testing.T, env *devenv.Env, at, slug string) string {
	t.Helper()
	c := httpClient(t, env.MCPURL, at)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	mustJSON(t, c, "brain_write", fmt.Sprintf(`{"wing":"platform","hall":"facts","slug":%q,"title":"Release notes","body":"Ingested by a job.\n"}`, slug), nil)
	h := historyOf(t, c, "platform/facts/"+slug)
	if len(h.Versions) != 1 {
		t.Fatalf("history %+v", h)
	}
	for _, wing := range []string{"payments", "people-ops"} {
		if code, _ := callErr(t, c, "brain_list", `{"wing":"`+wing+`"}`); code != "unknown_wing" {
			t.Fatalf("brain_list %s: %s, want unknown_wing", wing, code)
		}
	}
	if text, _ := call(t, c, "brain_wings", `{}`); !strings.Contains(text, "platform") || strings.Contains(text, "payments") {
		t.Fatalf("brain_wings: %s", text)
	}
	return h.Versions[0].By
}

// TestMachineIdentities: issue 21's acceptance for client credentials. A
// secret script and a private_key_jwt script each call /mcp and write as
// their account; an account no policy names gets unknown_wing; a rotation
// keeps both secrets working, and after the old one is removed and the
// gateway restarted the old one is refused and the new one works.
func TestMachineIdentities(t *testing.T) {
	data := t.TempDir()
	oldSecret, oldHash := newMachineSecret(t)
	newSecret, newHash := newMachineSecret(t)
	strangerSecret, strangerHash := newMachineSecret(t)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	keyFile := filepath.Join(t.TempDir(), "bot.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	bot := oauth.ServiceAccount{ID: "bot", Name: "release notes", Credentials: []oauth.Credential{{PublicKeyFile: keyFile}}}
	stranger := oauth.ServiceAccount{ID: "stranger", Credentials: []oauth.Credential{{SecretSHA256: strangerHash}}}
	rotating := []oauth.ServiceAccount{
		{ID: "ci", Name: "CI", Credentials: []oauth.Credential{{SecretSHA256: oldHash}, {SecretSHA256: newHash}}}, bot, stranger,
	}
	logs := &logcheck.Buffer{}
	env := machineEnv(t, data, rotating, logs)
	allowMachines(t, env)

	// The secret script, with the old and the new secret of a rotation.
	for i, secret := range []string{oldSecret, newSecret} {
		at := accessToken(t, func() (int, map[string]any) { return secretToken(t, env, "ci", secret) })
		if by := machineCalls(t, env, at, fmt.Sprintf("ci-note-%d", i)); by != "ci@clients.brainstem.invalid" {
			t.Fatalf("the note is authored by %q", by)
		}
	}
	// The private_key_jwt script.
	at := accessToken(t, func() (int, map[string]any) { return keyToken(t, env, "bot", key) })
	if by := machineCalls(t, env, at, "bot-note"); by != "bot@clients.brainstem.invalid" {
		t.Fatalf("the note is authored by %q", by)
	}
	// An account no policy names reaches no wing.
	sc := httpClient(t, env.MCPURL, accessToken(t, func() (int, map[string]any) { return secretToken(t, env, "stranger", strangerSecret) }))
	for _, wing := range []string{"platform", "payments"} {
		if code, _ := callErr(t, sc, "brain_list", `{"wing":"`+wing+`"}`); code != "unknown_wing" {
			t.Fatalf("stranger: brain_list %s: %s, want unknown_wing", wing, code)
		}
	}
	// A person cannot borrow an account's identity from the IdP.
	if tok, _, err := env.Token("ci@clients.brainstem.invalid", nil); err != nil {
		t.Fatal(err)
	} else {
		req, _ := http.NewRequest(http.MethodPost, env.MCPURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("an IdP token for a service account's address: %d", resp.StatusCode)
		}
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	// The rotation ends: the old secret is removed and the gateway restarts.
	rotated := []oauth.ServiceAccount{{ID: "ci", Name: "CI", Credentials: []oauth.Credential{{SecretSHA256: newHash}}}, bot, stranger}
	env = machineEnv(t, data, rotated, logs)
	t.Cleanup(func() { _ = env.Close() })
	st, out := secretToken(t, env, "ci", oldSecret)
	if st != http.StatusUnauthorized || out["error"] != "invalid_client" {
		t.Fatalf("the retired secret: %d %v", st, out)
	}
	if by := machineCalls(t, env, accessToken(t, func() (int, map[string]any) { return secretToken(t, env, "ci", newSecret) }), "ci-note-after"); by != "ci@clients.brainstem.invalid" {
		t.Fatalf("the note is authored by %q", by)
	}

	// Audited: each issuance, each refusal and each call names the account;
	// no secret or assertion is in the logs.
	all := logs.String()
	for _, want := range []string{
		`"client":"ci","name":"CI","email":"ci@clients.brainstem.invalid","credentials":["secret:`,
		`"grant":"client_credentials","email":"ci@clients.brainstem.invalid","client":"ci","method":"client_secret_basic"`,
		`"grant":"client_credentials","email":"bot@clients.brainstem.invalid","client":"bot","method":"private_key_jwt"`,
		`"client":"ci","method":"client_secret_basic","reason":"the secret matches none of the account's secrets"`,
		`"email":"ci@clients.brainstem.invalid","wing":"platform","tool":"brain_write","outcome":"ok"`,
		`"email":"bot@clients.brainstem.invalid","wing":"platform","tool":"brain_write","outcome":"ok"`,
		`"email":"stranger@clients.brainstem.invalid","wing":"platform","tool":"brain_list"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the logs lack %s", want)
		}
	}
	for _, s := range []string{oldSecret, newSecret, strangerSecret, url.QueryEscape(oldSecret), oldHash, newHash, "eyJ"} {
		if strings.Contains(all, s) {
			t.Fatalf("the logs hold a secret, a hash or a JWT (%.8s…)", s)
		}
	}
}

// TestMachineScript runs .ci/machine-e2e.sh, the CI job of docs/sign-in.md
// written with curl, jq and openssl only, against the real gateway: once
// with a client secret and once with an Ed25519 key (private_key_jwt). Each
// writes a note authored by its account; a wing its policy does not name
// makes the script fail with unknown_wing.
func TestMachineScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "openssl", "basenc", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	secret, hash := newMachineSecret(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(key.Public())
	priv, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "bot-private.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &logcheck.Buffer{}
	env := machineEnv(t, t.TempDir(), []oauth.ServiceAccount{
		{ID: "ci", Credentials: []oauth.Credential{{SecretSHA256: hash}}},
		{ID: "bot", Credentials: []oauth.Credential{{PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}}},
	}, logs)
	t.Cleanup(func() { _ = env.Close() })
	allowMachines(t, env)
	run := func(id, wing string, cred ...string) (string, error) {
		cmd := exec.Command("bash", "../.ci/machine-e2e.sh")
		cmd.Env = append(os.Environ(), "BRAINSTEM_URL="+strings.TrimSuffix(env.MCPURL, "/mcp"),
			"BRAINSTEM_CLIENT_ID="+id, "BRAINSTEM_WING="+wing, "BRAINSTEM_CLIENT_SECRET=", "BRAINSTEM_CLIENT_KEY=")
		cmd.Env = append(cmd.Env, cred...)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for _, c := range []struct {
		id   string
		cred string
	}{{"ci", "BRAINSTEM_CLIENT_SECRET=" + secret}, {"bot", "BRAINSTEM_CLIENT_KEY=" + keyFile}} {
		path, err := run(c.id, "platform", c.cred)
		if err != nil || !strings.HasPrefix(path, "inbox/platform/") {
			t.Fatalf("%s: %v\n%s", c.id, err, path)
		}
		if by := gitIn(t, env.BrainDir, "log", "--format=%ae", "--", path); strings.TrimSpace(by) != c.id+"@clients.brainstem.invalid" {
			t.Fatalf("%s: %s is authored by %q", c.id, path, by)
		}
		out, err := run(c.id, "payments", c.cred)
		if err == nil || !strings.Contains(out, "unknown_wing") {
			t.Fatalf("%s writing to payments: %v\n%s", c.id, err, out)
		}
	}
	if out, err := run("ci", "platform", "BRAINSTEM_CLIENT_SECRET="+strings.Repeat("0", 64)); err == nil {
		t.Fatalf("a wrong secret: %s", out)
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatal("the logs hold the secret")
	}
}
