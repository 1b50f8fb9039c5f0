package sso

import (
	"errors"
	"net/http"
	"time"
)

// Kind classifies why a bearer token was refused. Each kind maps to exactly
// one RFC 6750 error code and one HTTP status (see Error.OAuthCode and
// Error.HTTPStatus).
type Kind uint8

// The kinds of verification failure.
const (
	// NoToken: no bearer token at all. 401 with no error code (RFC 6750 §3.1:
	// a request without credentials gets a bare challenge).
	NoToken Kind = iota + 1
	// Malformed: the Authorization header is not "Bearer <token>" (another
	// scheme, several headers, bad characters). 400 invalid_request.
	Malformed
	// MalformedToken: the token is not a well-formed signed JWT, its claims
	// do not decode, it has no exp, or it is over MaxTokenBytes.
	// 401 invalid_token.
	MalformedToken
	// BadSignature: the signature does not verify, the algorithm is not one
	// the issuer is pinned to (alg none, HS256, ...), or the key id is
	// unknown to the issuer's JWKS. 401 invalid_token.
	BadSignature
	// WrongIssuer: iss is not a configured issuer. 401 invalid_token.
	WrongIssuer
	// WrongAudience: aud holds none of the issuer's accepted audiences.
	// 401 invalid_token.
	WrongAudience
	// Expired: exp (plus ClockSkew) has passed. 401 invalid_token.
	Expired
	// NotYetValid: nbf or iat is later than now plus ClockSkew.
	// 401 invalid_token.
	NotYetValid
	// EmailMissing: no email claim (the client must ask for the email scope),
	// or one the email rule (auth.CanonicalEmail) refuses. 401 invalid_token.
	EmailMissing
	// EmailUnverified: email_verified is absent, false or "false".
	// 403 insufficient_scope: signing in again with the same account cannot
	// help; the person must verify the address at their identity provider.
	EmailUnverified
	// DomainNotAllowed: the email's domain is not in AllowedDomains.
	// 403 insufficient_scope.
	DomainNotAllowed
	// IssuerUnavailable: the issuer's discovery document or JWKS could not
	// be fetched. 503 with no OAuth error code: the token may well be good;
	// the client should retry later rather than sign in again.
	IssuerUnavailable
)

var kindNames = [...]string{
	NoToken: "no_token", Malformed: "malformed", MalformedToken: "malformed_token",
	BadSignature: "bad_signature", WrongIssuer: "wrong_issuer", WrongAudience: "wrong_audience",
	Expired: "expired", NotYetValid: "not_yet_valid", EmailMissing: "email_missing",
	EmailUnverified: "email_unverified", DomainNotAllowed: "domain_not_allowed",
	IssuerUnavailable: "issuer_unavailable",
}

// String returns a short snake_case name, suitable for a metric label.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Sentinels, one per kind, so callers can write errors.Is(err, sso.ErrExpired).
// A *Error matches the sentinel of its Kind.
var (
	ErrNoToken           = errors.New("sso: no bearer token")
	ErrMalformed         = errors.New("sso: malformed authorization header")
	ErrMalformedToken    = errors.New("sso: malformed token")
	ErrBadSignature      = errors.New("sso: bad token signature")
	ErrWrongIssuer       = errors.New("sso: token from an unknown issuer")
	ErrWrongAudience     = errors.New("sso: token for another audience")
	ErrExpired           = errors.New("sso: token expired")
	ErrNotYetValid       = errors.New("sso: token not yet valid")
	ErrEmailMissing      = errors.New("sso: token has no email")
	ErrEmailUnverified   = errors.New("sso: email not verified")
	ErrDomainNotAllowed  = errors.New("sso: email domain not allowed")
	ErrIssuerUnavailable = errors.New("sso: issuer unavailable")
)

var sentinels = [...]error{
	NoToken: ErrNoToken, Malformed: ErrMalformed, MalformedToken: ErrMalformedToken,
	BadSignature: ErrBadSignature, WrongIssuer: ErrWrongIssuer, WrongAudience: ErrWrongAudience,
	Expired: ErrExpired, NotYetValid: ErrNotYetValid, EmailMissing: ErrEmailMissing,
	EmailUnverified: ErrEmailUnverified, DomainNotAllowed: ErrDomainNotAllowed,
	IssuerUnavailable: ErrIssuerUnavailable,
}

func (k Kind) sentinel() error {
	if int(k) < len(sentinels) {
		return sentinels[k]
	}
	return nil
}

// Error is why a token was refused. Description is a sentence a person can
// act on and is safe to send to the client: it holds only the characters an
// RFC 6750 error_description allows (printable ASCII without '"' and '\\'),
// so it can go into a WWW-Authenticate challenge as is. Err is the underlying
// cause, for logs.
type Error struct {
	Kind        Kind
	Description string
	Err         error
	// RetryAfter, for IssuerUnavailable, is when verification can be
	// tried again: the discovery or JWKS backoff, or the least interval
	// between JWKS fetches. Zero when unknown.
	RetryAfter time.Duration
	// Issuer is the token's (unverified) iss claim, header-safe and at most
	// 200 bytes, when the token got that far; for logs.
	Issuer string
	// Repeat: this very token was refused moments ago and the answer comes
	// from memory (see RefusedTTL); the caller keeps sending a bad token.
	Repeat bool
}

// NewError builds an *Error of kind k. desc is made header-safe. Other token
// verifiers of the gateway (its own authorization server's access tokens)
// use it so that every refused token is answered alike.
func NewError(k Kind, desc string, err error) *Error {
	return &Error{Kind: k, Description: headerSafe(desc), Err: err}
}

// headerSafe makes a description fit an RFC 6750 error_description
// (%x20-21 / %x23-5B / %x5D-7E): descriptions quote claims an attacker
// controls, and the gateway puts them in a WWW-Authenticate header.
func headerSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == '"':
			b[i] = '\''
		case c == '\\' || c < 0x20 || c > 0x7e:
			b[i] = '?'
		}
	}
	return string(b)
}

// Error returns "sso: <description>: <cause>".
func (e *Error) Error() string {
	s := "sso: " + e.Description
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of the error's Kind (ErrExpired for Expired, ...).
func (e *Error) Is(target error) bool {
	s := e.Kind.sentinel()
	return s != nil && target == s
}

// OAuthCode returns the RFC 6750 error code for the WWW-Authenticate
// challenge: "" for NoToken and IssuerUnavailable (no error attribute),
// "invalid_request" for Malformed, "insufficient_scope" for EmailUnverified
// and DomainNotAllowed, and "invalid_token" for every other kind.
func (e *Error) OAuthCode() string {
	switch e.Kind {
	case NoToken, IssuerUnavailable:
		return ""
	case Malformed:
		return "invalid_request"
	case EmailUnverified, DomainNotAllowed:
		return "insufficient_scope"
	}
	return "invalid_token"
}

// HTTPStatus returns 400 for Malformed, 403 for EmailUnverified and
// DomainNotAllowed, 503 for IssuerUnavailable and 401 for every other kind.
func (e *Error) HTTPStatus() int {
	switch e.Kind {
	case Malformed:
		return http.StatusBadRequest
	case EmailUnverified, DomainNotAllowed:
		return http.StatusForbidden
	case IssuerUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusUnauthorized
}
