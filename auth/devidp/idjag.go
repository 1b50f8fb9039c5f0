package devidp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
)

// Enterprise-managed authorization (the MCP extension, on the IETF draft
// "Identity Assertion JWT Authorization Grant"): the provider exchanges an
// ID token it issued for an ID-JAG addressed to another authorization
// server (RFC 8693 token exchange), as Okta or Entra do for the clients an
// enterprise manages.
const (
	// GrantTypeTokenExchange is RFC 8693's grant type.
	GrantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeIDJAG is the requested and issued token type of an ID-JAG.
	TokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
	// TokenTypeIDToken is the subject token type the provider accepts.
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	// TypeIDJAG is the JOSE typ of an ID-JAG.
	TypeIDJAG = "oauth-id-jag+jwt"
	// IDJAGTTL is the lifetime of an ID-JAG: it is redeemed at once.
	IDJAGTTL = 5 * time.Minute
	// maxExchangeParam bounds audience, resource and scope.
	maxExchangeParam = 2048
)

// Sign signs claims as a JWT with the provider's key, with JOSE header
// typ. The provider signs a token for anyone anyway; Sign lets the tests of
// relying parties build the tokens a real IdP could send them (another
// typ, a foreign audience) signed by a key they trust.
func (p *Provider) Sign(typ string, claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", p.kid))
	if err != nil {
		return "", fmt.Errorf("devidp: signer: %w", err)
	}
	tok, err := auth.SignClaims(signer, claims)
	if err != nil {
		return "", fmt.Errorf("devidp: sign: %w", err)
	}
	return tok, nil
}

// IDJAGClaims are the claims of an ID-JAG the provider issues (draft
// section 3.1), for MintIDJAG.
type IDJAGClaims struct {
	// Email is the user; sub and email.
	Email string
	// Audience is the issuer of the authorization server that redeems it.
	Audience string
	// Resource is the MCP server's resource identifier; optional.
	Resource string
	// Scope is the space-separated scopes granted; optional.
	Scope string
	// ClientID is the client's id at that authorization server; default
	// Config.AssertionClientID.
	ClientID string
}

// MintIDJAG signs an ID-JAG for c, valid IDJAGTTL, with a fresh jti. It
// refuses a disabled account, as the token exchange does.
func (p *Provider) MintIDJAG(c IDJAGClaims) (token string, exp time.Time, err error) {
	email, err := checkEmail(c.Email)
	if err != nil {
		return "", time.Time{}, err
	}
	if p.isDisabled(email) {
		return "", time.Time{}, fmt.Errorf("%w: %s", ErrDisabled, email)
	}
	c.ClientID = cmp.Or(c.ClientID, p.cfg.AssertionClientID)
	now := p.cfg.Now().Truncate(time.Second)
	exp = now.Add(IDJAGTTL)
	claims := map[string]any{
		"iss": p.cfg.Issuer, "sub": email, "aud": c.Audience, "client_id": c.ClientID,
		"jti": randomToken(), "iat": now.Unix(), "exp": exp.Unix(),
		"email": email, "email_verified": true,
	}
	if c.Resource != "" {
		claims["resource"] = c.Resource
	}
	if c.Scope != "" {
		claims["scope"] = c.Scope
	}
	tok, err := p.Sign(TypeIDJAG, claims)
	return tok, exp, err
}

// exchangeToken is the token exchange (RFC 8693) for an ID-JAG: the
// subject token is an ID token this provider issued to its client, the
// audience the authorization server the ID-JAG is for.
func (p *Provider) exchangeToken(w http.ResponseWriter, f url.Values) {
	bad := func(code, desc string) { writeJSON(w, http.StatusBadRequest, oauthError{code, desc}) }
	switch {
	case f.Get("requested_token_type") != TokenTypeIDJAG:
		bad("invalid_request", "requested_token_type must be "+TokenTypeIDJAG+" (the only exchange this provider makes)")
		return
	case f.Get("subject_token_type") != TokenTypeIDToken:
		bad("invalid_request", "subject_token_type must be "+TokenTypeIDToken)
		return
	case f.Get("audience") == "" || len(f.Get("audience")) > maxExchangeParam:
		bad("invalid_request", "audience is required: the issuer of the authorization server the ID-JAG is for")
		return
	case len(f.Get("resource")) > maxExchangeParam || len(f.Get("scope")) > maxExchangeParam:
		bad("invalid_request", fmt.Sprintf("resource and scope are limited to %d bytes", maxExchangeParam))
		return
	}
	for _, k := range []string{"audience", "resource"} {
		if len(f[k]) > 1 {
			bad("invalid_target", "one "+k+" only")
			return
		}
	}
	email, err := p.subjectEmail(f.Get("subject_token"))
	if err != nil {
		bad("invalid_grant", err.Error())
		return
	}
	tok, exp, err := p.MintIDJAG(IDJAGClaims{Email: email, Audience: f.Get("audience"), Resource: f.Get("resource"), Scope: f.Get("scope")})
	if err != nil {
		bad("invalid_grant", err.Error())
		return
	}
	p.log.Info("devidp: ID-JAG issued", "email", email, "audience", f.Get("audience"))
	writeJSON(w, http.StatusOK, map[string]any{
		"issued_token_type": TokenTypeIDJAG, "access_token": tok, "token_type": "N_A",
		"expires_in": int64(exp.Sub(p.cfg.Now().Truncate(time.Second)) / time.Second), "scope": f.Get("scope")})
}

// subjectEmail verifies an ID token this provider issued to its client
// (signature, iss, aud, exp) and returns its email.
func (p *Provider) subjectEmail(raw string) (string, error) {
	if raw == "" || len(raw) > MaxFormBytes {
		return "", fmt.Errorf("subject_token is required: an ID token this provider issued")
	}
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", fmt.Errorf("subject_token is not a JWT this provider signs (RS256)")
	}
	payload, err := jws.Verify(&p.key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("subject_token was not signed by this provider (or by a previous run of it)")
	}
	var c struct {
		Issuer   string `json:"iss"`
		Audience string `json:"aud"`
		Email    string `json:"email"`
		Expiry   int64  `json:"exp"`
	}
	if err := json.NewDecoder(bytes.NewReader(payload)).Decode(&c); err != nil {
		return "", fmt.Errorf("subject_token claims do not decode")
	}
	switch {
	case c.Issuer != p.cfg.Issuer || c.Audience != p.cfg.ClientID:
		return "", fmt.Errorf("subject_token is not an ID token of this provider for client %q", p.cfg.ClientID)
	case !p.cfg.Now().Before(time.Unix(c.Expiry, 0)):
		return "", fmt.Errorf("subject_token expired; sign in again")
	case strings.TrimSpace(c.Email) == "":
		return "", fmt.Errorf("subject_token has no email")
	}
	return c.Email, nil
}
