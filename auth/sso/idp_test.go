package sso

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// fakeClock is an injected clock moved by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// testIdP is a real OIDC discovery + JWKS server on loopback whose keys,
// health and request counts the test controls, for hand-made tokens.
type testIdP struct {
	srv *httptest.Server
	URL string

	mu   sync.Mutex
	keys map[string]*rsa.PrivateKey // kid → key published in the JWKS

	gate    chan struct{} // when set (under mu), discovery waits for it to close
	entered chan struct{} // receives once per gated discovery request

	discoveryHits, jwksHits           atomic.Int64
	failDiscovery, failJWKS, hugeJWKS atomic.Bool
}

func newTestIdP(t testing.TB) *testIdP {
	t.Helper()
	idp := &testIdP{keys: map[string]*rsa.PrivateKey{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		idp.discoveryHits.Add(1)
		idp.mu.Lock()
		gate, entered := idp.gate, idp.entered
		idp.mu.Unlock()
		if gate != nil {
			entered <- struct{}{}
			<-gate
		}
		if idp.failDiscovery.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": idp.URL, "jwks_uri": idp.URL + "/jwks", "authorization_endpoint": idp.URL + "/auth",
			"token_endpoint": idp.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		idp.jwksHits.Add(1)
		if idp.failJWKS.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		if idp.hugeJWKS.Load() {
			// Valid JSON, but over MaxResponseBytes.
			_, _ = w.Write([]byte(strings.Repeat(" ", MaxResponseBytes)))
			_, _ = w.Write([]byte(`{"keys":[]}`))
			return
		}
		idp.mu.Lock()
		set := jose.JSONWebKeySet{}
		for kid, k := range idp.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
		}
		idp.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
	idp.srv = httptest.NewServer(mux)
	idp.URL = idp.srv.URL
	t.Cleanup(idp.srv.Close)
	return idp
}

var (
	keyOnce sync.Once
	keyPool []*rsa.PrivateKey
)

// rsaKey returns one of a few RSA keys generated once per test binary
// (RSA-2048 generation is slow under -race).
func rsaKey(t testing.TB, i int) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		for range 3 {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keyPool = append(keyPool, k)
		}
	})
	return keyPool[i]
}

func (idp *testIdP) publish(kid string, k *rsa.PrivateKey) {
	idp.mu.Lock()
	idp.keys[kid] = k
	idp.mu.Unlock()
}

func (idp *testIdP) unpublish(kid string) {
	idp.mu.Lock()
	delete(idp.keys, kid)
	idp.mu.Unlock()
}

// signJWT signs claims with any algorithm, key and kid.
func signJWT(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unsignedJWT builds an alg "none" token.
func unsignedJWT(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

func publicKeyPEM(k *rsa.PrivateKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func claimsFor(iss string, now time.Time) map[string]any {
	return map[string]any{
		"iss": iss, "aud": "brainstem", "sub": "u-1", "email": " Ann@Acme.COM ", "email_verified": true,
		"groups": []string{"eng", "ops"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

func with(m map[string]any, key string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, val := range m {
		out[k] = val
	}
	out[key] = v
	return out
}

func without(m map[string]any, key string) map[string]any {
	out := with(m, key, nil)
	delete(out, key)
	return out
}

// newTestVerifier builds a Verifier for idp with the fake clock; mutate
// adjusts the config.
func newTestVerifier(t testing.TB, idp *testIdP, clk *fakeClock, mutate func(*Config)) *Verifier {
	t.Helper()
	cfg := Config{
		Issuers:    []IssuerConfig{{URL: idp.URL, Audiences: []string{"brainstem", "other-client"}}},
		Now:        clk.Now,
		HTTPClient: idp.srv.Client(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := NewVerifier(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
