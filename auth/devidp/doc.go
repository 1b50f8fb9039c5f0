// Package devidp is a small but real OpenID Connect provider for
// `brainstem dev` and tests: discovery, JWKS (RS256, a fresh RSA-2048 key per
// process), an authorization endpoint whose login form accepts any email and
// groups, and a token endpoint for the authorization code flow with PKCE S256
// and rotating refresh tokens. The ID token doubles as the access token, so
// it can be sent to the gateway as a Bearer token.
//
// WARNING: it authenticates anyone as anyone. It serves only on loopback
// addresses, answers only requests addressed to a loopback name from no or
// a loopback Origin (LoopbackOnly, against DNS rebinding), redirects only to
// loopback URLs, signs only addresses the email rule (auth.CanonicalEmail)
// accepts, and logs a warning when created. Never use it in production.
package devidp
