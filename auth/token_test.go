package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
	jose "github.com/go-jose/go-jose/v4"
)

// fakeClock is an injected clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func mustKey(t testing.TB) KeyPair {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signRaw signs arbitrary claims with an arbitrary header, to forge tokens
// the Minter would never produce.
func signRaw(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
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

func goodClaims(now time.Time, wing string) map[string]any {
	return map[string]any{
		"iss": "brainstem-shard:" + wing, "aud": wing, "sub": "ann@acme.com", "email": "ann@acme.com",
		"caps": []string{"read"}, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "abc",
	}
}

func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func with(m map[string]any, key string, v any) map[string]any {
	out := without(m, key)
	out[key] = v
	return out
}

func TestMintVerifyRoundTrip(t *testing.T) {
	clk := newClock()
	k := mustKey(t)
	m := NewMinter("payments", k, 0, clk.Now)
	tok, exp, err := m.Mint("  Ann@Acme.COM ", brain.CapRead|brain.CapWrite, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(DefaultShardTokenTTL); !exp.Equal(want) {
		t.Fatalf("exp = %v, want now+default ttl %v", exp, want)
	}
	v := NewTokenVerifier("payments", clk.Now, k.Public())
	c, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Email != "ann@acme.com" || c.Wing != "payments" || c.Caps != brain.CapRead|brain.CapWrite || !c.Expiry.Equal(exp) || !c.IssuedAt.Equal(clk.Now()) {
		t.Fatalf("claims = %+v", c)
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.ID)
	if err != nil || len(raw) != 16 {
		t.Fatalf("jti %q is not 128 bits of base64url: %v", c.ID, err)
	}
	// The header carries alg EdDSA, typ JWT and the kid.
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]string
	if err := json.Unmarshal(hdr, &h); err != nil {
		t.Fatal(err)
	}
	if h["alg"] != "EdDSA" || h["typ"] != "JWT" || h["kid"] != k.ID {
		t.Fatalf("header = %v, want alg EdDSA, typ JWT, kid %s", h, k.ID)
	}
	// Capabilities are checked by the caller, and the token carries only what was minted.
	if c.Caps.Has(brain.CapCurate) {
		t.Fatal("token claims curate it was not minted with")
	}
	// Two mints never share a jti.
	tok2, _, _ := m.Mint("ann@acme.com", brain.CapRead, time.Time{})
	c2, err := v.Verify(tok2)
	if err != nil || c2.ID == c.ID {
		t.Fatalf("second token: id %q vs %q, err %v", c2.ID, c.ID, err)
	}
}

func TestMintBoundsAndErrors(t *testing.T) {
	clk := newClock()
	k := mustKey(t)
	m := NewMinter("w", k, time.Hour, clk.Now)
	now := clk.Now()

	_, exp, err := m.Mint("a@b.c", brain.CapRead, now.Add(90*time.Second+500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(90 * time.Second); !exp.Equal(want) {
		t.Fatalf("exp = %v, want the SSO bound truncated to seconds %v", exp, want)
	}
	_, exp, err = m.Mint("a@b.c", brain.CapRead, now.Add(2*time.Hour))
	if err != nil || !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("exp = %v err %v, want now+ttl", exp, err)
	}
	for _, na := range []time.Time{now, now.Add(-time.Second)} {
		if _, _, err := m.Mint("a@b.c", brain.CapRead, na); !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("notAfter %v: err = %v, want ErrTokenExpired", na, err)
		}
	}
	bad := []struct {
		name string
		m    *Minter
		mail string
		caps brain.Caps
	}{
		{"no email", m, "  ", brain.CapRead},
		{"not an email", m, "ann", brain.CapRead},
		{"unknown caps", m, "a@b.c", brain.Caps(1 << 6)},
		{"empty wing", NewMinter("", k, 0, clk.Now), "a@b.c", brain.CapRead},
		{"slash in wing", NewMinter("a/b", k, 0, clk.Now), "a@b.c", brain.CapRead},
		{"no key", NewMinter("w", KeyPair{}, 0, clk.Now), "a@b.c", brain.CapRead},
		{"negative ttl", NewMinter("w", k, -time.Second, clk.Now), "a@b.c", brain.CapRead},
	}
	for _, tt := range bad {
		if _, _, err := tt.m.Mint(tt.mail, tt.caps, time.Time{}); err == nil || !strings.HasPrefix(err.Error(), "auth: ") {
			t.Errorf("%s: err = %v, want an auth: error", tt.name, err)
		}
	}
}

// TestShardTokenMatrix feeds the verifier tokens it must refuse, each with
// the sentinel the gateway acts on.
func TestShardTokenMatrix(t *testing.T) {
	clk := newClock()
	now := clk.Now()
	k := mustKey(t)
	other := mustKey(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMinter("payments", k, time.Minute, clk.Now)
	good, _, err := m.Mint("ann@acme.com", brain.CapRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	otherWing, _, _ := NewMinter("hr", k, time.Minute, clk.Now).Mint("ann@acme.com", brain.CapRead, time.Time{})
	otherWingOtherKey, _, _ := NewMinter("hr", other, time.Minute, clk.Now).Mint("ann@acme.com", brain.CapRead, time.Time{})
	gc := goodClaims(now, "payments")
	parts := strings.Split(good, ".")
	tamperedPayload := func() string {
		p, _ := base64.RawURLEncoding.DecodeString(parts[1])
		p = []byte(strings.Replace(string(p), `"read"`, `"curate"`, 1))
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString(p) + "." + parts[2]
	}()
	noneToken := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"`+k.ID+`"}`)) + "." + parts[1] + "."

	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"valid sanity", good, nil},
		{"hand-made valid sanity", signRaw(t, jose.EdDSA, k.Private, k.ID, gc), nil},
		{"another wing, same key", otherWing, ErrWrongWing},
		{"another wing, another key", otherWingOtherKey, ErrWrongWing},
		{"aud lacks the wing", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "aud", "hr")), ErrWrongWing},
		{"iss of another wing", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "iss", "brainstem-shard:hr")), ErrWrongWing},
		{"iss not a shard", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "iss", "https://idp")), ErrWrongWing},
		{"no exp", signRaw(t, jose.EdDSA, k.Private, k.ID, without(gc, "exp")), ErrTokenInvalid},
		{"no iat", signRaw(t, jose.EdDSA, k.Private, k.ID, without(gc, "iat")), ErrTokenInvalid},
		{"no jti", signRaw(t, jose.EdDSA, k.Private, k.ID, without(gc, "jti")), ErrTokenInvalid},
		{"iat in the future", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "iat", now.Add(time.Hour).Unix())), ErrTokenInvalid},
		{"expired", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "exp", now.Add(-ShardTokenLeeway).Unix())), ErrTokenExpired},
		{"sub differs from email", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "sub", "eve@evil.io")), ErrTokenInvalid},
		{"email not canonical", signRaw(t, jose.EdDSA, k.Private, k.ID, with(with(gc, "email", "Ann@acme.com"), "sub", "Ann@acme.com")), ErrTokenInvalid},
		{"unknown capability", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "caps", []string{"admin"})), ErrTokenInvalid},
		{"caps not a list", signRaw(t, jose.EdDSA, k.Private, k.ID, with(gc, "caps", "read")), ErrTokenInvalid},
		{"unknown kid", signRaw(t, jose.EdDSA, other.Private, other.ID, gc), ErrTokenInvalid},
		{"no kid", signRaw(t, jose.EdDSA, k.Private, "", gc), ErrTokenInvalid},
		{"right kid, wrong key", signRaw(t, jose.EdDSA, other.Private, k.ID, gc), ErrTokenInvalid},
		{"alg RS256", signRaw(t, jose.RS256, rsaKey, k.ID, gc), ErrTokenInvalid},
		{"alg HS256 keyed with the public key", signRaw(t, jose.HS256, []byte(k.Public()), k.ID, gc), ErrTokenInvalid},
		{"alg none", noneToken, ErrTokenInvalid},
		{"typ not JWT", func() string {
			sg, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: k.Private},
				(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", k.ID))
			payload, _ := json.Marshal(gc)
			jws, _ := sg.Sign(payload)
			out, _ := jws.CompactSerialize()
			return out
		}(), ErrTokenInvalid},
		{"tampered payload", tamperedPayload, ErrTokenInvalid},
		{"truncated", good[:len(good)-4], ErrTokenInvalid},
		{"empty", "", ErrTokenInvalid},
		{"garbage", "not.a.jwt", ErrTokenInvalid},
		{"too large", good + strings.Repeat("A", MaxShardTokenBytes), ErrTokenInvalid},
	}
	v := NewTokenVerifier("payments", clk.Now, k.Public())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(tt.token)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify err = %v, want %v", err, tt.want)
			}
			if !reflect.DeepEqual(c, ShardClaims{}) {
				t.Fatalf("Verify returned claims %+v with an error", c)
			}
		})
	}
}

func TestShardTokenExpiryAndRotation(t *testing.T) {
	clk := newClock()
	oldKey, newKey := mustKey(t), mustKey(t)
	tok, exp, err := NewMinter("w", oldKey, time.Minute, clk.Now).Mint("a@b.c", brain.CapRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	both := NewTokenVerifier("w", clk.Now, newKey.Public(), oldKey.Public())
	if _, err := both.Verify(tok); err != nil {
		t.Fatalf("during rotation the old key must still verify: %v", err)
	}
	onlyNew := NewTokenVerifier("w", clk.Now, newKey.Public())
	if _, err := onlyNew.Verify(tok); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("old key removed: err = %v, want ErrTokenInvalid", err)
	}
	newTok, _, _ := NewMinter("w", newKey, time.Minute, clk.Now).Mint("a@b.c", brain.CapRead, time.Time{})
	if _, err := onlyNew.Verify(newTok); err != nil {
		t.Fatalf("new key: %v", err)
	}

	clk.Add(exp.Sub(clk.Now()) + ShardTokenLeeway - time.Second)
	if _, err := both.Verify(tok); err != nil {
		t.Fatalf("within leeway: %v", err)
	}
	clk.Add(time.Second)
	if _, err := both.Verify(tok); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("after exp+leeway: err = %v, want ErrTokenExpired", err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "shard.pem")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1.ID != k2.ID || !k1.Private.Equal(k2.Private) {
		t.Fatal("second load returned a different key")
	}
	if k1.ID != KeyID(k1.Public()) {
		t.Fatal("kid is not derived from the public key")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("leftover files next to the key: %v", entries)
	}
	eph1, err := LoadOrCreateKey("")
	if err != nil {
		t.Fatal(err)
	}
	eph2, _ := LoadOrCreateKey("")
	if eph1.ID == eph2.ID {
		t.Fatal(`"" path must give a fresh ephemeral key each time`)
	}

	bad := map[string]string{
		"empty":      "",
		"not pem":    "hello",
		"wrong type": "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
		"bad der":    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaPEM, _ := marshalAnyPKCS8(rsaKey)
	bad["rsa key"] = string(rsaPEM)
	good, _ := MarshalPrivateKeyPEM(k1)
	bad["two blocks"] = string(good) + string(good)
	for name, content := range bad {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".pem")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateKey(p); !errors.Is(err, ErrBadKeyFile) {
			t.Errorf("%s: err = %v, want ErrBadKeyFile", name, err)
		}
		after, _ := os.ReadFile(p)
		if string(after) != content {
			t.Errorf("%s: a bad key file was changed", name)
		}
	}
}

func TestLoadOrCreateKeyRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard.pem")
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.ID
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("racing creators got different keys: %v", ids)
		}
	}
}

func TestKeyPairPublic(t *testing.T) {
	if (KeyPair{}).Public() != nil {
		t.Fatal("zero KeyPair must have a nil public key")
	}
	k := mustKey(t)
	if !ed25519.Verify(k.Public(), []byte("m"), ed25519.Sign(k.Private, []byte("m"))) {
		t.Fatal("Public does not match Private")
	}
}

func marshalAnyPKCS8(key any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// TestMintVerifyConcurrent runs minters and verifiers from many goroutines
// (under -race) and checks every token round-trips with its own claims.
func TestMintVerifyConcurrent(t *testing.T) {
	k := mustKey(t)
	m := NewMinter("w", k, time.Minute, nil)
	v := NewTokenVerifier("w", nil, k.Public())
	var wg sync.WaitGroup
	ids := make(chan string, 8*50)
	for g := range 8 {
		wg.Go(func() {
			email := string(rune('a'+g)) + "@x.io"
			for range 50 {
				tok, _, err := m.Mint(email, brain.CapRead, time.Time{})
				if err != nil {
					t.Error(err)
					return
				}
				c, err := v.Verify(tok)
				if err != nil || c.Email != email {
					t.Errorf("verify: %+v, %v", c, err)
					return
				}
				ids <- c.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("jti %s minted twice", id)
		}
		seen[id] = true
	}
}

// TestShardTokenCapabilities: a token carries exactly the minted
// capabilities, so the caller's Has check refuses what is missing.
func TestShardTokenCapabilities(t *testing.T) {
	k := mustKey(t)
	m := NewMinter("w", k, 0, nil)
	v := NewTokenVerifier("w", nil, k.Public())
	for _, minted := range []brain.Caps{0, brain.CapRead, brain.CapRead | brain.CapWrite, brain.CapRead | brain.CapWrite | brain.CapCurate, brain.CapCurate} {
		tok, _, err := m.Mint("a@b.c", minted, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.Verify(tok)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []brain.Caps{brain.CapRead, brain.CapWrite, brain.CapCurate} {
			if c.Caps.Has(want) != minted.Has(want) {
				t.Errorf("minted %v: Has(%v) = %v", minted, want, c.Caps.Has(want))
			}
		}
	}
}
