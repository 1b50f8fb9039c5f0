package sso

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"gopkg.in/yaml.v3"
)

func TestDescriptionIsHeaderSafe(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	c := claimsFor(idp.URL, clk.Now())
	for _, iss := range []string{`https://evil" error="x`, "https://\u00e9vil\\\r\nSet-Cookie: a=b"} {
		_, err := v.Verify(context.Background(), signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(c, "iss", iss)))
		var e *Error
		if !errors.As(err, &e) || e.Kind != WrongIssuer {
			t.Fatalf("err = %v, want WrongIssuer", err)
		}
		if strings.ContainsAny(e.Description, "\"\\\r\n") || strings.ContainsFunc(e.Description, func(r rune) bool { return r > 0x7e }) {
			t.Fatalf("description %q is not header-safe", e.Description)
		}
	}
}

func TestGoogleIssuerWithoutScheme(t *testing.T) {
	clk := newClock()
	v, err := NewVerifier(context.Background(), Config{
		Issuers:    []IssuerConfig{{URL: "https://accounts.google.com", Audiences: []string{"a"}}},
		HTTPClient: &http.Client{Transport: failTransport{}},
		Now:        clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := with(claimsFor("accounts.google.com", clk.Now()), "aud", "a")
	_, err = v.Verify(context.Background(), signJWT(t, jose.RS256, rsaKey(t, 0), "k", c))
	// It picked the Google issuer (and tried to discover it) rather than
	// calling the issuer unknown.
	if !errors.Is(err, ErrIssuerUnavailable) {
		t.Fatalf("err = %v, want IssuerUnavailable from trying accounts.google.com", err)
	}
}

func TestOversizedJWKS(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	idp.hugeJWKS.Store(true)
	v := newTestVerifier(t, idp, clk, nil)
	_, err := v.Verify(context.Background(), signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now())))
	if !errors.Is(err, ErrIssuerUnavailable) || !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("err = %v, want IssuerUnavailable caused by ErrResponseTooLarge", err)
	}
}

func TestParseJWKS(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, _ := json.Marshal(jose.JSONWebKey{Key: &rsaKey(t, 0).PublicKey, KeyID: "rsa", Use: "sig", Algorithm: "RS256"})
	ecKey, _ := json.Marshal(jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "ec"})
	enc, _ := json.Marshal(jose.JSONWebKey{Key: &rsaKey(t, 1).PublicKey, KeyID: "enc", Use: "enc"})
	priv, _ := json.Marshal(jose.JSONWebKey{Key: rsaKey(t, 2), KeyID: "private"})
	sym, _ := json.Marshal(jose.JSONWebKey{Key: []byte("secret-secret-secret"), KeyID: "hmac", Algorithm: "HS256"})
	doc := `{"keys":[{"kty":"future-kty","kid":"x"},` + string(good) + `,` + string(ecKey) + `,` + string(enc) + `,` + string(priv) + `,` + string(sym) + `]}`
	keys, err := parseJWKS([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.KeyID)
	}
	if strings.Join(kids, ",") != "rsa,ec" {
		t.Fatalf("kept keys %v, want rsa,ec (unknown, encryption, private and symmetric keys skipped)", kids)
	}
	for _, bad := range []string{`[]`, `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`, `{"keys":` + strings.Repeat(`{},`, MaxJWKSKeys) + `{}]}`, `nope`} {
		if _, err := parseJWKS([]byte(bad)); err == nil {
			t.Errorf("parseJWKS(%.40s) accepted", bad)
		}
	}
}

func TestConfigFromYAML(t *testing.T) {
	doc := `
issuers:
  - url: https://idp.acme.com
    audiences: [brainstem]
    algorithms: [RS256, ES256]
groups_claim: realm_access.roles
allowed_domains: [acme.com]
clock_skew: 45s
cache_size: 500
cache_ttl: 2m
jwks_refetch_interval: 1m
`
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ClockSkew != 45*time.Second || c.CacheTTL != 2*time.Minute || c.JWKSRefetchInterval != time.Minute ||
		c.CacheSize != 500 || c.GroupsClaim != "realm_access.roles" || c.Issuers[0].Algorithms[1] != "ES256" {
		t.Fatalf("decoded %+v", c)
	}
}

// TestConcurrentFirstUse: many first verifications at once share one
// discovery and one JWKS fetch.
func TestConcurrentFirstUse(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, func(c *Config) { c.CacheSize = -1 })
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now()))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), tok); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d, j := idp.discoveryHits.Load(), idp.jwksHits.Load(); d != 1 || j != 1 {
		t.Fatalf("16 concurrent first verifications: %d discovery and %d JWKS requests, want 1 and 1", d, j)
	}
}

// TestWaitingForDiscoveryHonoursContext: a caller waiting behind a slow
// discovery gives up when its context ends, with IssuerUnavailable, while
// the discovery itself completes for the others.
func TestWaitingForDiscoveryHonoursContext(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	idp.mu.Lock()
	idp.gate, idp.entered = gate, entered
	idp.mu.Unlock()
	v := newTestVerifier(t, idp, clk, nil)
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now()))

	first := make(chan error, 1)
	go func() {
		_, err := v.Verify(context.Background(), tok)
		first <- err
	}()
	<-entered // the first caller is inside discovery, holding the slot

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrIssuerUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting caller: err = %v, want IssuerUnavailable caused by context.Canceled", err)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatalf("first caller: %v", err)
	}
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}
