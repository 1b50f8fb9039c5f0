// Package signin is the client side of signing in to a Brainstem gateway,
// as `brainstem login`, `token`, `join` and `doctor` use it: the same
// OAuth 2.1 steps an MCP client takes with nothing but the MCP URL.
//
//	POST <mcp URL> without a token ──▶ 401, WWW-Authenticate: Bearer resource_metadata="…"
//	GET  protected-resource metadata (RFC 9728): resource must equal the MCP URL exactly
//	GET  authorization server metadata (RFC 8414): issuer exact, PKCE S256, registration endpoint
//	POST registration endpoint (RFC 7591): a public client, redirect URI http://127.0.0.1/callback
//	browser ──▶ authorization endpoint (PKCE S256, state, resource = MCP URL) ──▶ consent, company IdP
//	browser ──▶ http://127.0.0.1:<port>/callback?code&state&iss   (one valid answer is accepted)
//	POST token endpoint: code + verifier + resource ──▶ access token, rotating refresh token
//
// LoginDevice (`brainstem login --device`, RFC 8628) needs no browser on
// this computer: it registers a device client, posts to the device
// authorization endpoint, prints the verification URL and the user code,
// and polls the token endpoint every interval (plus 5 s at each
// slow_down) until the user approved in a browser anywhere.
//
// A sign-in is kept per MCP URL in the user's configuration directory
// (Store): one JSON file, mode 0600, in a 0700 directory, written
// atomically (temp file, fsync, rename, fsync of the directory); a file
// other users could read is refused. Client.Token refreshes an access
// token about to expire, under a lock file so two processes do not redeem
// the same rotating refresh token, and saves the new refresh token before
// it hands out the new access token.
package signin
