package devidp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/sso"
	"golang.org/x/oauth2"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// The fake clock runs near real time so that x/oauth2, which computes token
// expiry from the wall clock, sees sensible values.
func newClock() *fakeClock { return &fakeClock{t: time.Now().Truncate(time.Second)} }

// serve starts a provider on a loopback listener for the test's lifetime.
func serve(t *testing.T, clk *fakeClock) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := Serve(ctx, ln, Config{Now: clk.Now})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	return p
}

func verifier(t *testing.T, p *Provider, clk *fakeClock) *sso.Verifier {
	t.Helper()
	v, err := sso.NewVerifier(context.Background(), sso.Config{
		Issuers: []sso.IssuerConfig{{URL: p.Issuer(), Audiences: []string{p.ClientID()}}},
		Now:     clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`)

// login drives the login form like a browser: GET the authorization URL,
// read the form's hidden fields, POST them with email and groups, and return
// the redirect it answers with.
func login(t *testing.T, authURL, email, groups string) *url.URL {
	t.Helper()
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET authorize: %s: %s", resp.Status, body)
	}
	form := url.Values{"email": {email}, "groups": {groups}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	action := regexp.MustCompile(`<form method="post" action="([^"]+)">`).FindStringSubmatch(string(body))
	if action == nil {
		t.Fatalf("no form in the login page:\n%s", body)
	}
	resp, err = noRedirect.PostForm(html.UnescapeString(action[1]), form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("POST authorize: %s", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func oauthConfig(p *Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID:    p.ClientID(),
		Endpoint:    oauth2.Endpoint{AuthURL: p.Issuer() + "/authorize", TokenURL: p.Issuer() + "/token"},
		RedirectURL: "http://127.0.0.1:33333/callback",
		Scopes:      []string{"openid", "email", "groups"},
	}
}

func claimsOf(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCodeFlowWithPKCE runs the whole authorization code + PKCE flow with
// x/oauth2 as the client, verifies the tokens with auth/sso, and refreshes.
func TestCodeFlowWithPKCE(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	conf := oauthConfig(p)
	ctx := context.Background()
	ver := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("state-123", oauth2.S256ChallengeOption(ver), oauth2.SetAuthURLParam("nonce", "nonce-9"))

	loc := login(t, authURL, " Ann@Acme.com ", "eng, ops ,, eng")
	q := loc.Query()
	if loc.Host != "127.0.0.1:33333" || loc.Path != "/callback" || q.Get("state") != "state-123" || q.Get("iss") != p.Issuer() || q.Get("code") == "" {
		t.Fatalf("redirect = %s", loc)
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(ver))
	if err != nil {
		t.Fatal(err)
	}
	idToken, _ := tok.Extra("id_token").(string)
	if idToken == "" || tok.AccessToken != idToken || tok.RefreshToken == "" || tok.TokenType != "Bearer" {
		t.Fatalf("token response: access %q id %q refresh %q type %q", tok.AccessToken, idToken, tok.RefreshToken, tok.TokenType)
	}
	if d := time.Until(tok.Expiry); d < 50*time.Minute || d > 61*time.Minute {
		t.Fatalf("expires_in gives expiry in %v, want about the 1h TTL", d)
	}
	c := claimsOf(t, idToken)
	if c["nonce"] != "nonce-9" || c["aud"] != "brainstem" || c["email_verified"] != true {
		t.Fatalf("claims = %v", c)
	}
	id, err := verifier(t, p, clk).Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "ann@acme.com" || !slices.Equal(id.Groups, []string{"eng", "ops"}) || id.Issuer != p.Issuer() {
		t.Fatalf("identity = %+v", id)
	}

	// Refresh: a new token and a rotated refresh token; the old one is dead.
	clk.Add(time.Minute)
	stale := &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Hour)}
	fresh, err := conf.TokenSource(ctx, stale).Token()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.RefreshToken == tok.RefreshToken || fresh.AccessToken == tok.AccessToken {
		t.Fatal("refresh did not rotate the refresh token or mint a new access token")
	}
	if _, err := verifier(t, p, clk).Verify(ctx, fresh.AccessToken); err != nil {
		t.Fatalf("refreshed token: %v", err)
	}
	_, err = conf.TokenSource(ctx, stale).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("reusing a rotated refresh token: err = %v, want invalid_grant", err)
	}
}

func TestTokenEndpointRefusals(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	conf := oauthConfig(p)
	ctx := context.Background()

	newCode := func(ver string) string {
		t.Helper()
		return login(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(ver)), "a@b.c", "").Query().Get("code")
	}
	post := func(form url.Values) (int, string) {
		t.Helper()
		resp, err := http.PostForm(p.Issuer()+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("token response without Cache-Control: no-store")
		}
		return resp.StatusCode, e.Error
	}

	ver := oauth2.GenerateVerifier()
	code := newCode(ver)
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Fatal("wrong PKCE verifier accepted")
	}
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(ver)); err == nil {
		t.Fatal("a code survived a failed exchange: codes must be single-use")
	}

	code = newCode(ver)
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(ver)); err != nil {
		t.Fatal(err)
	}
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(ver)); err == nil {
		t.Fatal("code reused")
	}

	code = newCode(ver)
	clk.Add(CodeTTL)
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(ver)); err == nil {
		t.Fatal("expired code accepted")
	}

	tests := []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"no PKCE verifier", url.Values{"grant_type": {"authorization_code"}, "client_id": {"brainstem"}, "code": {newCode(ver)}, "redirect_uri": {conf.RedirectURL}}, 400, "invalid_grant"},
		{"redirect_uri differs", url.Values{"grant_type": {"authorization_code"}, "client_id": {"brainstem"}, "code": {newCode(ver)}, "redirect_uri": {"http://127.0.0.1:1/other"}, "code_verifier": {ver}}, 400, "invalid_grant"},
		{"unknown client", url.Values{"grant_type": {"authorization_code"}, "client_id": {"evil"}, "code": {newCode(ver)}}, 401, "invalid_client"},
		{"unknown grant", url.Values{"grant_type": {"password"}, "client_id": {"brainstem"}}, 400, "unsupported_grant_type"},
		{"unknown refresh token", url.Values{"grant_type": {"refresh_token"}, "client_id": {"brainstem"}, "refresh_token": {"nope"}}, 400, "invalid_grant"},
	}
	for _, tt := range tests {
		if status, code := post(tt.form); status != tt.status || code != tt.code {
			t.Errorf("%s: %d %q, want %d %q", tt.name, status, code, tt.status, tt.code)
		}
	}
	resp, err := http.Post(p.Issuer()+"/token", "application/x-www-form-urlencoded", strings.NewReader(strings.Repeat("a", MaxFormBytes+1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("oversized form: %s, want 400", resp.Status)
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	challenge := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	good := url.Values{
		"response_type": {"code"}, "client_id": {"brainstem"}, "redirect_uri": {"http://localhost:9/cb"},
		"state": {"s1"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}
	set := func(k, v string) url.Values {
		out := url.Values{}
		for kk, vv := range good {
			out[kk] = vv
		}
		if v == "" {
			out.Del(k)
		} else {
			out.Set(k, v)
		}
		return out
	}
	tests := []struct {
		name      string
		q         url.Values
		status    int
		redirErr  string // OAuth error in the redirect, for 302
		bodyMatch string // for 400 pages
	}{
		{"good", good, 200, "", "Development only"},
		{"ipv6 loopback redirect", set("redirect_uri", "http://[::1]:9/cb"), 200, "", ""},
		{"unknown client", set("client_id", "evil"), 400, "", "unknown client_id"},
		{"remote redirect", set("redirect_uri", "https://evil.example/cb"), 400, "", "not allowed"},
		{"http remote redirect", set("redirect_uri", "http://evil.example/cb"), 400, "", "not allowed"},
		{"lookalike host", set("redirect_uri", "http://127.0.0.1.evil.example/cb"), 400, "", "not allowed"},
		{"no redirect", set("redirect_uri", ""), 400, "", "redirect_uri"},
		{"no PKCE", set("code_challenge", ""), 302, "invalid_request", ""},
		{"plain PKCE", set("code_challenge_method", "plain"), 302, "invalid_request", ""},
		{"short challenge", set("code_challenge", "abc"), 302, "invalid_request", ""},
		{"implicit flow", set("response_type", "token"), 302, "unsupported_response_type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := noRedirect.Get(p.Issuer() + "/authorize?" + tt.q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.redirErr != "" {
				loc, _ := url.Parse(resp.Header.Get("Location"))
				if loc.Query().Get("error") != tt.redirErr || loc.Query().Get("state") != "s1" || loc.Host != "localhost:9" {
					t.Fatalf("redirect %s, want error=%s with the state", loc, tt.redirErr)
				}
			}
			if !strings.Contains(string(body), tt.bodyMatch) {
				t.Fatalf("body lacks %q:\n%s", tt.bodyMatch, body)
			}
			if resp.Header.Get("X-Frame-Options") != "DENY" && tt.status != 302 {
				t.Fatal("page can be framed")
			}
		})
	}
}

func TestLoginFormEscapesAndValidates(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	conf := oauthConfig(p)
	evil := `"><script>alert(1)</script>`
	authURL := conf.AuthCodeURL(evil, oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "<script>") {
		t.Fatalf("state reflected unescaped:\n%s", body)
	}
	// The state survives the round trip intact.
	if got := login(t, authURL, "a@b.c", "").Query().Get("state"); got != evil {
		t.Fatalf("state = %q, want %q", got, evil)
	}
	// A bad email re-renders the form with a 400 and issues no code.
	u, _ := url.Parse(authURL)
	form := u.Query()
	form.Set("email", "not-an-email")
	resp, err = noRedirect.PostForm(p.Issuer()+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "not an email address") {
		t.Fatalf("bad email: %s\n%s", resp.Status, body)
	}
}

func TestDiscoveryJWKSAndNothingElse(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(p.Issuer() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	st, d := get("/.well-known/openid-configuration")
	if st != 200 || d["issuer"] != p.Issuer() || d["jwks_uri"] != p.Issuer()+"/keys" ||
		!slices.Contains(toStrings(d["code_challenge_methods_supported"]), "S256") {
		t.Fatalf("discovery %d %v", st, d)
	}
	st, k := get("/keys")
	keys, _ := k["keys"].([]any)
	if st != 200 || len(keys) != 1 || keys[0].(map[string]any)["alg"] != "RS256" || keys[0].(map[string]any)["d"] != nil {
		t.Fatalf("jwks %d %v", st, k)
	}
	for _, path := range []string{"/", "/register", "/userinfo", "/device", "/.well-known/oauth-authorization-server"} {
		if st, _ := get(path); st != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, st)
		}
	}
	resp, err := http.Get(p.Issuer() + "/token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /token = %d, want 405", resp.StatusCode)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func TestLoopbackOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Serve(context.Background(), ln, Config{}); !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("Serve on %s: err = %v, want ErrNotLoopback", ln.Addr(), err)
	}
	for _, issuer := range []string{"http://example.com", "https://10.0.0.1:5556", "http://0.0.0.0:1"} {
		if _, err := New(Config{Issuer: issuer}); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("New(%s): err = %v, want ErrNotLoopback", issuer, err)
		}
	}
	for _, issuer := range []string{"", "127.0.0.1:5556", "ftp://127.0.0.1", "http://127.0.0.1/?x=1"} {
		if _, err := New(Config{Issuer: issuer}); err == nil {
			t.Errorf("New(%q) accepted a malformed issuer", issuer)
		}
	}
}

// TestIssuerWithPath serves the provider below a path prefix, as behind a
// reverse proxy, and verifies a minted token through discovery.
func TestIssuerWithPath(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	clk := newClock()
	p, err := New(Config{Issuer: "http://" + srv.Listener.Addr().String() + "/dex", Now: clk.Now, ClientID: "gw", TokenTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = p.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	tok, exp, err := p.Mint("Bob@Example.org", []string{"g"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(clk.Now().Add(5 * time.Minute)) {
		t.Fatalf("exp = %v, want now+TokenTTL", exp)
	}
	id, err := verifier(t, p, clk).Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "bob@example.org" || id.Subject != "bob@example.org" {
		t.Fatalf("identity = %+v", id)
	}
}

func TestMint(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	tok, exp, err := p.Mint("c@d.e", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("exp %v", exp)
	}
	c := claimsOf(t, tok)
	for _, k := range []string{"iss", "aud", "sub", "email", "email_verified", "groups", "iat", "exp"} {
		if _, ok := c[k]; !ok {
			t.Errorf("claim %s missing: %v", k, c)
		}
	}
	many := make([]string, MaxGroups+1)
	for i := range many {
		many[i] = "g"
	}
	bad := []struct {
		name   string
		email  string
		groups []string
		ttl    time.Duration
	}{
		{"no at", "nobody", nil, 0},
		{"empty", "", nil, 0},
		{"angle brackets", "<a@b.c>", nil, 0},
		{"too many groups", "a@b.c", many, 0},
		{"negative ttl", "a@b.c", nil, -time.Second},
	}
	for _, tt := range bad {
		if _, _, err := p.Mint(tt.email, tt.groups, tt.ttl); err == nil || !strings.HasPrefix(err.Error(), "devidp: ") {
			t.Errorf("%s: err = %v, want a devidp: error", tt.name, err)
		}
	}
	// Expired tokens from the provider are refused by the verifier.
	short, _, _ := p.Mint("c@d.e", nil, time.Second)
	clk.Add(time.Second + sso.DefaultClockSkew)
	if _, err := verifier(t, p, clk).Verify(context.Background(), short); !errors.Is(err, sso.ErrExpired) {
		t.Fatalf("expired devidp token: err = %v, want Expired", err)
	}
}

// TestCodeSingleUseUnderRace: eight concurrent exchanges of one code, and
// eight of one refresh token, each yield exactly one success.
func TestCodeSingleUseUnderRace(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	conf := oauthConfig(p)
	ctx := context.Background()
	ver := oauth2.GenerateVerifier()
	code := login(t, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(ver)), "a@b.c", "").Query().Get("code")

	race := func(do func() (*oauth2.Token, error)) (wins int, tok *oauth2.Token) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if got, err := do(); err == nil {
					mu.Lock()
					wins++
					tok = got
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return wins, tok
	}
	wins, tok := race(func() (*oauth2.Token, error) { return conf.Exchange(ctx, code, oauth2.VerifierOption(ver)) })
	if wins != 1 {
		t.Fatalf("one code exchanged %d times", wins)
	}
	stale := &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Hour)}
	if wins, _ := race(func() (*oauth2.Token, error) { return conf.TokenSource(ctx, stale).Token() }); wins != 1 {
		t.Fatalf("one refresh token used %d times", wins)
	}
}
