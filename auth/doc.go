// Package auth holds who a caller is and what they may do in a wing: the
// canonical identity (CanonicalEmail is the one email rule; GroupSet and
// GroupsDigest the canonical groups), capabilities, wing policies and the
// shard tokens a shard signs for the gateway (SignClaims, and ValidPKCE for
// the authorization servers). It knows nothing about MCP or
// QUIC.
//
// SSO token verification lives in auth/sso and the development identity
// provider in auth/devidp, so that a shard (which must not know about SSO)
// can import this package without linking an OIDC client.
package auth
