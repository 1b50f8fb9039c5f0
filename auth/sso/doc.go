// Package sso verifies the SSO bearer tokens agents present to the gateway:
// OIDC ID tokens (or JWT access tokens) from configured issuers, checked with
// go-oidc against each issuer's published keys, with pinned algorithms,
// audiences, a bounded clock skew, a verified email and optional allowed
// domains. The result is an auth.Identity whose email is canonical.
//
// Issuers are discovered lazily on first use and retried with backoff, so a
// gateway starts even when its IdP is down (Verify then fails with
// IssuerUnavailable, a 503, not an invalid token). JWKS are cached by key id
// and refetched at most once per JWKSRefetchInterval per issuer, so forged
// tokens with unknown key ids cannot flood the IdP. Verified tokens are kept
// in a bounded LRU keyed by their SHA-256 and never served past their exp.
//
// Every failure is an *Error whose Kind maps to one RFC 6750 error code and
// HTTP status, with a description a person can act on.
package sso
