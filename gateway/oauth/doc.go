// Package oauth is the gateway's OAuth 2.1 authorization server: a small,
// stateless facade in front of the company's OpenID Connect identity
// provider, so that an MCP client that knows nothing but the MCP URL can sign
// in. Company IdPs (Okta, Entra ID, Google Workspace) offer neither dynamic
// client registration nor client ID metadata documents to anonymous clients;
// the facade offers both, and is itself one confidential client of the IdP.
//
// # The flow
//
//	client ──register (RFC 7591)──▶ facade        client_id = signed, self-describing value
//	client ──GET /authorize──────▶ facade         client, exact redirect URI, PKCE S256, resource
//	browser ◀─consent page────────  facade        per browser and client; CSRF-protected
//	browser ──POST /authorize─────▶ facade ──302──▶ IdP /authorize (state, nonce, PKCE of its own)
//	browser ◀──302─────────────────  IdP ──────────▶ facade /oauth/callback
//	browser ◀──302 code, state, iss── facade        code = sealed(IdP code, bindings), ≤ 60 s
//	client ──POST /token (code, verifier)──▶ facade ──exchange IdP code──▶ IdP
//	                                         facade verifies the ID token (auth/sso rules, nonce)
//	client ◀──access token (JWT, aud = MCP URL, ≤ 1 h) + refresh token (sealed, rotating)──
//	client ──POST /token (refresh)──▶ facade ──refresh upstream──▶ IdP (a disabled user stops here)
//
// The grants added beside the core's authorization_code and refresh_token
// (Grant, Server.Add) live in packages of their own: the device flow with
// its peer channel between replicas (gateway/oauth/device), machine
// identities (gateway/oauth/machine) and identity assertions
// (gateway/oauth/idjag). They import this package; it imports none of
// them.
//
// # Stateless across replicas
//
// Nothing is stored: client ids are signed, and the consent record, the login
// state, authorization codes and refresh tokens are sealed (AES-256-GCM) under
// keys derived from the signing key that every replica holds. The facade
// exchanges the IdP's authorization code only when the client redeems the
// facade's code, so the IdP's own single-use rule makes each facade code
// single use across all replicas; each replica also remembers the codes it
// redeemed. Refresh-token reuse is refused by the replica that saw the first
// use and, when the IdP rotates its refresh tokens, by the IdP on any replica.
// docs/security.md has the threat model.
package oauth
