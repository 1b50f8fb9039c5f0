// Package console is the curators' console: server-rendered HTML pages on
// the gateway's public listener (same origin as /mcp, under /console/) to
// read, review and govern the brain in a browser.
//
// # One more client of the same tools
//
// The console has no way to the files but the brain tools, called through
// the gateway's own handlers (Tools, implemented by package gateway) as the
// signed-in person: routing, the grant cache and its mints, the shard's
// capability check, rate limits, audit and authorship are those of /mcp.
// What a page shows is what the person's agent would see; what a form
// changes is authored by their verified email.
//
// # Sign-in and its cookie
//
//	browser ──GET /console/login──▶ console        login cookie: sealed {state, PKCE verifier, next}
//	        ──302──▶ IdP (through the facade, gateway/oauth: AuthorizeFirstParty, no consent page)
//	        ◀──IdP──▶ /oauth/callback ──302──▶ /console/callback?code&state
//	console ── ExchangeFirstParty(code, verifier) ──▶ the facade's access token (≤ its TTL)
//	browser ◀── sign-in cookie: sealed {access token, CSRF secret}; HttpOnly, SameSite=Lax, Secure on https
//	browser ──POST /console/logout (CSRF)──▶ the token revoked (RevokeFirstParty), the cookie cleared
//
// The console is a first-party client of the gateway's authorization
// server: the same IdP round trip, codes, PKCE and token checks as any MCP
// client. Every request opens the sign-in cookie (AES-256-GCM under a key
// derived from the gateway's signing key, so any replica opens it and none
// stores anything) and verifies the access token inside it as /mcp would,
// revocation included: a cookie replayed after sign-out is refused by the
// replica that signed it out (docs/security.md says what other replicas do).
//
// # Pages
//
// Pages are html/template, work without JavaScript and load nothing but
// the console's own stylesheet. A note's markdown is rendered with goldmark
// (raw HTML omitted) and sanitized with bluemonday (a short allow-list of
// elements; http, https, mailto and relative links only). Every response
// carries a Content-Security-Policy of 'self' with no inline script or
// style, frame-ancestors 'none', nosniff and a same-origin referrer policy.
// Every form that changes anything carries a CSRF token bound to the
// sign-in and is refused from another origin. A wing or note the person
// cannot read is answered exactly as one that does not exist.
package console
