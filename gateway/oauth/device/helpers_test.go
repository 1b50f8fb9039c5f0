package device

// Test harness: a real development IdP (auth/devidp) as the upstream, the
// real SSO verifier (auth/sso) for its ID tokens, and the authorization
// server on a loopback listener, driven by a scripted browser
// (tooling/testbrowser) and plain HTTP token requests. One clock is shared
// by all three so tests can step over expiries.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
)

// The core's names, as this package's tests use them.
type (
	Config               = oauth.Config
	UpstreamConfig       = oauth.UpstreamConfig
	ClientMetadataConfig = oauth.ClientMetadataConfig
)

const (
	PathToken     = oauth.PathToken
	PathRegister  = oauth.PathRegister
	PathAuthorize = oauth.PathAuthorize
	PathCallback  = oauth.PathCallback
	Scope         = oauth.Scope
	LoginTTL      = config.LoginTTL
)

var RandomString = oauth.RandomString

// Options are the server's options and the device grant's peers.
type Options struct {
	oauth.Options
	Peers *Peers
}

const testSecret = "upstream-client-secret"

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testEnv is an IdP and one or more replicas of the authorization server
// sharing a key.
type testEnv struct {
	t        *testing.T
	clock    *clock
	idp      *devidp.Provider
	idpURL   string
	stopIdP  func()
	keys     []auth.KeyPair
	replicas []*replica
}

type replica struct {
	srv *oauth.Server
	dev *Grant
	url string // the issuer: http://127.0.0.1:port
}

// serve serves h on ln until the test ends; the returned func stops it
// earlier.
func serve(t *testing.T, ln net.Listener, h http.Handler) (stop func()) {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = srv.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// newEnv starts the IdP and n replicas; mutate adjusts each replica's
// configuration.
func newEnv(t *testing.T, n int, mutate func(*Config)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, clock: &clock{t: time.Now().Truncate(time.Second)}}
	ln, u := listen(t)
	idp, err := devidp.New(devidp.Config{Issuer: u, ClientSecret: testSecret, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.stopIdP = serve(t, ln, idp.Handler())
	e.idp, e.idpURL = idp, u
	k, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	e.keys = []auth.KeyPair{k}
	for range n {
		e.addReplica(mutate)
	}
	return e
}

func (e *testEnv) addReplica(mutate func(*Config)) *replica {
	return e.addReplicaWith(mutate, nil)
}

// addReplicaWith is addReplica with its options adjusted by opts.
func (e *testEnv) addReplicaWith(mutate func(*Config), opts func(*Options)) *replica {
	ln, u := listen(e.t)
	r := e.replicaAt(ln, u, mutate, opts)
	e.replicas = append(e.replicas, r)
	return r
}

// replicaAt starts a replica serving on ln with issuer u.
func (e *testEnv) replicaAt(ln net.Listener, u string, mutate func(*Config), opts func(*Options)) *replica {
	t := e.t
	cfg := Config{
		Enabled:        true,
		SigningKeyFile: "unused: keys are given",
		Upstream:       UpstreamConfig{Issuer: e.idpURL, ClientID: devidp.DefaultClientID, ClientSecret: testSecret},
		ClientMetadata: ClientMetadataConfig{AllowLoopback: true},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := sso.NewVerifier(ctx, sso.Config{
		Issuers: []sso.IssuerConfig{{URL: e.idpURL, Audiences: []string{devidp.DefaultClientID}, Algorithms: []string{"RS256"}}},
		Now:     e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Options: oauth.Options{Issuer: u, Resource: u + "/mcp", Verifier: v, Keys: e.keys, Now: e.clock.Now}}
	if opts != nil {
		opts(&opt)
	}
	srv, err := oauth.New(ctx, cfg, opt.Options)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{srv: srv, url: u}
	var err2 error
	if r.dev, err2 = New(srv, opt.Peers); err2 != nil {
		t.Fatal(err2)
	}
	if err := srv.Add(r.dev); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	serve(t, ln, mux)
	return r
}

// app is an MCP client: its redirect URI, PKCE pair and client id.
type app struct {
	id        string
	redirect  string
	verifier  string
	challenge string
}

func newApp(id, redirect string) *app {
	v := RandomString(32)
	sum := sha256.Sum256([]byte(v))
	return &app{id: id, redirect: redirect, verifier: v, challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

// register registers a client with body at replica r.
func (e *testEnv) register(r *replica, body string) (int, map[string]any) {
	e.t.Helper()
	resp, err := http.Post(r.url+PathRegister, "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// registeredApp registers a loopback client and returns it.
func (e *testEnv) registeredApp(r *replica) *app {
	e.t.Helper()
	st, out := e.register(r, `{"client_name":"Test App","redirect_uris":["http://127.0.0.1/callback"]}`)
	if st != http.StatusCreated {
		e.t.Fatalf("register: %d %v", st, out)
	}
	return newApp(out["client_id"].(string), "http://127.0.0.1:43210/callback")
}

// authorizeURL is the authorization request of a at r, with extra
// parameters set (an empty value deletes one).
func (a *app) authorizeURL(r *replica, extra map[string]string) string {
	q := url.Values{
		"response_type": {"code"}, "client_id": {a.id}, "redirect_uri": {a.redirect},
		"code_challenge": {a.challenge}, "code_challenge_method": {"S256"}, "state": {"st-123"},
		"resource": {r.url + "/mcp"}, "scope": {Scope},
	}
	for k, v := range extra {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return r.url + PathAuthorize + "?" + q.Encode()
}

// token posts a token request to r.
func (e *testEnv) token(r *replica, form url.Values) (int, map[string]any) {
	e.t.Helper()
	resp, err := http.PostForm(r.url+PathToken, form)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("token: %d %s", resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// wantTokenError checks an error answer's status and code.
func wantTokenError(t *testing.T, status int, out map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || out["error"] != wantCode {
		t.Fatalf("got %d %v, want %d %s", status, out, wantStatus, wantCode)
	}
}

// identityOf verifies an access token at r.
func identityOf(t *testing.T, r *replica, at string) (auth.Identity, error) {
	t.Helper()
	if !r.srv.Handles(at) {
		return auth.Identity{}, errors.New("not handled")
	}
	return r.srv.Verify(context.Background(), at)
}

// refusingVerifier is an IdP verifier for servers that never redeem a code.
type refusingVerifier struct{}

func (refusingVerifier) Verify(context.Context, string) (auth.Identity, error) {
	return auth.Identity{}, errors.New("no IdP in this test")
}

// bareServer is a server with a fresh key and no IdP (New makes no network
// call), each request counted against an address of its own: the
// per-address budgets are not under test.
func bareServer(tb testing.TB, mutate func(*Config)) *oauth.Server {
	tb.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{
		Enabled: true, SigningKeyFile: "unused",
		Upstream:       UpstreamConfig{Issuer: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s"},
		ClientMetadata: ClientMetadataConfig{Disabled: true}, // no fetches from fuzzed client ids
	}
	if mutate != nil {
		mutate(&cfg)
	}
	var n atomic.Int64
	s, err := oauth.New(context.Background(), cfg, oauth.Options{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp",
		Verifier: refusingVerifier{}, Keys: []auth.KeyPair{k},
		ClientIP: func(*http.Request) string { return "addr-" + strconv.FormatInt(n.Add(1), 10) }})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// registered registers a client with srv (POST /register) and returns it.
func registered(tb testing.TB, srv *oauth.Server, body string) *oauth.Client {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, PathRegister, strings.NewReader(body))
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
