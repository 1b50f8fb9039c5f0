package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// withOAuth turns the gateway's authorization server on over the test IdP,
// with the signing key in keyFile (replicas share it).
func withOAuth(t testing.TB, idp *testIdP, cfg *config.Config, keyFile string) {
	t.Helper()
	if _, err := auth.LoadOrCreateKey(keyFile); err != nil {
		t.Fatal(err)
	}
	cfg.OAuth = oauth.Config{
		Enabled:        true,
		SigningKeyFile: keyFile,
		Upstream:       oauth.UpstreamConfig{Issuer: idp.p.Issuer(), ClientID: idp.p.ClientID(), ClientSecret: testIdPSecret},
	}
}

// roundRobin serves base with a reverse proxy that sends consecutive
// requests to alternate backends, keeping the public Host as an ingress
// does. It returns the number of requests each backend served.
func roundRobin(t *testing.T, pl net.Listener, backends []*url.URL) *[2]atomic.Int64 {
	var next atomic.Int64
	var served [2]atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		i := next.Add(1) % 2
		served[i].Add(1)
		r.SetURL(backends[i])
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewUnstartedServer(proxy)
	srv.Listener.Close()
	srv.Listener = pl
	srv.Start()
	t.Cleanup(srv.Close)
	return &served
}

// TestOAuthSignInTwoReplicas: mcp-go's own OAuth client signs in with
// nothing but the MCP URL — discovery, dynamic registration, authorize,
// consent, IdP login, code, token — then lists the tools, calls brain_wings
// and brain_get, refreshes, and calls again, through two gateway replicas
// behind a round-robin proxy, so consecutive requests (the consent form
// and its answer, the callback and the token request) land on different
// replicas.
func TestOAuthSignInTwoReplicas(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	e.wings["payments"].addNote("payments/f/x", "hello", "a@acme.com")
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + pl.Addr().String()
	key := filepath.Join(t.TempDir(), "oauth.pem")
	var backends []*url.URL
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.config([]config.WingConfig{{Name: "payments", Address: e.shards["payments"].addr, ServerName: "localhost"}}, base)
		withOAuth(t, e.idp, &cfg, key)
		e.startGatewayOn(ln, cfg, Options{})
		u, _ := url.Parse("http://" + ln.Addr().String())
		backends = append(backends, u)
	}
	served := roundRobin(t, pl, backends)

	ctx := context.Background()
	store := client.NewMemoryTokenStore()
	c, err := client.NewOAuthStreamableHttpClient(base+"/mcp", client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:43210/callback", Scopes: []string{"mcp"}, PKCEEnabled: true, TokenStore: store,
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
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go oauth test", Version: "0"}
	_, err = c.Initialize(ctx, init)
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("first request: want an authorization-required error, got %v", err)
	}
	h := client.GetOAuthHandler(err)
	if err := h.RegisterClient(ctx, "mcp-go oauth test"); err != nil {
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
	back, err := testbrowser.New().SignIn(ctx, authURL, func(u *url.URL) bool { return u.Port() == "43210" }, "alice@acme.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ProcessAuthorizationResponse(ctx, back.Location.Query().Get("code"), back.Location.Query().Get("state"), verifier); err != nil {
		t.Fatalf("token exchange: %v", err)
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize after sign-in: %v", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	if text, isErr := call(t, c, "brain_wings", `{}`); isErr || !strings.Contains(text, `"payments"`) {
		t.Fatalf("brain_wings: %s", text)
	}

	// Refresh, then call again with the new access token.
	tok, err := store.GetToken(ctx)
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("stored token: %+v %v", tok, err)
	}
	fresh, err := h.RefreshToken(ctx, tok.RefreshToken)
	if err != nil || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh: %+v %v", fresh, err)
	}
	for range 4 {
		if text, isErr := call(t, c, "brain_get", `{"id":"payments/f/x"}`); isErr || !strings.Contains(text, `"body":"hello"`) {
			t.Fatalf("brain_get after refresh: %s", text)
		}
	}
	if served[0].Load() < 5 || served[1].Load() < 5 {
		t.Fatalf("requests per replica %d / %d: the proxy did not spread them", served[0].Load(), served[1].Load())
	}
}

// TestOAuthTokensAtMCP: /mcp takes the facade's access tokens and the IdP's
// own, names the facade in its metadata and challenge, and refuses a facade
// token made for another MCP URL.
func TestOAuthTokensAtMCP(t *testing.T) {
	key := filepath.Join(t.TempDir(), "oauth.pem")
	idp := startIdP(t)
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen}, func(c *config.Config, _ *Options) {
		withOAuth(t, idp, c, key)
		c.OIDC.Issuers[0].URL, c.OIDC.Issuers[0].Audiences = idp.p.Issuer(), []string{idp.p.ClientID()}
	})
	e.idp = idp

	resp, body := rawPost(t, e.url, `{}`, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="mcp"`) {
		t.Fatalf("challenge: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	mresp, err := http.Get(e.base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var meta protectedResourceMetadata
	if err := jsonDecode(mresp.Body, &meta); err != nil || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != e.base {
		t.Fatalf("protected-resource metadata: %+v %v", meta, err)
	}

	// A second gateway at another URL that shares the signing key (a
	// staging gateway given the same Secret, say): its tokens name another
	// issuer and audience, and this gateway refuses them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	otherBase := "http://" + ln.Addr().String()
	ocfg := e.config([]config.WingConfig{{Name: "payments", Address: e.shards["payments"].addr, ServerName: "localhost"}}, otherBase)
	withOAuth(t, e.idp, &ocfg, key)
	e.startGatewayOn(ln, ocfg, Options{})
	other := signInHTTP(t, otherBase, "alice@acme.com")
	resp, body = rawPost(t, e.url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer " + other})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Fatalf("token for another MCP URL: %d %s", resp.StatusCode, body)
	}
	// Its own token works here.
	own := signInHTTP(t, e.base, "alice@acme.com")
	if text, isErr := call(t, e.client(t, own, false), "brain_wings", `{}`); isErr || !strings.Contains(text, "payments") {
		t.Fatalf("own token: %s", text)
	}

	// The IdP's own token still works.
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	if text, isErr := call(t, c, "brain_wings", `{}`); isErr {
		t.Fatalf("IdP token: %s", text)
	}
}

// signInHTTP signs in at the gateway at base as a plain OAuth client:
// registration, a scripted browser through consent and the IdP, the token
// request. It returns the access token.
func signInHTTP(t *testing.T, base, email string) string {
	t.Helper()
	resp, err := http.Post(base+"/register", "application/json", strings.NewReader(`{"client_name":"t","redirect_uris":["http://127.0.0.1/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	err = jsonDecode(resp.Body, &reg)
	resp.Body.Close()
	if err != nil || reg.ClientID == "" {
		t.Fatalf("register: %v", err)
	}
	verifier, _ := transport.GenerateCodeVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {"http://127.0.0.1:43210/cb"},
		"code_challenge": {transport.GenerateCodeChallenge(verifier)}, "code_challenge_method": {"S256"}, "resource": {base + "/mcp"}}
	back, err := testbrowser.New().SignIn(context.Background(), base+"/authorize?"+q.Encode(), func(u *url.URL) bool { return u.Port() == "43210" }, email, "")
	if err != nil {
		t.Fatal(err)
	}
	tresp, err := http.PostForm(base+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {back.Location.Query().Get("code")},
		"client_id": {reg.ClientID}, "redirect_uri": {"http://127.0.0.1:43210/cb"}, "code_verifier": {verifier}, "resource": {base + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tresp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := jsonDecode(tresp.Body, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", tresp.StatusCode, err)
	}
	return tok.AccessToken
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
