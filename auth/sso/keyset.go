package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is an oidc.KeySet for one issuer that caches the issuer's JWKS by
// kid. Unlike oidc.RemoteKeySet it does not refetch on every miss: a token
// with an unknown kid causes at most one fetch per refetch interval, so forged
// tokens cannot turn the gateway into a JWKS hammer. A bad signature under a
// known kid never causes a fetch.
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
	gen         uint64    // bumped on every fetch attempt
	lastAttempt time.Time // of the last fetch attempt (rate limit)
	lastSuccess time.Time // of the last successful fetch (max age)
	lastErr     error     // of the last fetch, nil after a success

	fetches atomic.Int64 // JWKS requests made, for tests and metrics
}

// errSlot carries the typed error of a keySet call out of go-oidc, which
// flattens errors from KeySet.VerifySignature into strings.
type errSlot struct{ err *Error }

type errSlotKey struct{}

func withErrSlot(ctx context.Context, s *errSlot) context.Context {
	return context.WithValue(ctx, errSlotKey{}, s)
}

func (ks *keySet) fail(ctx context.Context, e *Error) ([]byte, error) {
	if s, ok := ctx.Value(errSlotKey{}).(*errSlot); ok {
		s.err = e
	}
	return nil, e
}

// VerifySignature implements oidc.KeySet.
func (ks *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(raw, ks.algs)
	if err != nil {
		return ks.fail(ctx, newError(BadSignature, "the token's signature could not be parsed; sign in again", err))
	}
	if len(jws.Signatures) != 1 {
		return ks.fail(ctx, newError(MalformedToken, "the token must carry exactly one signature", nil))
	}
	kid := jws.Signatures[0].Header.KeyID

	keys, stale := ks.lookup(kid)
	if len(keys) == 0 || stale {
		if e := ks.refresh(ctx); e != nil && len(keys) == 0 {
			return ks.fail(ctx, e)
		}
		// After a failed refresh the keys fetched before are still there.
		keys, _ = ks.lookup(kid)
		if len(keys) == 0 {
			if !ks.hasKeys() {
				return ks.fail(ctx, newError(IssuerUnavailable,
					fmt.Sprintf("the signing keys of issuer %s could not be fetched; try again shortly", ks.issuer), ks.lastError()))
			}
			return ks.fail(ctx, newError(BadSignature,
				fmt.Sprintf("the token is signed with key id %q, which issuer %s does not publish; sign in again", kid, ks.issuer), nil))
		}
	}
	for _, k := range keys {
		if payload, err := jws.Verify(k.Key); err == nil {
			return payload, nil
		}
	}
	return ks.fail(ctx, newError(BadSignature, "the token's signature does not verify; sign in again", nil))
}

// lookup returns the keys matching kid (all keys when the token has none)
// and whether the key set is older than JWKSMaxAge.
func (ks *keySet) lookup(kid string) ([]jose.JSONWebKey, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	var out []jose.JSONWebKey
	for _, k := range ks.keys {
		if kid == "" || k.KeyID == kid {
			out = append(out, k)
		}
	}
	stale := !ks.lastSuccess.IsZero() && ks.now().Sub(ks.lastSuccess) >= JWKSMaxAge
	return out, stale
}

func (ks *keySet) hasKeys() bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return len(ks.keys) > 0
}

func (ks *keySet) lastError() error {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.lastErr
}

// refresh fetches the JWKS unless a fetch was attempted less than
// minInterval ago or happened while this caller waited for its turn. On
// failure the keys fetched before stay in use. It returns an error only when
// the caller's context ends while waiting.
func (ks *keySet) refresh(ctx context.Context) *Error {
	ks.mu.Lock()
	gen := ks.gen
	ks.mu.Unlock()
	// Wait for a fetch in flight rather than report its keys as missing.
	select {
	case ks.sem <- struct{}{}:
	case <-ctx.Done():
		return newError(IssuerUnavailable, "gave up waiting for the issuer's signing keys", context.Cause(ctx))
	}
	defer func() { <-ks.sem }()
	ks.mu.Lock()
	if ks.gen != gen {
		ks.mu.Unlock()
		return nil // someone fetched while we waited
	}
	if !ks.lastAttempt.IsZero() && ks.now().Sub(ks.lastAttempt) < ks.minInterval {
		ks.mu.Unlock()
		return nil // rate limited
	}
	ks.gen++
	ks.lastAttempt = ks.now()
	ks.mu.Unlock()

	keys, err := ks.fetch()
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if err != nil {
		ks.lastErr = err
		ks.log.Warn("sso: JWKS fetch failed; keys fetched before stay in use", "issuer", ks.issuer, "url", ks.jwksURL, "keys", len(ks.keys), "err", err)
		return nil
	}
	ks.keys, ks.lastErr, ks.lastSuccess = keys, nil, ks.now()
	ks.log.Info("sso: fetched JWKS", "issuer", ks.issuer, "keys", len(keys))
	return nil
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
