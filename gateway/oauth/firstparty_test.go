package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	. "github.com/brainstem/brainstem/gateway/oauth"
	"net/http"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/tooling/oauthtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// firstPartyReplica is a server at issuer (not necessarily serving) with
// the env's keys, as one replica behind the gateway's one public URL.
func (e *testEnv) firstPartyReplica(issuer string) *Server {
	t := e.t
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := sso.NewVerifier(ctx, sso.Config{
		Issuers: []sso.IssuerConfig{{URL: e.IdPURL, Audiences: []string{devidp.DefaultClientID}, Algorithms: []string{"RS256"}}},
		Now:     e.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Enabled: true, SigningKeyFile: "unused: keys are given",
		Upstream: UpstreamConfig{Issuer: e.IdPURL, ClientID: devidp.DefaultClientID, ClientSecret: oauthtest.Secret}}
	srv, err := New(ctx, cfg, Options{Issuer: issuer, Resource: issuer + "/mcp", Verifier: v, Keys: e.Keys, Now: e.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestFirstPartyAcrossReplicas: the console's client id is the same on
// every replica; a sign-in started on one completes on another; the code
// is single use; sign-out revokes the token on the replica that handled
// it (and, by design, not on the others: docs/security.md).
func TestFirstPartyAcrossReplicas(t *testing.T) {
	e := newEnv(t, 0, nil)
	ln, issuer := oauthtest.Listen(t)
	a, b := e.firstPartyReplica(issuer), e.firstPartyReplica(issuer)
	redirect := issuer + "/console/callback"
	idA, err := a.RegisterFirstParty("Brainstem console", redirect)
	if err != nil {
		t.Fatal(err)
	}
	if idB, err := b.RegisterFirstParty("Brainstem console", redirect); err != nil || idB != idA {
		t.Fatalf("replicas make different client ids: %v\n%s\n%s", err, idA, idB)
	}
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	codes := make(chan string, 1)
	mux := http.NewServeMux()
	a.Register(mux)
	mux.HandleFunc("GET /console/login", func(w http.ResponseWriter, r *http.Request) {
		a.AuthorizeFirstParty(w, r, idA, redirect, "st-1", challenge)
	})
	mux.HandleFunc("GET /console/callback", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("state") == "st-1" {
			codes <- r.URL.Query().Get("code")
		}
		w.WriteHeader(http.StatusNoContent)
	})
	oauthtest.Serve(t, ln, mux)
	if _, err := testbrowser.New().SignIn(context.Background(), issuer+"/console/login", nil, "alice@example.com", ""); err != nil {
		t.Fatal(err)
	}
	code := <-codes
	if _, err := b.ExchangeFirstParty(context.Background(), idA, redirect, code, "wrong-"+verifier[6:]); !errors.Is(err, ErrFirstParty) {
		t.Fatalf("a wrong verifier: %v", err)
	}
	tok, err := b.ExchangeFirstParty(context.Background(), idA, redirect, code, verifier)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExchangeFirstParty(context.Background(), idA, redirect, code, verifier); !errors.Is(err, ErrFirstParty) {
		t.Fatalf("the code redeemed twice: %v", err)
	}
	for _, s := range []*Server{a, b} {
		if id, err := s.Verify(context.Background(), tok.AccessToken); err != nil || id.Email != "alice@example.com" {
			t.Fatalf("the console's token: %v %v", id, err)
		}
	}
	b.RevokeFirstParty(idA, tok.AccessToken)
	if _, err := b.Verify(context.Background(), tok.AccessToken); err == nil {
		t.Fatal("a revoked token verifies on the replica that revoked it")
	}
	if _, err := a.Verify(context.Background(), tok.AccessToken); err != nil {
		t.Fatalf("the other replica (no shared state, the documented limit): %v", err)
	}
	sealed, err := a.SealFirstParty("p", map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := b.OpenFirstParty("p", sealed, 1000, &out); err != nil || out["k"] != "v" {
		t.Fatalf("a value sealed on one replica does not open on another: %v", err)
	}
	if err := b.OpenFirstParty("other", sealed, 1000, &out); err == nil {
		t.Fatal("a sealed value opens for another purpose")
	}
}

// TestFirstPartyRedirect: the console's redirect URI must be on the
// issuer's origin; https needs no operator redirect_uris entry.
func TestFirstPartyRedirect(t *testing.T) {
	e := newEnv(t, 0, nil)
	s := e.firstPartyReplica("https://brain.example.com")
	if _, err := s.RegisterFirstParty("Brainstem console", "https://brain.example.com/console/callback"); err != nil {
		t.Fatalf("an https console: %v", err)
	}
	for _, bad := range []string{"https://evil.example/console/callback", "http://brain.example.com/console/callback",
		"https://brain.example.com.evil.example/cb", "https://brain.example.com/cb#frag", "https://brain.example.com/a b"} {
		if _, err := s.RegisterFirstParty("Brainstem console", bad); !errors.Is(err, ErrClientID) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if !s.Secure() {
		t.Error("an https issuer is not Secure")
	}
}
