package auth

import (
	"cmp"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Shard-token errors. A caller holding a token that fails with
// ErrTokenInvalid or ErrTokenExpired should drop it and mint a new one;
// ErrWrongWing means the token was sent to the wrong shard (a routing bug).
var (
	// ErrTokenInvalid: malformed, bad signature, unknown key id, wrong
	// algorithm, missing required claim, or over MaxShardTokenBytes.
	ErrTokenInvalid = errors.New("auth: invalid shard token")
	// ErrTokenExpired: the token's exp (plus ShardTokenLeeway) has passed, or
	// a mint was asked for a token that would already be expired.
	ErrTokenExpired = errors.New("auth: shard token expired")
	// ErrWrongWing: the token was minted for another wing.
	ErrWrongWing = errors.New("auth: shard token is for another wing")
)

// Shard-token parameters.
const (
	// DefaultShardTokenTTL is the lifetime of a shard token when NewMinter is
	// given ttl 0.
	DefaultShardTokenTTL = 10 * time.Minute
	// ShardTokenLeeway is the clock leeway Verify allows on exp and iat. The
	// same shard mints and verifies, so it is small.
	ShardTokenLeeway = 5 * time.Second
	// MaxShardTokenBytes bounds the size of a shard token Verify accepts.
	MaxShardTokenBytes = 4096
	// shardIssuerPrefix prefixes the wing in a shard token's iss claim.
	shardIssuerPrefix = "brainstem-shard:"
)

// ShardClaims is what a verified shard token says.
type ShardClaims struct {
	Email string     // canonical verified email (also the sub claim)
	Wing  string     // the wing it is valid for (iss "brainstem-shard:<wing>", aud "<wing>")
	ID    string     // jti: random 128 bits, base64url
	Caps  brain.Caps // capabilities granted by the wing policy at mint time
	// Groups are the caller's groups the wing policy named at mint time
	// (CompiledPolicy.Grant), so the shard can evaluate its current policy
	// for the token's identity on every call.
	Groups   []string
	IssuedAt time.Time // iat
	Expiry   time.Time // exp
}

// shardTokenJSON is the JWT claims set of a shard token.
type shardTokenJSON struct {
	Issuer   string           `json:"iss"`
	Subject  string           `json:"sub"`
	Audience jwt.Audience     `json:"aud"`
	Expiry   *jwt.NumericDate `json:"exp,omitempty"`
	IssuedAt *jwt.NumericDate `json:"iat,omitempty"`
	ID       string           `json:"jti"`
	Email    string           `json:"email"`
	Caps     []string         `json:"caps"`
	Groups   []string         `json:"groups,omitempty"`
}

// KeyPair is a shard's Ed25519 signing key and its key id.
type KeyPair struct {
	ID      string // kid: KeyID(public key)
	Private ed25519.PrivateKey
}

// Public returns the public half of the key.
func (k KeyPair) Public() ed25519.PublicKey {
	if len(k.Private) != ed25519.PrivateKeySize {
		return nil
	}
	return k.Private.Public().(ed25519.PublicKey)
}

// KeyID returns the kid of an Ed25519 public key: base64url (no padding) of
// the first 8 bytes of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:8])
}

// GenerateKey returns a fresh Ed25519 key pair.
func GenerateKey() (KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("auth: generate key: %w", err)
	}
	return KeyPair{ID: KeyID(pub), Private: priv}, nil
}

// Minter signs shard tokens for one wing. It is safe for concurrent use.
type Minter struct {
	wing   string
	key    KeyPair
	ttl    time.Duration
	now    func() time.Time
	signer jose.Signer
	err    error // construction error, returned by every Mint
}

// NewMinter returns a Minter for wing signing with key. ttl 0 means
// DefaultShardTokenTTL; now nil means time.Now. A bad wing, key or ttl is
// reported by every Mint call.
func NewMinter(wing string, key KeyPair, ttl time.Duration, now func() time.Time) *Minter {
	ttl = cmp.Or(ttl, DefaultShardTokenTTL)
	if now == nil {
		now = time.Now
	}
	m := &Minter{wing: wing, key: key, ttl: ttl, now: now}
	switch {
	case wing == "" || strings.ContainsAny(wing, " \t\r\n/"):
		m.err = fmt.Errorf("auth: minter: invalid wing %q", wing)
	case ttl < 0:
		m.err = fmt.Errorf("auth: minter: negative ttl %v", ttl)
	case len(key.Private) != ed25519.PrivateKeySize:
		m.err = errors.New("auth: minter: key is not an Ed25519 private key")
	case key.ID == "":
		m.err = errors.New("auth: minter: key has no id")
	}
	if m.err != nil {
		return m
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key.Private}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.ID))
	if err != nil {
		m.err = fmt.Errorf("auth: minter: %w", err)
		return m
	}
	m.signer = signer
	return m
}

// Mint signs a token for email (canonicalised here by CanonicalEmail, whose
// refusal it returns) carrying caps. The
// token expires at min(now+ttl, notAfter), truncated to whole seconds, which
// is returned as exp. A zero notAfter means no extra bound. notAfter at or
// before now fails with ErrTokenExpired: a shard token never outlives the SSO
// session that asked for it.
func (m *Minter) Mint(email string, caps brain.Caps, notAfter time.Time) (token string, exp time.Time, err error) {
	return m.MintGroups(email, caps, nil, notAfter)
}

// MintGroups is Mint for a token that also carries groups (at most
// MaxTokenGroups of at most MaxPrincipalBytes each; see
// CompiledPolicy.Grant).
func (m *Minter) MintGroups(email string, caps brain.Caps, groups []string, notAfter time.Time) (token string, exp time.Time, err error) {
	if m.err != nil {
		return "", time.Time{}, m.err
	}
	email, err = CanonicalEmail(email)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: mint: %w", err)
	}
	if caps&^(brain.CapRead|brain.CapWrite|brain.CapCurate) != 0 {
		return "", time.Time{}, fmt.Errorf("auth: mint: unknown capability bits %#x", uint8(caps))
	}
	if err := checkTokenGroups(groups); err != nil {
		return "", time.Time{}, fmt.Errorf("auth: mint: %w", err)
	}
	now := m.now()
	if !notAfter.IsZero() && !notAfter.After(now) {
		return "", time.Time{}, fmt.Errorf("auth: mint: the session ended at %s, before now (%s): %w",
			notAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), ErrTokenExpired)
	}
	exp = now.Add(m.ttl)
	if !notAfter.IsZero() && notAfter.Before(exp) {
		exp = notAfter
	}
	exp = exp.Truncate(time.Second)
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("auth: mint: %w", err)
	}
	claims := shardTokenJSON{
		Issuer:   shardIssuerPrefix + m.wing,
		Subject:  email,
		Audience: jwt.Audience{m.wing},
		Expiry:   jwt.NewNumericDate(exp),
		IssuedAt: jwt.NewNumericDate(now),
		ID:       base64.RawURLEncoding.EncodeToString(jti[:]),
		Email:    email,
		Caps:     caps.Strings(),
		Groups:   groups,
	}
	if token, err = SignClaims(m.signer, claims); err != nil {
		return "", time.Time{}, fmt.Errorf("auth: mint: %w", err)
	}
	return token, exp, nil
}

// SignClaims signs claims (encoded as JSON) with signer: a JWT in compact
// serialization.
func SignClaims(signer jose.Signer, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// TokenVerifier checks shard tokens for one wing against a set of public
// keys, looked up by kid; pass the old and the new key during a rotation.
// It is safe for concurrent use.
type TokenVerifier struct {
	wing string
	now  func() time.Time
	keys map[string]ed25519.PublicKey
}

// NewTokenVerifier returns a verifier for wing accepting tokens signed by any
// of keys (keys of the wrong size are ignored). now nil means time.Now.
func NewTokenVerifier(wing string, now func() time.Time, keys ...ed25519.PublicKey) *TokenVerifier {
	if now == nil {
		now = time.Now
	}
	v := &TokenVerifier{wing: wing, now: now, keys: make(map[string]ed25519.PublicKey, len(keys))}
	for _, k := range keys {
		if len(k) == ed25519.PublicKeySize {
			v.keys[KeyID(k)] = k
		}
	}
	return v
}

var eddsaOnly = []jose.SignatureAlgorithm{jose.EdDSA}

// Verify checks a shard token: algorithm EdDSA only, a known kid, the
// signature, typ "JWT" if present, iss "brainstem-shard:<wing>" and aud
// containing the wing, a required exp and iat (leeway ShardTokenLeeway),
// sub = email, a jti and known capabilities. Errors wrap ErrTokenInvalid,
// ErrTokenExpired or ErrWrongWing.
func (v *TokenVerifier) Verify(token string) (ShardClaims, error) {
	if len(token) > MaxShardTokenBytes {
		return ShardClaims{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTokenInvalid, len(token), MaxShardTokenBytes)
	}
	jws, err := jose.ParseSignedCompact(token, eddsaOnly)
	if err != nil {
		return ShardClaims{}, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	}
	if len(jws.Signatures) != 1 {
		return ShardClaims{}, fmt.Errorf("%w: want exactly one signature", ErrTokenInvalid)
	}
	h := jws.Signatures[0].Header
	if typ, ok := h.ExtraHeaders[jose.HeaderType]; ok && typ != "JWT" {
		return ShardClaims{}, fmt.Errorf("%w: header typ %v, want JWT", ErrTokenInvalid, typ)
	}
	pub, ok := v.keys[h.KeyID]
	if !ok {
		// Say "wrong wing" when the unverified claims name another wing:
		// that is a routing bug to fix, not a token to re-mint. Either way
		// the token is refused.
		var c shardTokenJSON
		if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c) == nil && v.otherWing(c) {
			return ShardClaims{}, fmt.Errorf("%w: issued by %q for %q, this is wing %q", ErrWrongWing, c.Issuer, []string(c.Audience), v.wing)
		}
		return ShardClaims{}, fmt.Errorf("%w: unknown key id %q (the shard key changed; mint a new token)", ErrTokenInvalid, h.KeyID)
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		return ShardClaims{}, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	}
	var c shardTokenJSON
	if err := json.Unmarshal(payload, &c); err != nil {
		return ShardClaims{}, fmt.Errorf("%w: claims: %w", ErrTokenInvalid, err)
	}
	if v.otherWing(c) || c.Issuer != shardIssuerPrefix+v.wing || !c.Audience.Contains(v.wing) {
		return ShardClaims{}, fmt.Errorf("%w: issued by %q for %q, this is wing %q", ErrWrongWing, c.Issuer, []string(c.Audience), v.wing)
	}
	if c.Expiry == nil {
		return ShardClaims{}, fmt.Errorf("%w: no exp claim", ErrTokenInvalid)
	}
	if c.IssuedAt == nil {
		return ShardClaims{}, fmt.Errorf("%w: no iat claim", ErrTokenInvalid)
	}
	now := v.now()
	exp, iat := c.Expiry.Time(), c.IssuedAt.Time()
	if !now.Before(exp.Add(ShardTokenLeeway)) {
		return ShardClaims{}, fmt.Errorf("%w: at %s", ErrTokenExpired, exp.UTC().Format(time.RFC3339))
	}
	if iat.After(now.Add(ShardTokenLeeway)) {
		return ShardClaims{}, fmt.Errorf("%w: issued in the future (%s)", ErrTokenInvalid, iat.UTC().Format(time.RFC3339))
	}
	email, err := CanonicalEmail(c.Email)
	if err != nil || email != c.Email || c.Subject != c.Email {
		return ShardClaims{}, fmt.Errorf("%w: email %q and sub %q must be the same canonical address", ErrTokenInvalid, c.Email, c.Subject)
	}
	if c.ID == "" {
		return ShardClaims{}, fmt.Errorf("%w: no jti claim", ErrTokenInvalid)
	}
	caps, err := brain.ParseCaps(c.Caps)
	if err != nil {
		return ShardClaims{}, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	}
	if err := checkTokenGroups(c.Groups); err != nil {
		return ShardClaims{}, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	}
	return ShardClaims{Email: email, Wing: v.wing, ID: c.ID, Caps: caps, Groups: c.Groups, IssuedAt: iat, Expiry: exp}, nil
}

// checkTokenGroups bounds the groups of a shard token.
func checkTokenGroups(groups []string) error {
	if len(groups) > MaxTokenGroups {
		return fmt.Errorf("%d groups, the limit is %d", len(groups), MaxTokenGroups)
	}
	size := 0
	for _, g := range groups {
		if g == "" || len(g) > MaxPrincipalBytes || HasControlChar(g) {
			return fmt.Errorf("bad group name %q", g)
		}
		size += len(g)
	}
	if size > MaxTokenGroupBytes {
		return fmt.Errorf("groups of %d bytes, the limit is %d", size, MaxTokenGroupBytes)
	}
	return nil
}

// otherWing reports whether claims positively name a different wing (a
// shard-token issuer for another wing, or an audience without this wing).
func (v *TokenVerifier) otherWing(c shardTokenJSON) bool {
	if w, ok := strings.CutPrefix(c.Issuer, shardIssuerPrefix); ok && w != v.wing {
		return true
	}
	return len(c.Audience) > 0 && !c.Audience.Contains(v.wing)
}
