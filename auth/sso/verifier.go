package sso

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Google issues tokens with either form of its issuer.
const (
	googleIssuer         = "https://accounts.google.com"
	googleIssuerNoScheme = "accounts.google.com"
)

// Discovery retry backoff: 1s, 2s, 4s, ... capped.
const (
	discoveryBackoffMin = time.Second
	discoveryBackoffMax = time.Minute
)

// Verifier verifies SSO bearer tokens from the configured issuers and turns
// them into an auth.Identity. It is safe for concurrent use and meant to live
// as long as the gateway.
type Verifier struct {
	cfg      Config
	lifetime context.Context
	issuers  map[string]*issuer // by exact iss
	domains  map[string]bool    // AllowedDomains, lowercased; nil = any
	cache    *lru.Cache[[sha256.Size]byte, cacheEntry]
	refused  *lru.Cache[[sha256.Size]byte, refusedEntry]

	cacheHits, cacheMisses, refusedHits atomic.Int64
}

// refusedEntry remembers why a token was refused, so the same token sent
// again is answered from memory: no parsing, no signature check, no JWKS
// fetch.
type refusedEntry struct {
	err   Error
	until time.Time
}

// RefusedTTL is how long a refused token is remembered (never past its
// usefulness: only refusals that cannot turn into an acceptance are kept).
const RefusedTTL = time.Minute

// rememberRefusal reports whether a refusal of this kind is final for the
// token: its claims and signature do not change, so neither does the
// answer. Not NotYetValid (it becomes valid), not IssuerUnavailable (the
// token may be good).
func rememberRefusal(k Kind) bool {
	switch k {
	case MalformedToken, BadSignature, WrongIssuer, WrongAudience, Expired, EmailMissing, EmailUnverified, DomainNotAllowed:
		return true
	}
	return false
}

type cacheEntry struct {
	id    auth.Identity
	until time.Time // min(token exp, insertion + CacheTTL)
}

// issuer is one configured issuer and its lazily discovered verifier.
type issuer struct {
	cfg     IssuerConfig
	algs    []jose.SignatureAlgorithm
	parent  *Verifier
	sem     chan struct{} // held while discovering
	mu      sync.Mutex
	oidcV   *oidc.IDTokenVerifier // nil until discovery succeeds
	keys    *keySet
	fails   int
	nextTry time.Time
	lastErr error
}

// NewVerifier validates cfg and returns a Verifier. It makes no network
// call: each issuer is discovered on the first Verify of one of its tokens,
// and a failed discovery is retried with exponential backoff (1s doubling to
// 1m), Verify meanwhile failing with IssuerUnavailable. ctx bounds the
// Verifier's lifetime: cancelling it aborts discovery and JWKS fetches.
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	v := &Verifier{cfg: cfg, lifetime: ctx, issuers: make(map[string]*issuer, len(cfg.Issuers))}
	for _, ic := range cfg.Issuers {
		algs := make([]jose.SignatureAlgorithm, len(ic.Algorithms))
		for i, a := range ic.Algorithms {
			algs[i] = jose.SignatureAlgorithm(a)
		}
		v.issuers[ic.URL] = &issuer{cfg: ic, algs: algs, parent: v, sem: make(chan struct{}, 1)}
	}
	if len(cfg.AllowedDomains) > 0 {
		v.domains = make(map[string]bool, len(cfg.AllowedDomains))
		for _, d := range cfg.AllowedDomains {
			v.domains[strings.ToLower(d)] = true
		}
	}
	if cfg.CacheSize > 0 {
		c, err := lru.New[[sha256.Size]byte, cacheEntry](cfg.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("sso: cache: %w", err)
		}
		v.cache = c
		r, err := lru.New[[sha256.Size]byte, refusedEntry](cfg.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("sso: cache: %w", err)
		}
		v.refused = r
	}
	return v, nil
}

// BearerToken extracts the token from an Authorization header: NoToken when
// there is none, Malformed when there are several or it is not
// "Bearer <token68>" (RFC 6750 §2.1; the scheme is case-insensitive).
func BearerToken(h http.Header) (string, error) {
	vals := h.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", NewError(NoToken, "no bearer token; send Authorization: Bearer <token>", nil)
	case 1:
	default:
		return "", NewError(Malformed, "more than one Authorization header", nil)
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", NewError(Malformed, fmt.Sprintf("the Authorization scheme must be Bearer, not %.20q", scheme), nil)
	}
	tok = strings.TrimLeft(tok, " ")
	if !ok || tok == "" {
		return "", NewError(Malformed, "the Authorization header has no token after Bearer", nil)
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0) {
			return "", NewError(Malformed, "the bearer token contains characters a token cannot hold (RFC 6750 token68)", nil)
		}
	}
	return tok, nil
}

// Verify checks an SSO token and returns the verified identity with a
// canonical email. Failures are *Error; see Kind for what each means and how
// it maps to an HTTP answer.
func (v *Verifier) Verify(ctx context.Context, raw string) (auth.Identity, error) {
	if raw == "" {
		return auth.Identity{}, NewError(NoToken, "no bearer token; send Authorization: Bearer <token>", nil)
	}
	if len(raw) > MaxTokenBytes {
		return auth.Identity{}, NewError(MalformedToken, fmt.Sprintf("the token is %d bytes, over the %d-byte limit", len(raw), MaxTokenBytes), nil)
	}
	now := v.cfg.Now()
	var key [sha256.Size]byte
	if v.cache != nil {
		key = sha256.Sum256([]byte(raw))
		if e, ok := v.cache.Get(key); ok {
			if now.Before(e.until) {
				v.cacheHits.Add(1)
				id := e.id
				id.Groups = slices.Clone(id.Groups)
				return id, nil
			}
			v.cache.Remove(key)
		}
		if r, ok := v.refused.Get(key); ok {
			if now.Before(r.until) {
				v.refusedHits.Add(1)
				e := r.err
				e.Repeat = true
				return auth.Identity{}, &e
			}
			v.refused.Remove(key)
		}
		v.cacheMisses.Add(1)
	}
	id, exp, err := v.verify(ctx, raw, now)
	if err != nil {
		var e *Error
		if v.refused != nil && errors.As(err, &e) && rememberRefusal(e.Kind) {
			v.refused.Add(key, refusedEntry{err: *e, until: now.Add(RefusedTTL)})
		}
		return auth.Identity{}, err
	}
	if v.cache != nil {
		until := now.Add(v.cfg.CacheTTL)
		if exp.Before(until) {
			until = exp
		}
		stored := id
		stored.Groups = slices.Clone(id.Groups)
		v.cache.Add(key, cacheEntry{id: stored, until: until})
	}
	return id, nil
}

// verify is the uncached path. It returns the identity and the token's exp.
// A refusal names the token's claimed issuer (Error.Issuer) when it got
// that far.
func (v *Verifier) verify(ctx context.Context, raw string, now time.Time) (auth.Identity, time.Time, error) {
	var iss string
	id, err := v.verifyToken(ctx, raw, now, &iss)
	if err != nil {
		if err.Issuer == "" && iss != "" {
			iss = iss[:min(len(iss), 200)]
			err.Issuer = headerSafe(iss)
		}
		return auth.Identity{}, time.Time{}, err
	}
	return id, id.Expiry, nil
}

// verifyToken parses the token once (parseToken), picks its issuer, has
// go-oidc verify its signature (through keySet, on that same parse) and
// issuer, and then applies the rules go-oidc does not: audiences, times
// with ClockSkew, the email rule. issOut receives the (unverified) iss.
func (v *Verifier) verifyToken(ctx context.Context, raw string, now time.Time, issOut *string) (auth.Identity, *Error) {
	tok, e := parseToken(raw, v.cfg.GroupsClaim)
	if e != nil {
		return auth.Identity{}, e
	}
	*issOut = tok.claims.Issuer
	is, e := v.issuerOf(tok)
	if e != nil {
		return auth.Identity{}, e
	}
	if e := is.verifySignature(ctx, tok); e != nil {
		return auth.Identity{}, e
	}
	c := &tok.claims
	if e := is.checkAudience(c); e != nil {
		return auth.Identity{}, e
	}
	if e := v.checkTimes(c, now); e != nil {
		return auth.Identity{}, e
	}
	email, e := v.checkEmail(is, c)
	if e != nil {
		return auth.Identity{}, e
	}
	id := auth.Identity{Email: email, Groups: c.Groups, Issuer: c.Issuer, Subject: c.Subject, Expiry: *c.Expiry}
	if c.IssuedAt != nil {
		id.IssuedAt = *c.IssuedAt
	}
	return id, nil
}

// issuerOf returns the configured issuer the token names, and refuses an
// algorithm the issuer is not pinned to. go-oidc refuses it as well
// (SupportedSigningAlgs), but as an untyped error: checked here, it is a
// clear BadSignature (TestTokenMatrix "alg none", "RS384 when pinned to
// RS256").
func (v *Verifier) issuerOf(tok *token) (*issuer, *Error) {
	iss := tok.claims.Issuer
	is, ok := v.issuers[iss]
	if !ok && iss == googleIssuerNoScheme {
		// Google's tokens may say "accounts.google.com"; go-oidc accepts that
		// for the https issuer, and so do we.
		is, ok = v.issuers[googleIssuer]
	}
	if !ok {
		return nil, NewError(WrongIssuer, fmt.Sprintf("the token was issued by %.200q, which this gateway does not trust; sign in with the configured identity provider", iss), nil)
	}
	if alg := tok.alg(); !slices.Contains(is.cfg.Algorithms, alg) {
		return nil, NewError(BadSignature, fmt.Sprintf("the token is signed with algorithm %.20q; issuer %s is pinned to %v", alg, is.cfg.URL, is.cfg.Algorithms), nil)
	}
	return is, nil
}

// verifySignature has go-oidc verify the token: the signature (its KeySet
// is the issuer's keySet, which uses tok's parse and reports a typed
// refusal through the context) and the issuer. A claim of the wrong type
// found by parseToken is refused once the signature holds.
func (is *issuer) verifySignature(ctx context.Context, tok *token) *Error {
	oidcV, e := is.ensure(ctx)
	if e != nil {
		return e
	}
	call := &verifyCall{tok: tok}
	if _, err := oidcV.Verify(context.WithValue(ctx, verifyCallKey{}, call), tok.raw); err != nil {
		switch {
		case call.err != nil:
			return call.err
		case strings.Contains(err.Error(), "different provider"):
			return NewError(WrongIssuer, "the token's issuer does not match", err)
		}
		return NewError(MalformedToken, "the token could not be verified", err)
	}
	if tok.claimsErr != nil {
		return NewError(MalformedToken, "the token claims are malformed", tok.claimsErr)
	}
	return nil
}

// checkAudience: aud must hold one of the issuer's audiences. go-oidc's
// own check (Config.ClientID) compares with one client id, and an issuer
// here accepts a list (TestTokenMatrix "aud list containing ours" is
// issued to the second), so it is off (SkipClientIDCheck) and done here.
func (is *issuer) checkAudience(c *claims) *Error {
	if slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(is.cfg.Audiences, a) }) {
		return nil
	}
	return NewError(WrongAudience, fmt.Sprintf("the token is for audience %.200q, not for this gateway (%v); sign in through the gateway's client", c.Audience, is.cfg.Audiences), nil)
}

// checkTimes applies exp, nbf and iat with ClockSkew. go-oidc's expiry
// check is off (SkipExpiryCheck) because it has no leeway on exp (with it
// on, TestTokenMatrix "expired within skew" is refused) and its nbf check
// has a fixed 5-minute leeway: run on a clock set back by ClockSkew it
// would refuse, once ClockSkew is over 2.5 minutes, tokens ClockSkew
// admits (TestTokenMatrix "nbf within a 4-minute skew"). It reads no iat.
func (v *Verifier) checkTimes(c *claims, now time.Time) *Error {
	skew := v.cfg.ClockSkew
	switch {
	case c.Expiry == nil:
		return NewError(MalformedToken, "the token has no exp (expiry) claim", nil)
	case !now.Before(c.Expiry.Add(skew)):
		return NewError(Expired, fmt.Sprintf("the token expired at %s; sign in again", c.Expiry.UTC().Format(time.RFC3339)), nil)
	case c.NotBefore != nil && c.NotBefore.After(now.Add(skew)):
		return NewError(NotYetValid, fmt.Sprintf("the token is not valid before %s; check the clocks", c.NotBefore.UTC().Format(time.RFC3339)), nil)
	case c.IssuedAt != nil && c.IssuedAt.After(now.Add(skew)):
		return NewError(NotYetValid, fmt.Sprintf("the token was issued in the future (%s); check the clocks", c.IssuedAt.UTC().Format(time.RFC3339)), nil)
	}
	return nil
}

// checkEmail applies the email rules: an email the email rule accepts,
// verified (email_verified true, or absent from a TrustEmail issuer), and
// within AllowedDomains, and not at auth.ServiceAccountDomain. It returns
// the canonical email.
func (v *Verifier) checkEmail(is *issuer, c *claims) (string, *Error) {
	if !c.HasEmail {
		return "", NewError(EmailMissing, "the token has no email claim; sign in again granting the email scope", nil)
	}
	email, err := auth.CanonicalEmail(c.Email)
	if err != nil {
		return "", NewError(EmailMissing, fmt.Sprintf("the email claim %.100q is not an address Brainstem accepts (ASCII, one @, no spaces or control characters)", c.Email), err)
	}
	if !c.EmailVerified && !(is.cfg.TrustEmail && !c.EmailVerifiedSent) {
		return "", NewError(EmailUnverified, fmt.Sprintf("the email address %s is not verified by your identity provider; verify it there, then sign in again", email), nil)
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	if domain == auth.ServiceAccountDomain {
		// Only the gateway's own authorization server issues identities
		// there (the client credentials grant): an IdP that lets a person
		// set this address must not make them a service account.
		return "", NewError(DomainNotAllowed, fmt.Sprintf("addresses at %s are reserved for the gateway's service accounts", domain), nil)
	}
	if v.domains != nil && !v.domains[domain] {
		return "", NewError(DomainNotAllowed, fmt.Sprintf("accounts at %s are not allowed here; sign in with your company account", domain), nil)
	}
	return email, nil
}

// ensure returns the issuer's go-oidc verifier, discovering the issuer first
// if needed. Concurrent callers share one discovery; after a failure the next
// attempt waits for the backoff, and callers meanwhile get IssuerUnavailable.
func (is *issuer) ensure(ctx context.Context) (*oidc.IDTokenVerifier, *Error) {
	is.mu.Lock()
	if is.oidcV != nil {
		defer is.mu.Unlock()
		return is.oidcV, nil
	}
	if now := is.parent.cfg.Now(); now.Before(is.nextTry) {
		err := is.lastErr
		wait := is.nextTry.Sub(now)
		is.mu.Unlock()
		e := NewError(IssuerUnavailable, fmt.Sprintf("identity provider %s is unreachable; retrying in %s", is.cfg.URL, wait.Round(time.Second)), err)
		e.RetryAfter = wait
		return nil, e
	}
	is.mu.Unlock()

	select {
	case is.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, NewError(IssuerUnavailable, "gave up waiting for identity provider discovery", context.Cause(ctx))
	}
	defer func() { <-is.sem }()
	is.mu.Lock()
	if is.oidcV != nil {
		defer is.mu.Unlock()
		return is.oidcV, nil
	}
	if now := is.parent.cfg.Now(); now.Before(is.nextTry) {
		defer is.mu.Unlock()
		e := NewError(IssuerUnavailable, fmt.Sprintf("identity provider %s is unreachable", is.cfg.URL), is.lastErr)
		e.RetryAfter = is.nextTry.Sub(now)
		return nil, e
	}
	is.mu.Unlock()

	oidcV, keys, err := is.discover() // no lock held: the semaphore keeps it single
	is.mu.Lock()
	defer is.mu.Unlock()
	if err != nil {
		backoff := min(discoveryBackoffMin<<min(is.fails, 6), discoveryBackoffMax)
		is.fails++
		is.nextTry = is.parent.cfg.Now().Add(backoff)
		is.lastErr = err
		is.parent.cfg.Logger.Warn("sso: issuer discovery failed", "issuer", is.cfg.URL, "retry_in_seconds", backoff.Seconds(), "err", err)
		e := NewError(IssuerUnavailable, fmt.Sprintf("identity provider %s is unreachable; try again in %s", is.cfg.URL, backoff), err)
		e.RetryAfter = backoff
		return nil, e
	}
	is.oidcV, is.keys, is.fails, is.lastErr = oidcV, keys, 0, nil
	return oidcV, nil
}

// discover fetches the issuer's discovery document and builds the go-oidc
// verifier on top of a rate-limited JWKS cache.
func (is *issuer) discover() (*oidc.IDTokenVerifier, *keySet, error) {
	v := is.parent
	ctx, cancel := context.WithTimeout(v.lifetime, DefaultHTTPTimeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, v.cfg.HTTPClient), is.cfg.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("sso: discovery: %w", err)
	}
	var meta struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, nil, fmt.Errorf("sso: discovery: %w", err)
	}
	if meta.JWKSURL == "" {
		return nil, nil, errors.New("sso: discovery: no jwks_uri in the discovery document")
	}
	if len(meta.Algs) > 0 && !slices.ContainsFunc(is.cfg.Algorithms, func(a string) bool { return slices.Contains(meta.Algs, a) }) {
		v.cfg.Logger.Warn("sso: none of the pinned algorithms is advertised by the issuer; its tokens will be refused",
			"issuer", is.cfg.URL, "pinned", is.cfg.Algorithms, "advertised", meta.Algs)
	}
	keys := &keySet{
		issuer: is.cfg.URL, jwksURL: meta.JWKSURL, client: v.cfg.HTTPClient, now: v.cfg.Now,
		minInterval: v.cfg.JWKSRefetchInterval, algs: is.algs, lifetime: v.lifetime,
		log: v.cfg.Logger.With(slog.String("issuer", is.cfg.URL)), sem: make(chan struct{}, 1),
	}
	return oidc.NewVerifier(is.cfg.URL, keys, &oidc.Config{
		SkipClientIDCheck:    true, // it takes one client id; issuers accept a list: see checkAudience
		SkipExpiryCheck:      true, // no leeway on exp, a fixed one on nbf: see checkTimes
		SupportedSigningAlgs: is.cfg.Algorithms,
		Now:                  v.cfg.Now,
	}), keys, nil
}

// Stats are counters for tests and metrics.
type Stats struct {
	// JWKSFetches counts JWKS requests per issuer URL.
	JWKSFetches map[string]int64
	// CacheEntries is the number of verified tokens cached.
	CacheEntries int
	// CacheHits and CacheMisses count Verify calls answered from the cache
	// and those that were not (misses include tokens that then failed).
	CacheHits, CacheMisses int64
	// RefusedHits counts Verify calls answered from the memory of refused
	// tokens.
	RefusedHits int64
}

// Stats returns the current counters.
func (v *Verifier) Stats() Stats {
	s := Stats{JWKSFetches: make(map[string]int64, len(v.issuers))}
	for url, is := range v.issuers {
		is.mu.Lock()
		ks := is.keys
		is.mu.Unlock()
		if ks != nil {
			s.JWKSFetches[url] = ks.fetches.Load()
		}
	}
	if v.cache != nil {
		s.CacheEntries = v.cache.Len()
	}
	s.CacheHits, s.CacheMisses, s.RefusedHits = v.cacheHits.Load(), v.cacheMisses.Load(), v.refusedHits.Load()
	return s
}
