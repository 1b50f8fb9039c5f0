package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth/config"
)

// AccessClockSkew is the leeway on an access token's iat and exp: every
// replica's clock signs and checks them, so it only covers replica drift.
const AccessClockSkew = 30 * time.Second

// accessEntry is a verified access token remembered by its hash.
type accessEntry struct {
	id     auth.Identity
	jti    string
	family string
	until  time.Time
}

// errNotAccessToken: the token was not signed by this server at all.
var errNotAccessToken = errors.New("oauth: not an access token of this gateway")

// Handles reports whether a bearer token claims to be one of this server's
// access tokens (its key id is one of the server's). It decodes only the
// JOSE header; Verify then checks everything.
func (s *Server) Handles(raw string) bool {
	dot := strings.IndexByte(raw, '.')
	if dot <= 0 || dot > 512 {
		return false
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if decodeSegment(raw[:dot], &h) != nil {
		return false
	}
	return s.keys.ByID(h.Kid) != nil
}

// Verify checks an access token for the MCP endpoint: signature by a held
// key (EdDSA only), type at+jwt, issuer, audience = the MCP URL, expiry,
// and not revoked on this replica. Failures are *sso.Error, so the gateway
// answers them as it answers its IdP's tokens.
func (s *Server) Verify(_ context.Context, raw string) (auth.Identity, error) {
	if len(raw) > sso.MaxTokenBytes {
		return auth.Identity{}, sso.NewError(sso.MalformedToken, fmt.Sprintf("the token is over the %d-byte limit", sso.MaxTokenBytes), nil)
	}
	now := s.now()
	key := sha256.Sum256([]byte(raw))
	if e, ok := s.verified.Get(key); ok && now.Before(e.until) {
		if s.isRevoked("j:"+e.jti, now) || s.isRevoked("f:"+e.family, now) {
			return auth.Identity{}, sso.NewError(sso.Expired, "the access token was revoked; sign in again", nil)
		}
		if err := s.ended.Refusal(e.id); err != nil {
			return auth.Identity{}, err
		}
		id := e.id
		id.Groups = append([]string(nil), e.id.Groups...)
		return id, nil
	}
	c, err := s.parseAccessToken(raw)
	if err != nil {
		return auth.Identity{}, err
	}
	switch {
	case c.Issuer != s.issuer:
		return auth.Identity{}, sso.NewError(sso.WrongIssuer, "the token was issued by another gateway", nil)
	case c.Audience != s.resource:
		return auth.Identity{}, sso.NewError(sso.WrongAudience, fmt.Sprintf("the token is for %.200q, not for %s; sign in to this server", c.Audience, s.resource), nil)
	case c.Expiry == 0 || c.IssuedAt == 0:
		return auth.Identity{}, sso.NewError(sso.MalformedToken, "the token has no exp or iat", nil)
	case !now.Before(time.Unix(c.Expiry, 0).Add(AccessClockSkew)):
		return auth.Identity{}, sso.NewError(sso.Expired, fmt.Sprintf("the access token expired at %s; refresh it or sign in again", time.Unix(c.Expiry, 0).UTC().Format(time.RFC3339)), nil)
	case time.Unix(c.IssuedAt, 0).After(now.Add(AccessClockSkew)):
		return auth.Identity{}, sso.NewError(sso.NotYetValid, "the access token was issued in the future; check the gateway replicas' clocks", nil)
	case c.Expiry-c.IssuedAt > int64((config.DefaultAccessTokenTTL+AccessClockSkew)/time.Second):
		return auth.Identity{}, sso.NewError(sso.MalformedToken, "the access token lives longer than any this gateway issues", nil)
	case s.isRevoked("j:"+c.ID, now) || s.isRevoked("f:"+c.Family, now):
		return auth.Identity{}, sso.NewError(sso.Expired, "the access token was revoked; sign in again", nil)
	}
	email, err := auth.CanonicalEmail(c.Email)
	if err != nil || email != c.Email {
		return auth.Identity{}, sso.NewError(sso.EmailMissing, "the access token carries no valid email", err)
	}
	if auth.IsServiceAccountDomain(email) {
		if s.services == nil {
			return auth.Identity{}, sso.NewError(sso.Expired, "this gateway has no service accounts", nil)
		}
		if err := s.services.VerifyService(c); err != nil {
			return auth.Identity{}, err
		}
	}
	exp := time.Unix(c.Expiry, 0)
	id := auth.Identity{Email: email, Groups: c.Groups, Issuer: s.issuer, Subject: c.Subject, Expiry: exp, IssuedAt: time.Unix(c.IssuedAt, 0)}
	if err := s.ended.Refusal(id); err != nil {
		return auth.Identity{}, err
	}
	until := now.Add(accessCacheTTL)
	if exp.Before(until) {
		until = exp
	}
	stored := id
	stored.Groups = append([]string(nil), c.Groups...)
	s.verified.Add(key, accessEntry{id: stored, jti: c.ID, family: c.Family, until: until})
	return id, nil
}

// parseAccessToken checks the signature and type of one of this server's
// access tokens and decodes its claims strictly (numbers as numbers, no
// unknown types). It does not check expiry, issuer or audience.
func (s *Server) parseAccessToken(raw string) (AccessClaims, error) {
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return AccessClaims{}, sso.NewError(sso.MalformedToken, "the token is not a signed JWT", err)
	}
	if len(jws.Signatures) != 1 {
		return AccessClaims{}, sso.NewError(sso.MalformedToken, "the token must carry one signature", nil)
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); !strings.EqualFold(typ, "at+jwt") {
		return AccessClaims{}, sso.NewError(sso.MalformedToken, "the token is not an access token (typ at+jwt)", nil)
	}
	k := s.keys.ByID(h.KeyID)
	if k == nil {
		return AccessClaims{}, sso.NewError(sso.BadSignature, "the token is signed with a key this gateway does not hold", errNotAccessToken)
	}
	payload, err := jws.Verify(k.Priv.Public())
	if err != nil {
		return AccessClaims{}, sso.NewError(sso.BadSignature, "the token's signature does not verify", err)
	}
	var c AccessClaims
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&c); err != nil {
		return AccessClaims{}, sso.NewError(sso.MalformedToken, "the token's claims do not decode", err)
	}
	return c, nil
}
