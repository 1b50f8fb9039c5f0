// Package device is the device authorization grant (RFC 8628) of the
// gateway's authorization server (gateway/oauth), for clients on a computer
// without a browser (an SSH host, a dev container): the client asks for a
// device code and a short user code; the user types the user code into
// the verification page in any browser, sees which client on which
// computer asks, approves, and signs in at the IdP as in the code flow;
// the client polls the token endpoint until the approval arrives.
//
// The device code is sealed, so any replica recognises a genuine one and
// its client; the pairing of the user code with the device code, and the
// approval, are held in the memory of the replica that issued the codes
// (docs/decisions.md, "Device flow"), the only per-replica state a
// sign-in needs.
//
//	client ──POST /device_authorization──▶ facade   device_code = sealed(id, client), user code BCDF-GHJK, 10 min
//	client ◀──device_code, user_code, verification_uri(_complete), interval 5 s──
//	user   ──any browser: GET /device, types the code──▶ facade   (CSRF cookie + sealed form, 10 codes/min per address)
//	browser ◀─approval page: client name and id, requesting IP, its User-Agent, code, age──
//	browser ──POST /device allow──▶ facade ──302──▶ IdP /authorize (state, nonce, PKCE of its own)
//	browser ──IdP ──▶ facade /oauth/callback        the IdP code is redeemed here, ID token verified
//	client ──POST /token grant_type=device_code (every interval)──▶ facade
//	        authorization_pending | slow_down (+5 s) | access_denied | expired_token | access + refresh token (once)
//
// peers.go is the channel between replicas through which a sign-in
// started at one completes through any other.
package device
