package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"gopkg.in/yaml.v3"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// The Dex interop test signs in through the gateway's authorization server
// with Dex (github.com/dexidp/dex), a third-party OpenID Connect provider,
// as the company IdP. Dex is not a dependency of this module: .ci/run builds
// a pinned version into a scratch directory and points BRAINSTEM_DEX_BIN at
// it (docs/sign-in.md, "Dex", has the commands).

// dexUser is Dex's static password user: carol, in the IdP group
// people-team, which the sample policies let curate the people-ops wing
// (deploy/examples/policies/people-ops.yaml). Without the group she would
// see platform only, so the wings she sees prove the groups claim made it
// from Dex through the facade's access token to the shards.
const (
	dexEmail = "carol@example.com"
	dexGroup = "people-team"
	// dexPassword and its bcrypt hash (cost 10) are the example pair of
	// Dex's own documentation; the test's Dex listens on loopback only.
	dexPassword = "password"
	dexHash     = "$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W"
	dexClientID = "brainstem"
)

// dexConfig is Dex's configuration: memory storage, the password database
// with one static user (with groups), one confidential static client (the
// gateway) whose only redirect URI is the gateway's callback. Dex shows no
// approval screen of its own: the gateway's consent page is the one that
// counts. The gRPC API listens on a port of its own (never called): Dex
// binds it after its HTTP listener, so its "listening on" line is the
// signal that the HTTP listener is bound.
const dexConfig = `issuer: %[1]s
storage:
  type: memory
web:
  http: %[2]s
grpc:
  addr: 127.0.0.1:0
logger:
  level: info
  format: json
oauth2:
  skipApprovalScreen: true
  responseTypes: [code]
expiry:
  idTokens: 10m
  refreshTokens:
    reuseInterval: 3s
enablePasswordDB: true
staticPasswords:
  - email: %[3]s
    hash: %[4]q
    username: carol
    userID: 5a0e0d7c-7b7a-4b52-9b35-0c7d2f3c9e11
    groups: [%[5]s]
staticClients:
  - id: %[6]s
    name: Brainstem
    secret: %[7]s
    redirectURIs: [%[8]q]
`

// dexGatewayConfig is the `oidc:` and `oauth:` part of the gateway's
// configuration, as docs/sign-in.md gives it for Dex; the test decodes it
// with the gateway's own types (unknown keys refused).
const dexGatewayConfig = `oidc:
  issuers:
    - url: %[1]s
      audiences: [brainstem]
      algorithms: [RS256]
  groups_claim: groups
oauth:
  enabled: true
  signing_key_file: %[2]s
  upstream:
    issuer: %[1]s
    client_id: brainstem
    client_secret_file: %[3]s
    scopes: [openid, email, profile, groups, offline_access]
`

// TestDexInterop: mcp-go's OAuth client signs in at a gateway whose
// authorization server is in front of a real Dex: discovery, dynamic
// registration, authorize, the gateway's consent page, Dex's own login
// form (a wrong password first, which Dex must refuse), Dex's redirect to
// the gateway's callback, the code, the token request (where the facade
// redeems Dex's code and verifies Dex's ID token), tools/list, brain_wings
// with the wings Carol's Dex group grants, two refreshes (each refreshing
// Dex's rotating refresh token), and calls with the refreshed tokens.
func TestDexInterop(t *testing.T) {
	bin := os.Getenv("BRAINSTEM_DEX_BIN")
	if bin == "" {
		t.Skip("BRAINSTEM_DEX_BIN is not set: build Dex as docs/sign-in.md says (.ci/run does) to run this interop test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// The issuer URL must be known before Dex starts (it is in Dex's
	// configuration) and before the gateway starts (oidc.issuers), and Dex
	// cannot listen on a port it is handed. So the test holds the issuer's
	// port itself and forwards to Dex, as an ingress would.
	dex := &dexFront{}
	front := httptest.NewServer(dex)
	t.Cleanup(front.Close)
	issuer := front.URL + "/dex"

	secret := randomHex(t, 32)
	secretFile := filepath.Join(dir, "client-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "oauth-signing.pem")
	if _, err := auth.LoadOrCreateKey(keyFile); err != nil { // PEM PKCS#8 Ed25519, as openssl genpkey makes
		t.Fatal(err)
	}
	var section struct {
		OIDC  sso.Config   `yaml:"oidc"`
		OAuth oauth.Config `yaml:"oauth"`
	}
	dec := yaml.NewDecoder(strings.NewReader(fmt.Sprintf(dexGatewayConfig, issuer, keyFile, secretFile)))
	dec.KnownFields(true)
	if err := dec.Decode(&section); err != nil {
		t.Fatalf("the documented gateway configuration for Dex does not decode: %v", err)
	}

	env := devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		// The development environment's own IdP stays up but is no longer
		// trusted: Dex is the only issuer, and the facade's upstream.
		c.OIDC.Issuers, c.OIDC.GroupsClaim = section.OIDC.Issuers, section.OIDC.GroupsClaim
		section.OAuth.ClientMetadata = c.OAuth.ClientMetadata
		c.OAuth = section.OAuth
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
	}})
	base := strings.TrimSuffix(env.MCPURL, "/mcp")

	dex.start(t, bin, filepath.Join(dir, "dex.yaml"), func(httpAddr string) string {
		return fmt.Sprintf(dexConfig, issuer, httpAddr, dexEmail, dexHash, dexGroup, dexClientID, secret, base+oauth.PathCallback)
	})
	// Dex's discovery document names the issuer the gateway trusts.
	var disco struct {
		Issuer string   `json:"issuer"`
		Scopes []string `json:"scopes_supported"`
	}
	getJSON(t, issuer+"/.well-known/openid-configuration", &disco)
	if disco.Issuer != issuer || !slices.Contains(disco.Scopes, "offline_access") || !slices.Contains(disco.Scopes, "groups") {
		t.Fatalf("Dex discovery: %+v", disco)
	}

	store := client.NewMemoryTokenStore()
	c, err := client.NewOAuthStreamableHttpClient(env.MCPURL, client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:43219/callback", Scopes: []string{oauth.Scope}, PKCEEnabled: true, TokenStore: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "brainstem dex interop", Version: "0"}
	_, err = c.Initialize(ctx, init)
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("first request: want an authorization-required error, got %v", err)
	}
	h := client.GetOAuthHandler(err)
	if err := h.RegisterClient(ctx, "brainstem dex interop"); err != nil {
		t.Fatalf("dynamic registration: %v", err)
	}
	verifier, err := client.GenerateCodeVerifier()
	if err != nil {
		t.Fatal(err)
	}
	state, err := client.GenerateState()
	if err != nil {
		t.Fatal(err)
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, client.GenerateCodeChallenge(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(authURL, base+oauth.PathAuthorize+"?") {
		t.Fatalf("the client was sent to %s, not to the gateway's authorization endpoint", authURL)
	}
	back, err := dexSignIn(ctx, testbrowser.New(), authURL, issuer, func(u *url.URL) bool { return u.Port() == "43219" })
	if err != nil {
		t.Fatal(err)
	}
	if back.Query().Get("state") != state || back.Query().Get("iss") != base {
		t.Fatalf("redirect to the client: %s (want state %s, iss %s)", back, state, base)
	}
	if err := h.ProcessAuthorizationResponse(ctx, back.Query().Get("code"), back.Query().Get("state"), verifier); err != nil {
		t.Fatalf("token request: %v", err)
	}
	tok, err := store.GetToken(ctx)
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("stored token: %+v %v", tok, err)
	}
	claims := accessClaims(t, tok.AccessToken)
	if claims.Issuer != base || claims.Audience != env.MCPURL || claims.Email != dexEmail || !slices.Equal(claims.Groups, []string{dexGroup}) {
		t.Fatalf("access token claims: %+v (want issuer %s, audience %s, email %s, groups [%s] from Dex)", claims, base, env.MCPURL, dexEmail, dexGroup)
	}

	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize after sign-in: %v", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	wantWings := func(step string) {
		t.Helper()
		text, isErr := call(t, c, "brain_wings", `{}`)
		if isErr || !strings.Contains(text, `"people-ops"`) || !strings.Contains(text, `"platform"`) || strings.Contains(text, `"payments"`) {
			t.Fatalf("brain_wings %s: want people-ops (through Dex's group %s) and platform, not payments: %s", step, dexGroup, text)
		}
	}
	wantWings("after sign-in")

	// Two refreshes: each one refreshes Dex's refresh token, which Dex
	// rotates, so the second works only if the facade kept Dex's new one.
	for i := range 2 {
		fresh, err := h.RefreshToken(ctx, tok.RefreshToken)
		if err != nil || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == "" || fresh.RefreshToken == tok.RefreshToken {
			t.Fatalf("refresh %d: %+v %v", i+1, fresh, err)
		}
		if c := accessClaims(t, fresh.AccessToken); c.Email != dexEmail || !slices.Equal(c.Groups, []string{dexGroup}) {
			t.Fatalf("refresh %d: claims %+v", i+1, c)
		}
		tok = fresh
		wantWings(fmt.Sprintf("after refresh %d", i+1))
	}
	if n := dex.served.Load(); n == 0 {
		t.Fatal("no request reached Dex")
	}

	// Dex forgets every sign-in (a new process over memory storage): the
	// next refresh reaches Dex, which refuses it, and no token comes back.
	// Dex names that refusal invalid_request (RFC 6749 says invalid_grant),
	// which the facade today reports as its own misconfiguration
	// (server_error); what must hold either way is that nothing is issued.
	dex.stop()
	dex.start(t, bin, filepath.Join(dir, "dex-restarted.yaml"), func(httpAddr string) string {
		return fmt.Sprintf(dexConfig, issuer, httpAddr, dexEmail, dexHash, dexGroup, dexClientID, secret, base+oauth.PathCallback)
	})
	before := dex.served.Load()
	resp, err := http.PostForm(base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {h.GetClientID()}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	var answer struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	_ = json.Unmarshal(body, &answer)
	// Dex answers a refresh token it forgot with invalid_request, which the
	// gateway takes, like invalid_grant, as "sign in again".
	if resp.StatusCode != http.StatusBadRequest || answer.AccessToken != "" || answer.Error != "invalid_grant" || dex.served.Load() == before {
		t.Fatalf("refresh after Dex forgot the sign-in: %d %s (Dex asked: %v)", resp.StatusCode, body, dex.served.Load() > before)
	}
	t.Logf("refresh after Dex forgot the sign-in: %d %s", resp.StatusCode, body)
}

// dexSignIn drives a browser from the gateway's authorization URL to the
// client's redirect: the gateway's consent page (allowed), then Dex's
// password form, first with a wrong password (Dex must answer 401 with the
// form again) and then with the right one.
func dexSignIn(ctx context.Context, b *testbrowser.Browser, authURL, issuer string, isClient func(*url.URL) bool) (*url.URL, error) {
	p, err := b.Get(ctx, authURL)
	if err != nil {
		return nil, err
	}
	consented, refused := false, false
	for range 6 {
		if p, err = b.Follow(ctx, p, isClient); err != nil {
			return nil, err
		}
		switch {
		case p.Location != nil:
			if !consented || !refused {
				return nil, fmt.Errorf("reached the client (%s) before consent (%v) and a refused password (%v)", p.Location, consented, refused)
			}
			return p.Location, nil
		case p.Status == http.StatusOK && strings.Contains(p.Body, `name="decision"`):
			f, err := p.Form()
			if err != nil {
				return nil, err
			}
			consented = true
			if p, err = b.Submit(ctx, p, f, nil, "allow"); err != nil {
				return nil, err
			}
		case strings.HasPrefix(p.URL.String(), issuer) && strings.Contains(p.Body, `name="login"`) && strings.Contains(p.Body, `name="password"`):
			if !consented {
				return nil, errors.New("Dex's login form came before the gateway's consent page")
			}
			f, err := p.Form()
			if err != nil {
				return nil, err
			}
			if !refused {
				if p, err = b.Submit(ctx, p, f, map[string]string{"login": dexEmail, "password": "not-" + dexPassword}, ""); err != nil {
					return nil, err
				}
				if p.Status != http.StatusUnauthorized || !strings.Contains(p.Body, "login-error") {
					return nil, fmt.Errorf("Dex did not refuse a wrong password: %d %v %s", p.Status, p.Location, testbrowser.Text(p.Body))
				}
				refused = true
				continue
			}
			if p, err = b.Submit(ctx, p, f, map[string]string{"login": dexEmail, "password": dexPassword}, ""); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("sign-in stopped at %s with %d: %s", p.URL, p.Status, testbrowser.Text(p.Body))
		}
	}
	return nil, errors.New("sign-in did not reach the client")
}

// dexFront forwards the issuer's port to Dex once it runs.
type dexFront struct {
	target atomic.Pointer[url.URL]
	served atomic.Int64
	stops  []func() // of the Dex processes started, last first
}

// stop ends the running Dex process.
func (f *dexFront) stop() {
	f.target.Store(nil)
	if n := len(f.stops); n > 0 {
		f.stops[n-1]()
		f.stops = f.stops[:n-1]
	}
}

func (f *dexFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u := f.target.Load()
	if u == nil {
		http.Error(w, "Dex is not running", http.StatusBadGateway)
		return
	}
	f.served.Add(1)
	(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host
	}}).ServeHTTP(w, r)
}

// start runs Dex on a free loopback port and returns once its HTTP
// listener is bound. A port taken between choosing and binding it makes
// Dex exit; then another is tried.
func (f *dexFront) start(t *testing.T, bin, configFile string, config func(httpAddr string) string) {
	t.Helper()
	var lastErr error
	for range 3 {
		addr := freePort(t)
		if err := os.WriteFile(configFile, []byte(config(addr)), 0o600); err != nil {
			t.Fatal(err)
		}
		stop, err := runDex(t, bin, configFile)
		if err == nil {
			f.stops = append(f.stops, stop)
			f.target.Store(&url.URL{Scheme: "http", Host: addr})
			return
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("Dex did not start: %v", lastErr)
}

// runDex starts `dex serve` and waits for the line saying it binds its gRPC
// listener (after the HTTP one), or for its exit. It returns a function
// that stops the process, which also runs at the end of the test.
func runDex(t *testing.T, bin, configFile string) (func(), error) {
	cmd := exec.Command(bin, "serve", configFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	var (
		mu   sync.Mutex
		tail []string
	)
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			tail = append(tail, line)
			if len(tail) > 40 {
				tail = tail[1:]
			}
			mu.Unlock()
			var rec struct {
				Msg    string `json:"msg"`
				Server string `json:"server"`
			}
			if !signalled && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening on" && rec.Server == "grpc" {
				signalled = true
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	logs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(tail, "\n")
	}
	select {
	case <-ready:
	case err := <-exited:
		return nil, fmt.Errorf("dex exited (%v):\n%s", err, logs())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("dex did not start within 30s:\n%s", logs())
	}
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("Dex's last log lines:\n%s", logs())
		}
	})
	t.Cleanup(stop)
	return stop, nil
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type gatewayAccessClaims struct {
	Issuer   string   `json:"iss"`
	Audience string   `json:"aud"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

// accessClaims decodes the payload of the gateway's access token (its
// signature is the gateway's business; /mcp checks it on every call).
func accessClaims(t *testing.T, jwt string) gatewayAccessClaims {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("access token is not a JWT: %.40s…", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c gatewayAccessClaims
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
