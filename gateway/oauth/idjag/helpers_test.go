package idjag

// Test harness: a real development IdP (auth/devidp) as the upstream, the
// real SSO verifier (auth/sso) for its ID tokens, and the authorization
// server on a loopback listener, driven by a scripted browser
// (tooling/testbrowser) and plain HTTP token requests. One clock is shared
// by all three so tests can step over expiries.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/device"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
)

// The core's names, as this package's tests use them.
type (
	Config               = oauth.Config
	UpstreamConfig       = oauth.UpstreamConfig
	ClientMetadataConfig = oauth.ClientMetadataConfig
	ServiceAccount       = oauth.ServiceAccount
	Credential           = oauth.Credential
	EnterpriseConfig     = oauth.EnterpriseConfig
	EnterpriseIdP        = oauth.EnterpriseIdP
)

const (
	PathToken     = oauth.PathToken
	PathRegister  = oauth.PathRegister
	PathAuthorize = oauth.PathAuthorize
	PathCallback  = oauth.PathCallback
	Scope         = oauth.Scope
	LoginTTL      = config.LoginTTL

	DefaultAccessTokenTTL         = config.DefaultAccessTokenTTL
	DefaultServiceAccountTokenTTL = config.DefaultServiceAccountTokenTTL
	AccessClockSkew               = oauth.AccessClockSkew
	GrantTypeDevice               = oauth.GrantTypeDevice
)

var RandomString = oauth.RandomString

// testOptions are the server's options and the assertions'.
type testOptions struct {
	oauth.Options
	Assertions Options
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
	jag *Grant
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
func (e *testEnv) addReplicaWith(mutate func(*Config), opts func(*testOptions)) *replica {
	ln, u := listen(e.t)
	r := e.replicaAt(ln, u, mutate, opts)
	e.replicas = append(e.replicas, r)
	return r
}

// replicaAt starts a replica serving on ln with issuer u.
func (e *testEnv) replicaAt(ln net.Listener, u string, mutate func(*Config), opts func(*testOptions)) *replica {
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
	opt := testOptions{Options: oauth.Options{Issuer: u, Resource: u + "/mcp", Verifier: v, Keys: e.keys, Now: e.clock.Now}}
	if opts != nil {
		opts(&opt)
	}
	srv, err := oauth.New(ctx, cfg, opt.Options)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{srv: srv, url: u}
	dev, err := device.New(srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	machines, err := machine.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	if r.jag, err = New(ctx, srv, machines, opt.Assertions); err != nil {
		t.Fatal(err)
	}
	if err := srv.Add(dev, machines, r.jag); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	serve(t, ln, mux)
	return r
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

// newSecret is a random client secret of a service account.
func newSecret(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// secretHash is the configured form of a secret.
func secretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
