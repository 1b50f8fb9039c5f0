package sso

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestTokenMatrix feeds hand-made tokens to a Verifier backed by a real
// discovery/JWKS server and checks the kind, OAuth code and status of each
// refusal.
func TestTokenMatrix(t *testing.T) {
	clk := newClock()
	now := clk.Now()
	idp := newTestIdP(t)
	good, attacker := rsaKey(t, 0), rsaKey(t, 1)
	idp.publish("k1", good)
	c := claimsFor(idp.URL, now)
	sign := func(claims map[string]any) string { return signJWT(t, jose.RS256, good, "k1", claims) }
	valid := sign(c)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + strings.Split(sign(with(c, "email", "eve@acme.com")), ".")[1] + "." + parts[2]

	tests := []struct {
		name   string
		token  string
		mutate func(*Config)
		kind   Kind // 0 = must verify
		code   string
		status int
	}{
		{"valid", valid, nil, 0, "", 0},
		{"email_verified string true", sign(with(c, "email_verified", "true")), nil, 0, "", 0},
		{"aud list containing ours", sign(with(c, "aud", []string{"x", "other-client"})), nil, 0, "", 0},
		{"expired within skew", sign(with(c, "exp", now.Add(-10*time.Second).Unix())), nil, 0, "", 0},
		{"nbf within skew", sign(with(c, "nbf", now.Add(10*time.Second).Unix())), nil, 0, "", 0},
		// go-oidc's nbf check has a fixed 5-minute leeway; ClockSkew (up to
		// 5m) is the one that applies (checkTimes).
		{"nbf within a 4-minute skew", sign(with(c, "nbf", now.Add(3*time.Minute).Unix())), func(c *Config) { c.ClockSkew = 4 * time.Minute }, 0, "", 0},
		{"nbf beyond a 4-minute skew", sign(with(c, "nbf", now.Add(5*time.Minute).Unix())), func(c *Config) { c.ClockSkew = 4 * time.Minute }, NotYetValid, "invalid_token", 401},
		{"no kid, single key", signJWT(t, jose.RS256, good, "", c), nil, 0, "", 0},
		{"allowed domain", valid, func(c *Config) { c.AllowedDomains = []string{"ACME.com"} }, 0, "", 0},

		{"alg none", unsignedJWT(t, "k1", c), nil, BadSignature, "invalid_token", 401},
		{"HS256 keyed with the RSA public key PEM", signJWT(t, jose.HS256, publicKeyPEM(good), "k1", c), nil, BadSignature, "invalid_token", 401},
		{"RS384 when pinned to RS256", signJWT(t, jose.RS384, good, "k1", c), nil, BadSignature, "invalid_token", 401},
		{"RS256 when pinned to ES256", valid, func(c *Config) { c.Issuers[0].Algorithms = []string{"ES256"} }, BadSignature, "invalid_token", 401},
		{"signed by another key under a known kid", signJWT(t, jose.RS256, attacker, "k1", c), nil, BadSignature, "invalid_token", 401},
		{"unknown kid", signJWT(t, jose.RS256, attacker, "forged", c), nil, BadSignature, "invalid_token", 401},
		{"attacker key embedded as jwk", func() string {
			s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: attacker}, (&jose.SignerOptions{EmbedJWK: true}).WithType("JWT"))
			if err != nil {
				t.Fatal(err)
			}
			payload, _ := json.Marshal(c)
			jws, _ := s.Sign(payload)
			out, _ := jws.CompactSerialize()
			return out
		}(), nil, BadSignature, "invalid_token", 401},
		{"tampered payload", tampered, nil, BadSignature, "invalid_token", 401},
		{"wrong issuer", sign(with(c, "iss", "https://evil.example")), nil, WrongIssuer, "invalid_token", 401},
		{"issuer with trailing slash", sign(with(c, "iss", idp.URL+"/")), nil, WrongIssuer, "invalid_token", 401},
		{"no issuer", sign(without(c, "iss")), nil, WrongIssuer, "invalid_token", 401},
		{"wrong audience", sign(with(c, "aud", "some-other-app")), nil, WrongAudience, "invalid_token", 401},
		{"no audience", sign(without(c, "aud")), nil, WrongAudience, "invalid_token", 401},
		{"expired", sign(with(c, "exp", now.Add(-DefaultClockSkew).Unix())), nil, Expired, "invalid_token", 401},
		{"expired, zero skew", sign(with(c, "exp", now.Add(-time.Second).Unix())), func(c *Config) { c.ClockSkew = time.Nanosecond }, Expired, "invalid_token", 401},
		{"nbf in the future", sign(with(c, "nbf", now.Add(time.Minute).Unix())), nil, NotYetValid, "invalid_token", 401},
		{"iat in the future", sign(with(c, "iat", now.Add(time.Hour).Unix())), nil, NotYetValid, "invalid_token", 401},
		{"no exp", sign(without(c, "exp")), nil, MalformedToken, "invalid_token", 401},
		{"exp a string", sign(with(c, "exp", "tomorrow")), nil, MalformedToken, "invalid_token", 401},
		{"missing email", sign(without(c, "email")), nil, EmailMissing, "invalid_token", 401},
		{"empty email", sign(with(c, "email", "  ")), nil, EmailMissing, "invalid_token", 401},
		{"email not an address", sign(with(c, "email", "ann")), nil, EmailMissing, "invalid_token", 401},
		{"email_verified false", sign(with(c, "email_verified", false)), nil, EmailUnverified, "insufficient_scope", 403},
		{"email_verified string false", sign(with(c, "email_verified", "false")), nil, EmailUnverified, "insufficient_scope", 403},
		{"email_verified absent", sign(without(c, "email_verified")), nil, EmailUnverified, "insufficient_scope", 403},
		{"email_verified null", sign(with(c, "email_verified", nil)), nil, EmailUnverified, "insufficient_scope", 403},
		{"email_verified yes", sign(with(c, "email_verified", "yes")), nil, MalformedToken, "invalid_token", 401},
		{"email_verified 1", sign(with(c, "email_verified", 1)), nil, MalformedToken, "invalid_token", 401},
		{"trust_email: email_verified absent", sign(without(c, "email_verified")), func(c *Config) { c.Issuers[0].TrustEmail = true }, 0, "", 0},
		{"trust_email: email_verified false", sign(with(c, "email_verified", false)), func(c *Config) { c.Issuers[0].TrustEmail = true }, EmailUnverified, "insufficient_scope", 403},
		{"trust_email: email still required", sign(without(without(c, "email_verified"), "email")), func(c *Config) { c.Issuers[0].TrustEmail = true }, EmailMissing, "invalid_token", 401},
		{"domain not allowed", valid, func(c *Config) { c.AllowedDomains = []string{"acme.io"} }, DomainNotAllowed, "insufficient_scope", 403},
		{"service account domain is reserved", sign(with(c, "email", "ci@clients.brainstem.invalid")), nil, DomainNotAllowed, "insufficient_scope", 403},
		{"service account domain is reserved, any case", sign(with(c, "email", "Ann@CLIENTS.brainstem.invalid")), nil, DomainNotAllowed, "insufficient_scope", 403},
		{"subdomain is not the domain", sign(with(c, "email", "ann@eu.acme.com")), func(c *Config) { c.AllowedDomains = []string{"acme.com"} }, DomainNotAllowed, "insufficient_scope", 403},
		{"not a JWT", "hello", nil, MalformedToken, "invalid_token", 401},
		{"four parts", valid + ".x", nil, MalformedToken, "invalid_token", 401},
		{"header not base64", "%%%." + parts[1] + "." + parts[2], nil, MalformedToken, "invalid_token", 401},
		{"too large", valid + strings.Repeat("A", MaxTokenBytes), nil, MalformedToken, "invalid_token", 401},
		{"empty", "", nil, NoToken, "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestVerifier(t, idp, clk, tt.mutate)
			id, err := v.Verify(context.Background(), tt.token)
			if tt.kind == 0 {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if id.Email != "ann@acme.com" && id.Email != "ann@eu.acme.com" {
					t.Fatalf("email = %q, want the canonical address", id.Email)
				}
				if id.Issuer != idp.URL || id.Subject != "u-1" || id.Expiry.IsZero() {
					t.Fatalf("identity = %+v", id)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify err = %v (%T), want *Error of kind %v", err, err, tt.kind)
			}
			if e.Kind != tt.kind {
				t.Fatalf("kind = %v, want %v (err: %v)", e.Kind, tt.kind, err)
			}
			if e.OAuthCode() != tt.code || e.HTTPStatus() != tt.status {
				t.Fatalf("maps to %q/%d, want %q/%d", e.OAuthCode(), e.HTTPStatus(), tt.code, tt.status)
			}
			if !errors.Is(err, tt.kind.sentinel()) {
				t.Fatalf("errors.Is(err, %v sentinel) = false", tt.kind)
			}
			if !strings.HasPrefix(err.Error(), "sso: ") || e.Description == "" {
				t.Fatalf("error %q lacks the prefix or a description", err)
			}
			if id.Email != "" {
				t.Fatalf("identity returned with an error: %+v", id)
			}
		})
	}
}

// TestUnknownKidBoundedFetches proves 1,000 forged tokens with unknown key
// ids cause at most two JWKS fetches, and that the limit is per interval,
// not forever. Each is refused: 401 when a set fetched after it arrived
// lacks its kid, else 503 with Retry-After (its kid might be new).
func TestUnknownKidBoundedFetches(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	c := claimsFor(idp.URL, clk.Now())
	// A forger cannot sign for a kid it does not hold; the signature part is
	// whatever it likes. Each token names a different unknown kid.
	parts := strings.Split(signJWT(t, jose.RS256, rsaKey(t, 1), "x", c), ".")
	tokens := make([]string, 1000)
	for i := range tokens {
		h := fmt.Sprintf(`{"alg":"RS256","typ":"JWT","kid":"forged-%d"}`, i)
		tokens[i] = base64.RawURLEncoding.EncodeToString([]byte(h)) + "." + parts[1] + "." + parts[2]
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(tokens))
	var bad atomic.Int64
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(tokens); i += 8 {
				_, err := v.Verify(context.Background(), tokens[i])
				var e *Error
				switch {
				case errors.Is(err, ErrBadSignature):
					bad.Add(1)
				case errors.As(err, &e) && e.Kind == IssuerUnavailable && e.RetryAfter > 0 && e.RetryAfter <= DefaultJWKSRefetchInterval:
				default:
					errs <- fmt.Errorf("token %d: err = %v, want BadSignature or IssuerUnavailable with Retry-After", i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if bad.Load() == 0 {
		t.Fatal("no forged token was refused as a bad signature after the fetch")
	}
	if n := idp.jwksHits.Load(); n < 1 || n > 2 {
		t.Fatalf("1000 forged tokens caused %d JWKS fetches, want 1..2", n)
	}
	if n := v.Stats().JWKSFetches[idp.URL]; n != idp.jwksHits.Load() {
		t.Fatalf("Stats says %d fetches, the server saw %d", n, idp.jwksHits.Load())
	}
	before := idp.jwksHits.Load()
	clk.Add(DefaultJWKSRefetchInterval)
	for _, tok := range tokens[:100] {
		_, _ = v.Verify(context.Background(), tok)
	}
	if got := idp.jwksHits.Load() - before; got != 1 {
		t.Fatalf("after one interval, 100 forged tokens caused %d fetches, want exactly 1", got)
	}
	// A genuine token still verifies throughout.
	if _, err := v.Verify(context.Background(), signJWT(t, jose.RS256, rsaKey(t, 0), "k1", c)); err != nil {
		t.Fatal(err)
	}
}

func TestKeyRotation(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	oldKey, newKey := rsaKey(t, 0), rsaKey(t, 1)
	idp.publish("old", oldKey)
	v := newTestVerifier(t, idp, clk, func(c *Config) { c.CacheSize = -1 })
	ctx := context.Background()
	c := claimsFor(idp.URL, clk.Now())
	c["exp"] = clk.Now().Add(3 * time.Hour).Unix()
	oldTok := signJWT(t, jose.RS256, oldKey, "old", c)
	newTok := signJWT(t, jose.RS256, newKey, "new", c)
	if _, err := v.Verify(ctx, oldTok); err != nil {
		t.Fatal(err)
	}
	idp.publish("new", newKey)
	// Right after a fetch the new kid cannot be fetched yet: 503 with
	// Retry-After, never a 401 (the token is good).
	_, err := v.Verify(ctx, newTok)
	var e *Error
	if !errors.As(err, &e) || e.Kind != IssuerUnavailable || e.RetryAfter != DefaultJWKSRefetchInterval {
		t.Fatalf("new kid inside the interval: err = %v, want IssuerUnavailable retryable in %s", err, DefaultJWKSRefetchInterval)
	}
	clk.Add(e.RetryAfter)
	if _, err := v.Verify(ctx, newTok); err != nil {
		t.Fatalf("new kid after Retry-After: %v", err)
	}
	// A later rollover is picked up by the first token of the new key.
	newer := rsaKey(t, 2)
	idp.publish("newer", newer)
	clk.Add(5 * time.Minute)
	c["exp"] = clk.Now().Add(3 * time.Hour).Unix()
	if _, err := v.Verify(ctx, signJWT(t, jose.RS256, newer, "newer", c)); err != nil {
		t.Fatalf("first token of a rolled key: %v", err)
	}
	// The IdP drops the old key; after JWKSMaxAge the cached copy goes too.
	idp.unpublish("old")
	if _, err := v.Verify(ctx, oldTok); err != nil {
		t.Fatalf("old key before max age: %v", err)
	}
	clk.Add(JWKSMaxAge)
	if _, err := v.Verify(ctx, oldTok); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("old key after the IdP removed it: err = %v, want BadSignature", err)
	}
	if _, err := v.Verify(ctx, newTok); err != nil {
		t.Fatalf("new key after refresh: %v", err)
	}
}

func TestIssuerUnavailableIsLazyAndRetried(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	idp.failDiscovery.Store(true)
	v := newTestVerifier(t, idp, clk, nil) // must not fail: discovery is lazy
	if n := idp.discoveryHits.Load(); n != 0 {
		t.Fatalf("NewVerifier made %d discovery requests, want 0", n)
	}
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now()))
	ctx := context.Background()
	for range 5 {
		_, err := v.Verify(ctx, tok)
		var e *Error
		if !errors.As(err, &e) || e.Kind != IssuerUnavailable || e.HTTPStatus() != http.StatusServiceUnavailable || e.OAuthCode() != "" {
			t.Fatalf("err = %v, want IssuerUnavailable/503", err)
		}
		if !errors.Is(err, ErrIssuerUnavailable) {
			t.Fatal("errors.Is(err, ErrIssuerUnavailable) = false")
		}
	}
	if n := idp.discoveryHits.Load(); n != 1 {
		t.Fatalf("5 verifications inside the backoff made %d discovery requests, want 1", n)
	}
	clk.Add(discoveryBackoffMin)
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrIssuerUnavailable) {
		t.Fatalf("second attempt: err = %v", err)
	}
	if n := idp.discoveryHits.Load(); n != 2 {
		t.Fatalf("after the first backoff: %d discovery requests, want 2", n)
	}
	// The backoff doubled: 1s later is still too early.
	clk.Add(discoveryBackoffMin)
	_, _ = v.Verify(ctx, tok)
	if n := idp.discoveryHits.Load(); n != 2 {
		t.Fatalf("inside the doubled backoff: %d discovery requests, want 2", n)
	}
	idp.failDiscovery.Store(false)
	clk.Add(2 * discoveryBackoffMin)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("after the IdP recovered: %v", err)
	}
}

func TestJWKSUnavailable(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	idp.failJWKS.Store(true)
	v := newTestVerifier(t, idp, clk, func(c *Config) { c.CacheSize = -1 })
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now()))
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrIssuerUnavailable) {
		t.Fatalf("JWKS down, no keys: err = %v, want IssuerUnavailable", err)
	}
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrIssuerUnavailable) {
		t.Fatalf("JWKS down, rate limited: err = %v, want IssuerUnavailable", err)
	}
	idp.failJWKS.Store(false)
	clk.Add(DefaultJWKSRefetchInterval)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("JWKS back: %v", err)
	}
	// Down again after keys were fetched: the old keys keep working.
	idp.failJWKS.Store(true)
	clk.Add(JWKSMaxAge + DefaultClockSkew)
	if _, err := v.Verify(ctx, tok); err == nil || !errors.Is(err, ErrExpired) {
		// the token (1h) expired meanwhile: mint a fresh one
		t.Fatalf("err = %v, want Expired for the old token", err)
	}
	fresh := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now()))
	if _, err := v.Verify(ctx, fresh); err != nil {
		t.Fatalf("JWKS down but keys cached: %v", err)
	}
}

func TestUnreachableIssuerAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	clk := newClock()
	v, err := NewVerifier(context.Background(), Config{
		Issuers: []IssuerConfig{{URL: url, Audiences: []string{"brainstem"}}}, Now: clk.Now,
	})
	if err != nil {
		t.Fatalf("NewVerifier must not fail for an unreachable issuer: %v", err)
	}
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(url, clk.Now()))
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrIssuerUnavailable) {
		t.Fatalf("err = %v, want IssuerUnavailable", err)
	}
}

func TestCache(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	ctx := context.Background()
	c := claimsFor(idp.URL, clk.Now())
	c["exp"] = clk.Now().Add(DefaultCacheTTL + 2*time.Minute).Unix()
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", c)

	id1, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	id1.Groups[0] = "mutated by the caller"
	id2, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if s := v.Stats(); s.CacheHits != 1 || s.CacheMisses != 1 || s.CacheEntries != 1 {
		t.Fatalf("stats = %+v, want 1 hit, 1 miss, 1 entry", s)
	}
	if !slices.Equal(id2.Groups, []string{"eng", "ops"}) {
		t.Fatalf("cached groups = %v: a caller's change leaked into the cache", id2.Groups)
	}
	// After CacheTTL the token is verified again (a miss), still valid.
	clk.Add(DefaultCacheTTL)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if s := v.Stats(); s.CacheMisses != 2 {
		t.Fatalf("after CacheTTL: misses = %d, want 2", s.CacheMisses)
	}
	// Never served after exp, even though it sits in the cache.
	clk.Add(2*time.Minute + DefaultClockSkew)
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("after exp: err = %v, want Expired", err)
	}
	// Failures are not cached.
	bad := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(c, "email_verified", false))
	for range 2 {
		_, _ = v.Verify(ctx, bad)
	}
	if s := v.Stats(); s.CacheHits != 1 {
		t.Fatalf("a refused token was served from the cache: %+v", s)
	}
}

func TestCacheBoundAtExpiry(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	c := claimsFor(idp.URL, clk.Now())
	c["exp"] = clk.Now().Add(time.Minute).Unix() // shorter than CacheTTL
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", c)
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	// At exp the cache must not answer; the full check still accepts the
	// token within the clock skew.
	clk.Add(time.Minute)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("at exp, within skew: %v", err)
	}
	if s := v.Stats(); s.CacheHits != 0 || s.CacheMisses != 2 {
		t.Fatalf("served from the cache at exp: %+v", s)
	}
	clk.Add(DefaultClockSkew)
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("at exp+skew: err = %v, want Expired", err)
	}
}

func TestGroupsClaim(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	base := claimsFor(idp.URL, clk.Now())
	delete(base, "groups")
	tests := []struct {
		name  string
		claim string
		extra map[string]any
		want  []string
	}{
		{"default", "", map[string]any{"groups": []any{"a", "b"}}, []string{"a", "b"}},
		{"nested path", "realm_access.roles", map[string]any{"realm_access": map[string]any{"roles": []string{"admin"}}}, []string{"admin"}},
		{"literal dotted name wins", "https://acme.com/groups", map[string]any{"https://acme.com/groups": []string{"x"}}, []string{"x"}},
		{"single string", "grp", map[string]any{"grp": "solo"}, []string{"solo"}},
		{"non-strings skipped", "", map[string]any{"groups": []any{"a", 3, nil, "", "b"}}, []string{"a", "b"}},
		{"absent", "", nil, nil},
		{"wrong type", "", map[string]any{"groups": 42}, nil},
		{"path through a non-object", "a.b", map[string]any{"a": "flat"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestVerifier(t, idp, clk, func(c *Config) { c.GroupsClaim = tt.claim })
			c := base
			for k, val := range tt.extra {
				c = with(c, k, val)
			}
			id, err := v.Verify(context.Background(), signJWT(t, jose.RS256, rsaKey(t, 0), "k1", c))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(id.Groups, tt.want) {
				t.Fatalf("groups = %#v, want %#v", id.Groups, tt.want)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		want    string
		kind    Kind
	}{
		{"ok", []string{"Bearer abc.def-_~+/="}, "abc.def-_~+/=", 0},
		{"scheme case-insensitive", []string{"bearer abc"}, "abc", 0},
		{"extra spaces", []string{"Bearer   abc"}, "abc", 0},
		{"none", nil, "", NoToken},
		{"basic", []string{"Basic dXNlcjpwYXNz"}, "", Malformed},
		{"bearer without token", []string{"Bearer"}, "", Malformed},
		{"bearer with blank token", []string{"Bearer  "}, "", Malformed},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", Malformed},
		{"space inside token", []string{"Bearer a b"}, "", Malformed},
		{"quote inside token", []string{`Bearer a"b`}, "", Malformed},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.headers {
			h.Add("Authorization", v)
		}
		got, err := BearerToken(h)
		if tt.kind == 0 {
			if err != nil || got != tt.want {
				t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != tt.kind {
			t.Errorf("%s: err = %v, want kind %v", tt.name, err, tt.kind)
			continue
		}
		if tt.kind == Malformed && (e.HTTPStatus() != 400 || e.OAuthCode() != "invalid_request") {
			t.Errorf("%s: maps to %d/%s, want 400/invalid_request", tt.name, e.HTTPStatus(), e.OAuthCode())
		}
		if tt.kind == NoToken && (e.HTTPStatus() != 401 || e.OAuthCode() != "") {
			t.Errorf("%s: maps to %d/%q, want 401 with no error code", tt.name, e.HTTPStatus(), e.OAuthCode())
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Issuers: []IssuerConfig{{URL: "https://idp.acme.com", Audiences: []string{"brainstem"}}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, ok := range []string{"http://127.0.0.1:5556", "http://localhost:1/dex", "http://[::1]:9"} {
		c := Config{Issuers: []IssuerConfig{{URL: ok, Audiences: []string{"a"}}}}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	bad := Config{
		Issuers: []IssuerConfig{
			{URL: "http://idp.acme.com", Audiences: []string{"a"}},
			{URL: "https://x.io", Audiences: nil, Algorithms: []string{"HS256"}},
			{URL: "https://x.io", Audiences: []string{" "}, Algorithms: []string{"none"}},
			{URL: "ftp://x", Audiences: []string{"a"}},
		},
		GroupsClaim:         "a..b",
		AllowedDomains:      []string{"@acme.com"},
		ClockSkew:           time.Hour,
		CacheTTL:            -time.Second,
		JWKSRefetchInterval: time.Millisecond,
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{
		"issuers[0].url", "non-loopback", "issuers[1].audiences", `issuers[1].algorithms[0]: "HS256"`,
		"issuers[2].url", "same issuer", "issuers[2].audiences[0]", `"none"`, "issuers[3].url",
		"groups_claim", "allowed_domains[0]", "clock_skew", "cache_ttl", "jwks_refetch_interval",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "no issuers") {
		t.Errorf("empty config: %v", err)
	}
	if _, err := NewVerifier(context.Background(), bad); err == nil {
		t.Error("NewVerifier accepted a bad config")
	}
}

func TestErrorMapping(t *testing.T) {
	for k := NoToken; k <= IssuerUnavailable; k++ {
		e := NewError(k, "d", nil)
		if k.String() == "unknown" || !errors.Is(e, k.sentinel()) {
			t.Errorf("kind %d has no name or sentinel", k)
		}
		switch st := e.HTTPStatus(); st {
		case 400, 401, 403, 503:
		default:
			t.Errorf("%v: status %d", k, st)
		}
		for other := NoToken; other <= IssuerUnavailable; other++ {
			if other != k && errors.Is(e, other.sentinel()) {
				t.Errorf("%v matches the sentinel of %v", k, other)
			}
		}
	}
	cause := errors.New("boom")
	e := NewError(Expired, "the token expired", cause)
	if !errors.Is(e, cause) || e.Error() != "sso: the token expired: boom" {
		t.Errorf("wrapping: %q", e.Error())
	}
}

// TestUnknownKidWhileIdPDown: with the IdP's JWKS unreachable, tokens of a
// known key keep verifying, while a token of an unknown key is answered
// IssuerUnavailable (503) whose RetryAfter follows the real fetch backoff
// (1s, 2s, 4s ...), never a 401. Discovery failures carry their backoff too.
func TestUnknownKidWhileIdPDown(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, func(c *Config) { c.CacheSize = -1 })
	ctx := context.Background()
	known := func() string { return signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp.URL, clk.Now())) }
	unknown := func() string { return signJWT(t, jose.RS256, rsaKey(t, 1), "k2", claimsFor(idp.URL, clk.Now())) }
	if _, err := v.Verify(ctx, known()); err != nil {
		t.Fatal(err)
	}
	idp.failJWKS.Store(true)
	clk.Add(DefaultJWKSRefetchInterval)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		before := idp.jwksHits.Load()
		_, err := v.Verify(ctx, unknown())
		var e *Error
		if !errors.As(err, &e) || e.Kind != IssuerUnavailable || e.HTTPStatus() != http.StatusServiceUnavailable || e.RetryAfter != want {
			t.Fatalf("attempt %d: err = %v (retry after %v), want IssuerUnavailable retryable in %v", i, err, e.RetryAfter, want)
		}
		if idp.jwksHits.Load() != before+1 {
			t.Fatalf("attempt %d made no fetch", i)
		}
		// Inside the backoff: no fetch, the remaining wait is reported.
		clk.Add(want / 2)
		if _, err := v.Verify(ctx, unknown()); !errors.As(err, &e) || e.RetryAfter != want/2 || idp.jwksHits.Load() != before+1 {
			t.Fatalf("attempt %d inside the backoff: err = %v, retry after %v, fetches %d", i, err, e.RetryAfter, idp.jwksHits.Load()-before)
		}
		if _, err := v.Verify(ctx, known()); err != nil {
			t.Fatalf("a known key stopped working while the IdP is down: %v", err)
		}
		clk.Add(want / 2)
	}
	idp.failJWKS.Store(false)
	idp.publish("k2", rsaKey(t, 1))
	if _, err := v.Verify(ctx, unknown()); err != nil {
		t.Fatalf("after the IdP recovered: %v", err)
	}

	// Discovery failures report their backoff as well.
	idp2 := newTestIdP(t)
	idp2.failDiscovery.Store(true)
	v2 := newTestVerifier(t, idp2, clk, nil)
	tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", claimsFor(idp2.URL, clk.Now()))
	_, err := v2.Verify(ctx, tok)
	var e *Error
	if !errors.As(err, &e) || e.RetryAfter != discoveryBackoffMin {
		t.Fatalf("discovery down: %v, retry after %v", err, e.RetryAfter)
	}
	clk.Add(discoveryBackoffMin / 4)
	if _, err := v2.Verify(ctx, tok); !errors.As(err, &e) || e.RetryAfter != discoveryBackoffMin*3/4 {
		t.Fatalf("discovery inside the backoff: %v, retry after %v", err, e.RetryAfter)
	}
}

// TestRefusedTokensRemembered: a token refused for good (expired, bad
// signature ...) is answered from memory when sent again, marked Repeat,
// with the same kind and issuer; one that may turn good (not yet valid) is
// checked again every time.
func TestRefusedTokensRemembered(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	ctx := context.Background()
	expired := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(claimsFor(idp.URL, clk.Now()), "exp", clk.Now().Add(-time.Hour).Unix()))
	future := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(claimsFor(idp.URL, clk.Now()), "nbf", clk.Now().Add(time.Hour).Unix()))
	tests := []struct {
		name     string
		tok      string
		kind     Kind
		remember bool
	}{
		{"expired", expired, Expired, true},
		{"not yet valid", future, NotYetValid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 3 {
				before := v.Stats().RefusedHits
				_, err := v.Verify(ctx, tt.tok)
				var e *Error
				if !errors.As(err, &e) || e.Kind != tt.kind || e.Issuer != idp.URL {
					t.Fatalf("attempt %d: err = %v (issuer %q), want %v from %s", i, err, e.Issuer, tt.kind, idp.URL)
				}
				fromMemory := v.Stats().RefusedHits > before
				if want := tt.remember && i > 0; e.Repeat != want || fromMemory != want {
					t.Fatalf("attempt %d: Repeat=%v fromMemory=%v, want %v", i, e.Repeat, fromMemory, want)
				}
			}
		})
	}
	// The memory ends after RefusedTTL.
	clk.Add(RefusedTTL)
	if _, err := v.Verify(ctx, expired); err == nil || err.(*Error).Repeat {
		t.Fatalf("after RefusedTTL: %v, want a fresh refusal", err)
	}
}
