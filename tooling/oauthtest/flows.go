package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// App is an MCP client: its redirect URI, PKCE pair and client id.
type App struct {
	ID        string
	Redirect  string
	Verifier  string
	Challenge string
}

// NewApp is the client id with redirect and a fresh PKCE pair.
func NewApp(id, redirect string) *App {
	v := oauth.RandomString(32)
	sum := sha256.Sum256([]byte(v))
	return &App{ID: id, Redirect: redirect, Verifier: v, Challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

// Post sends a request built by do and decodes its JSON answer; what
// names the request in a failure.
func (e *Env) Post(what string, do func() (*http.Response, error)) (int, map[string]any) {
	e.t.Helper()
	resp, err := do()
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s: %d %s", what, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// Register registers a client with body at replica r.
func (e *Env) Register(r *Replica, body string) (int, map[string]any) {
	e.t.Helper()
	return e.Post("register", func() (*http.Response, error) {
		return http.Post(r.URL+oauth.PathRegister, "application/json", strings.NewReader(body))
	})
}

// RegisteredApp registers a loopback client and returns it.
func (e *Env) RegisteredApp(r *Replica) *App {
	e.t.Helper()
	st, out := e.Register(r, `{"client_name":"Test App","redirect_uris":["http://127.0.0.1/callback"]}`)
	if st != http.StatusCreated {
		e.t.Fatalf("register: %d %v", st, out)
	}
	return NewApp(out["client_id"].(string), "http://127.0.0.1:43210/callback")
}

// AuthorizeURL is the authorization request of a at r, with extra
// parameters set (an empty value deletes one).
func (a *App) AuthorizeURL(r *Replica, extra map[string]string) string {
	q := url.Values{
		"response_type": {"code"}, "client_id": {a.ID}, "redirect_uri": {a.Redirect},
		"code_challenge": {a.Challenge}, "code_challenge_method": {"S256"}, "state": {"st-123"},
		"resource": {r.URL + "/mcp"}, "scope": {oauth.Scope},
	}
	for k, v := range extra {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return r.URL + oauth.PathAuthorize + "?" + q.Encode()
}

// SignIn drives the browser from an authorization URL through consent
// (when asked) and the IdP's login form to the client's redirect, and
// returns that redirect's URL.
func (e *Env) SignIn(b *testbrowser.Browser, authURL, email, groups string) *url.URL {
	e.t.Helper()
	isApp := func(u *url.URL) bool { return u.Port() == "43210" }
	back, err := b.SignIn(context.Background(), authURL, isApp, email, groups)
	if err != nil {
		e.t.Fatal(err)
	}
	return back.Location
}

// Code signs in and returns the authorization code.
func (e *Env) Code(b *testbrowser.Browser, r *Replica, a *App, email string) string {
	e.t.Helper()
	back := e.SignIn(b, a.AuthorizeURL(r, nil), email, "")
	q := back.Query()
	if q.Get("error") != "" || q.Get("code") == "" {
		e.t.Fatalf("no code: %s", back)
	}
	if q.Get("state") != "st-123" || q.Get("iss") != r.URL {
		e.t.Fatalf("state or iss not echoed: %s", back)
	}
	return q.Get("code")
}

// Redeem is the token request that redeems code.
func (a *App) Redeem(code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {a.ID},
		"redirect_uri": {a.Redirect}, "code_verifier": {a.Verifier}}
}

// Refresh is the token request that refreshes with rt.
func (a *App) Refresh(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {a.ID}}
}

// Token posts a token request to r.
func (e *Env) Token(r *Replica, form url.Values) (int, map[string]any) {
	e.t.Helper()
	return e.Post("token", func() (*http.Response, error) { return http.PostForm(r.URL+oauth.PathToken, form) })
}

// WantTokenError checks an error answer's status and code.
func WantTokenError(t testing.TB, status int, out map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || out["error"] != wantCode {
		t.Fatalf("got %d %v, want %d %s", status, out, wantStatus, wantCode)
	}
}

// IdentityOf verifies an access token at r.
func IdentityOf(t testing.TB, r *Replica, at string) (auth.Identity, error) {
	t.Helper()
	if !r.Srv.Handles(at) {
		return auth.Identity{}, errors.New("not handled")
	}
	return r.Srv.Verify(context.Background(), at)
}

// RefusingVerifier is an IdP verifier for servers that never redeem a code.
type RefusingVerifier struct{}

// Verify refuses every ID token.
func (RefusingVerifier) Verify(context.Context, string) (auth.Identity, error) {
	return auth.Identity{}, errors.New("no IdP in this test")
}

// BareServer is a server with a fresh key and no IdP (New makes no network
// call), each request counted against an address of its own: the
// per-address budgets are not under test.
func BareServer(tb testing.TB, mutate func(*oauth.Config)) *oauth.Server {
	tb.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	cfg := oauth.Config{
		Enabled: true, SigningKeyFile: "unused",
		Upstream:       oauth.UpstreamConfig{Issuer: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s"},
		ClientMetadata: oauth.ClientMetadataConfig{Disabled: true}, // no fetches from fuzzed client ids
	}
	if mutate != nil {
		mutate(&cfg)
	}
	var n atomic.Int64
	s, err := oauth.New(context.Background(), cfg, oauth.Options{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp",
		Verifier: RefusingVerifier{}, Keys: []auth.KeyPair{k},
		ClientIP: func(*http.Request) string { return "addr-" + strconv.FormatInt(n.Add(1), 10) }})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Registered registers a client with srv (POST /register) and returns it.
func Registered(tb testing.TB, srv *oauth.Server, body string) *oauth.Client {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, oauth.PathRegister, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.Endpoints().ServeHTTP(w, req)
	var out struct {
		ID string `json:"client_id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.ID == "" {
		tb.Fatalf("register: %d %s", w.Code, w.Body)
	}
	return &oauth.Client{ID: out.ID}
}

// NewSecret is a random client secret of a service account.
func NewSecret(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// SecretHash is the configured form of a secret.
func SecretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
