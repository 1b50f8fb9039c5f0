package oauthtest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth"
)

// Secret is the upstream client secret the IdP and the replicas share.
const Secret = "upstream-client-secret"

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Grants builds the grants of a replica's server; the harness adds them
// (Server.Add, in the order given) before the server serves.
type Grants func(ctx context.Context, srv *oauth.Server) ([]oauth.Grant, error)

// Env is an IdP and one or more replicas of the authorization server
// sharing a key.
type Env struct {
	t        *testing.T
	grants   Grants
	Clock    *Clock
	IdP      *devidp.Provider
	IdPURL   string
	StopIdP  func()
	Keys     []auth.KeyPair
	Replicas []*Replica
}

// Replica is one authorization server and the grants added to it.
type Replica struct {
	Srv    *oauth.Server
	URL    string // the issuer: http://127.0.0.1:port
	Grants []oauth.Grant
}

// Serve serves h on ln until the test ends; the returned func stops it
// earlier.
func Serve(t *testing.T, ln net.Listener, h http.Handler) (stop func()) {
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

// Listen opens a loopback listener and returns it with its base URL.
func Listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// NewEnv starts the IdP and n replicas, each with the grants built by
// grants (nil: none); mutate adjusts each replica's configuration.
func NewEnv(t *testing.T, n int, mutate func(*oauth.Config), grants Grants) *Env {
	t.Helper()
	e := &Env{t: t, grants: grants, Clock: &Clock{t: time.Now().Truncate(time.Second)}}
	ln, u := Listen(t)
	idp, err := devidp.New(devidp.Config{Issuer: u, ClientSecret: Secret, Now: e.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.StopIdP = Serve(t, ln, idp.Handler())
	e.IdP, e.IdPURL = idp, u
	k, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	e.Keys = []auth.KeyPair{k}
	for range n {
		e.AddReplica(mutate)
	}
	return e
}

// AddReplica starts one more replica with the environment's grants.
func (e *Env) AddReplica(mutate func(*oauth.Config)) *Replica {
	return e.AddReplicaWith(mutate, nil)
}

// AddReplicaWith is AddReplica with its options adjusted by opts.
func (e *Env) AddReplicaWith(mutate func(*oauth.Config), opts func(*oauth.Options)) *Replica {
	ln, u := Listen(e.t)
	r := e.ReplicaAt(ln, u, mutate, opts, e.grants)
	e.Replicas = append(e.Replicas, r)
	return r
}

// ReplicaAt starts a replica serving on ln with issuer u and the grants
// built by grants (nil: none); it is not added to Replicas.
func (e *Env) ReplicaAt(ln net.Listener, u string, mutate func(*oauth.Config), opts func(*oauth.Options), grants Grants) *Replica {
	t := e.t
	cfg := oauth.Config{
		Enabled:        true,
		SigningKeyFile: "unused: keys are given",
		Upstream:       oauth.UpstreamConfig{Issuer: e.IdPURL, ClientID: devidp.DefaultClientID, ClientSecret: Secret},
		ClientMetadata: oauth.ClientMetadataConfig{AllowLoopback: true},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := sso.NewVerifier(ctx, sso.Config{
		Issuers: []sso.IssuerConfig{{URL: e.IdPURL, Audiences: []string{devidp.DefaultClientID}, Algorithms: []string{"RS256"}}},
		Now:     e.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	opt := oauth.Options{Issuer: u, Resource: u + "/mcp", Verifier: v, Keys: e.Keys, Now: e.Clock.Now}
	if opts != nil {
		opts(&opt)
	}
	srv, err := oauth.New(ctx, cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	r := &Replica{Srv: srv, URL: u}
	if grants != nil {
		if r.Grants, err = grants(ctx, srv); err != nil {
			t.Fatal(err)
		}
		if err := srv.Add(r.Grants...); err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	srv.Register(mux)
	Serve(t, ln, mux)
	return r
}
