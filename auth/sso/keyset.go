package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is an oidc.KeySet for one issuer that caches the issuer's JWKS by
// kid. A token whose kid is not cached makes it fetch the JWKS at once
// (a key rollover is picked up by the first token signed with the new key),
// with three bounds against forged kids: one fetch in flight per issuer
// (concurrent misses share it), at most one fetch per minInterval, and
// after a failed fetch an exponential backoff (minInterval doubling to
// jwksBackoffMax). A miss that cannot fetch now because of those bounds is
// IssuerUnavailable with RetryAfter set to when it could, never a 401: the
// token may be good. Only a kid missing from a set fetched after the token
// arrived is BadSignature. A bad signature under a known kid never fetches.
type keySet struct {
	issuer      string
	jwksURL     string
	client      *http.Client
	now         func() time.Time
	minInterval time.Duration
	algs        []jose.SignatureAlgorithm
	log         *slog.Logger
	lifetime    context.Context

	sem chan struct{} // held while fetching: one fetch at a time

	mu          sync.Mutex
	keys        []jose.JSONWebKey
	gen         uint64    // bumped when a fetch attempt ends
	lastAttempt time.Time // of the last fetch attempt (rate limit)
	lastSuccess time.Time // of the last successful fetch (max age)
	lastErr     error     // of the last fetch, nil after a success
	fails       int       // consecutive failed fetches

	fetches atomic.Int64 // JWKS requests made, for tests and metrics
}

// jwksBackoffMax caps the pause between JWKS fetches while they fail.
const jwksBackoffMax = time.Minute

// verifyCall goes with one go-oidc Verify call to the keySet through the
// context: the token as the Verifier parsed it (so the keySet does not
// parse it again) and, back out, the typed refusal (go-oidc flattens
// errors from KeySet.VerifySignature into strings).
type verifyCall struct {
	tok *token
	err *Error
}

type verifyCallKey struct{}

func (ks *keySet) fail(ctx context.Context, e *Error) ([]byte, error) {
	if call, ok := ctx.Value(verifyCallKey{}).(*verifyCall); ok {
		call.err = e
	}
	return nil, e
}

// parsed returns the JWS of raw: the Verifier's parse when the context
// carries it, else a parse of its own with the pinned algorithms.
func (ks *keySet) parsed(ctx context.Context, raw string) (*jose.JSONWebSignature, *Error) {
	if call, ok := ctx.Value(verifyCallKey{}).(*verifyCall); ok && call.tok.raw == raw {
		jws := call.tok.jws
		if !slices.Contains(ks.algs, jose.SignatureAlgorithm(call.tok.alg())) {
			return nil, NewError(BadSignature, fmt.Sprintf("the token is signed with algorithm %.20q, which issuer %s is not pinned to", call.tok.alg(), ks.issuer), nil)
		}
		return jws, nil
	}
	jws, err := jose.ParseSignedCompact(raw, ks.algs)
	if err != nil {
		return nil, NewError(BadSignature, "the token's signature could not be parsed; sign in again", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, NewError(MalformedToken, "the token must carry exactly one signature", nil)
	}
	return jws, nil
}

// VerifySignature implements oidc.KeySet.
func (ks *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, e := ks.parsed(ctx, raw)
	if e != nil {
		return ks.fail(ctx, e)
	}
	kid := jws.Signatures[0].Header.KeyID

	keys, stale, gen := ks.lookup(kid)
	switch {
	case len(keys) == 0:
		if e := ks.refresh(ctx, gen, true); e != nil {
			return ks.fail(ctx, e)
		}
		// A set fetched after this token arrived does not hold its kid.
		if keys, _, _ = ks.lookup(kid); len(keys) == 0 {
			return ks.fail(ctx, NewError(BadSignature,
				fmt.Sprintf("the token is signed with key id %q, which issuer %s does not publish; sign in again", kid, ks.issuer), nil))
		}
	case stale:
		// Old keys stay in use if the refresh fails or must wait.
		_ = ks.refresh(ctx, gen, false)
		if fresh, _, _ := ks.lookup(kid); len(fresh) > 0 {
			keys = fresh
		} else {
			return ks.fail(ctx, NewError(BadSignature,
				fmt.Sprintf("the token is signed with key id %q, which issuer %s no longer publishes; sign in again", kid, ks.issuer), nil))
		}
	}
	for _, k := range keys {
		if payload, err := jws.Verify(k.Key); err == nil {
			return payload, nil
		}
	}
	return ks.fail(ctx, NewError(BadSignature, "the token's signature does not verify; sign in again", nil))
}

// lookup returns the keys matching kid (all keys when the token has none),
// whether the key set is older than JWKSMaxAge, and the fetch generation
// the answer comes from.
func (ks *keySet) lookup(kid string) ([]jose.JSONWebKey, bool, uint64) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	var out []jose.JSONWebKey
	for _, k := range ks.keys {
		if kid == "" || k.KeyID == kid {
			out = append(out, k)
		}
	}
	stale := !ks.lastSuccess.IsZero() && ks.now().Sub(ks.lastSuccess) >= JWKSMaxAge
	return out, stale, ks.gen
}

// nextFetchLocked is the earliest time the next fetch may start: one
// minInterval after the last attempt, or the backoff after failures.
func (ks *keySet) nextFetchLocked() time.Time {
	if ks.lastAttempt.IsZero() {
		return time.Time{}
	}
	wait := ks.minInterval
	if ks.fails > 0 {
		wait = min(ks.minInterval<<min(ks.fails-1, 16), max(jwksBackoffMax, ks.minInterval))
	}
	return ks.lastAttempt.Add(wait)
}

// refresh fetches the JWKS unless a fetch ended since the caller looked
// (generation gen), in which case it only reports that attempt's failure.
// A fetch in flight is waited for. When the bounds (minInterval, backoff)
// forbid a fetch now, a caller that needs one (needed) gets
// IssuerUnavailable with RetryAfter; others get nil and keep the keys they
// have. On failure the keys fetched before stay in use.
func (ks *keySet) refresh(ctx context.Context, gen uint64, needed bool) *Error {
	select {
	case ks.sem <- struct{}{}:
	case <-ctx.Done():
		return NewError(IssuerUnavailable, "gave up waiting for the issuer's signing keys", context.Cause(ctx))
	}
	defer func() { <-ks.sem }()
	ks.mu.Lock()
	now := ks.now()
	if ks.gen != gen {
		// Someone fetched since this caller looked.
		err, next := ks.lastErr, ks.nextFetchLocked()
		ks.mu.Unlock()
		if err != nil && needed {
			return ks.unavailable(err, next.Sub(now))
		}
		return nil
	}
	if next := ks.nextFetchLocked(); now.Before(next) {
		err := ks.lastErr
		ks.mu.Unlock()
		if !needed {
			return nil
		}
		if err != nil {
			return ks.unavailable(err, next.Sub(now))
		}
		e := NewError(IssuerUnavailable, fmt.Sprintf(
			"the token's key id is not among the keys issuer %s published moments ago; they are refetched at most every %s, retry then",
			ks.issuer, ks.minInterval), nil)
		e.RetryAfter = next.Sub(now)
		return e
	}
	ks.lastAttempt = now
	ks.mu.Unlock()

	keys, err := ks.fetch()
	ks.mu.Lock()
	ks.gen++
	if err != nil {
		ks.lastErr = err
		ks.fails++
		next := ks.nextFetchLocked()
		n := len(ks.keys)
		ks.mu.Unlock()
		ks.log.Warn("sso: JWKS fetch failed; keys fetched before stay in use", "url", ks.jwksURL, "keys", n,
			"retry_in_seconds", next.Sub(now).Seconds(), "err", err)
		if needed {
			return ks.unavailable(err, next.Sub(now))
		}
		return nil
	}
	ks.keys, ks.lastErr, ks.fails, ks.lastSuccess = keys, nil, 0, ks.now()
	ks.mu.Unlock()
	ks.log.Info("sso: fetched JWKS", "keys", len(keys))
	return nil
}

// unavailable is IssuerUnavailable for a failing JWKS fetch, retryable
// after wait.
func (ks *keySet) unavailable(err error, wait time.Duration) *Error {
	e := NewError(IssuerUnavailable,
		fmt.Sprintf("the signing keys of issuer %s could not be fetched; try again in %.0fs", ks.issuer, math.Ceil(max(wait, time.Second).Seconds())), err)
	e.RetryAfter = wait
	return e
}

// fetch downloads and parses the JWKS document. Keys that do not parse, are
// meant for encryption, are private or symmetric are skipped.
func (ks *keySet) fetch() ([]jose.JSONWebKey, error) {
	ks.fetches.Add(1)
	ctx, cancel := context.WithTimeout(ks.lifetime, DefaultHTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("sso: jwks: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sso: jwks: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("sso: jwks: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sso: jwks: %s answered %s", ks.jwksURL, resp.Status)
	}
	return parseJWKS(body)
}

// parseJWKS parses a JWKS document, skipping keys it cannot use.
func parseJWKS(body []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("sso: jwks: not a JWKS document: %w", err)
	}
	if len(doc.Keys) > MaxJWKSKeys {
		return nil, fmt.Errorf("sso: jwks: %d keys, the limit is %d", len(doc.Keys), MaxJWKSKeys)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue // an unknown key type must not hide the others
		}
		if k.Use == "enc" || !k.IsPublic() || !k.Valid() {
			continue
		}
		if _, symmetric := k.Key.([]byte); symmetric {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("sso: jwks: no usable signing keys")
	}
	return keys, nil
}
