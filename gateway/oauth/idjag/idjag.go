// Package idjag is the identity assertions of the gateway's authorization
// server (gateway/oauth): the JWT bearer grant (RFC 7523) with an ID-JAG
// of a trusted enterprise IdP (see the constants below).
package idjag

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
)

// Enterprise-managed authorization: the MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization, on the IETF
// draft "Identity Assertion JWT Authorization Grant" (ID-JAG). A company
// IdP vouches for a user of a client it manages with a signed ID-JAG,
// which the client presents here as an RFC 7523 JWT bearer grant; the
// gateway checks it and issues its own access token, with no consent
// screen and no upstream sign-in.
const (
	// GrantTypeJWTBearer is RFC 7523's grant type.
	GrantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// GrantProfileIDJAG is advertised in authorization_grant_profiles_supported.
	GrantProfileIDJAG = "urn:ietf:params:oauth:grant-profile:id-jag"
	// TypeIDJAG is the JOSE typ an ID-JAG must carry.
	TypeIDJAG = "oauth-id-jag+jwt"
	// MaxIDJAGBytes bounds an ID-JAG (sso.MaxTokenBytes, as any IdP token).
	MaxIDJAGBytes = sso.MaxTokenBytes
	// MaxIDJAGLifetime is how far in the future an ID-JAG's exp may be: it
	// bounds how long the replay memory keeps its jti (IdPs issue them for
	// 5 minutes).
	MaxIDJAGLifetime = 10 * time.Minute
	// idjagClockSkew is the leeway on an ID-JAG's exp, nbf and iat.
	idjagClockSkew = 30 * time.Second
	// maxIDJAGsRemembered bounds the replay memory of one replica.
	maxIDJAGsRemembered = 100000
)

// Options are the identity assertions' dependencies beyond the server.
type Options struct {
	// AllowedDomains and GroupsClaim are the oidc section's email domain
	// rule and groups claim, applied to identity assertions too.
	AllowedDomains []string
	GroupsClaim    string
}

// Grant is the JWT bearer grant with identity assertions (ID-JAG) of the
// configured enterprise IdPs.
type Grant struct {
	srv      *oauth.Server
	machines *machine.Grant // authenticates the confidential clients
	// enterprise is what New builds from oauth.enterprise; nil: no
	// ID-JAGs accepted.
	enterprise *enterprise
}

type enterprise struct {
	verifier oauth.IdentityVerifier     // the sso rules, with the IdPs as issuers and the gateway as audience
	clients  map[string]map[string]bool // issuer → allowed client ids
	seen     *machine.Replays           // issuer + jti of ID-JAGs accepted here
}

// New builds the ID-JAG verifier of srv's oauth.enterprise: an
// sso.Verifier whose issuers are the enterprise IdPs and whose one
// audience is the gateway's issuer, with the oidc section's email rules
// (opt). It has no cache: each ID-JAG is used once. A service account
// among an IdP's clients authenticates with machines.
func New(ctx context.Context, srv *oauth.Server, machines *machine.Grant, opt Options) (*Grant, error) {
	g := &Grant{srv: srv, machines: machines}
	cfg := srv.Config().Enterprise
	if len(cfg.IdPs) == 0 {
		return g, nil
	}
	sc := sso.Config{
		GroupsClaim: opt.GroupsClaim, AllowedDomains: opt.AllowedDomains, ClockSkew: idjagClockSkew, CacheSize: -1,
		HTTPClient: srv.HTTPClient(), Now: srv.Now, Logger: srv.Log(),
	}
	e := &enterprise{clients: map[string]map[string]bool{}, seen: machine.NewReplays(maxIDJAGsRemembered)}
	for _, idp := range cfg.IdPs {
		algs := idp.Algorithms
		if len(algs) == 0 {
			algs = []string{sso.DefaultAlgorithm}
		}
		sc.Issuers = append(sc.Issuers, sso.IssuerConfig{URL: idp.Issuer, Audiences: []string{srv.Issuer()}, Algorithms: algs, TrustEmail: idp.TrustEmail})
		set := map[string]bool{}
		for _, c := range idp.Clients {
			set[c] = true
		}
		e.clients[idp.Issuer] = set
	}
	v, err := sso.NewVerifier(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("oauth: enterprise: %w", err)
	}
	e.verifier = v
	g.enterprise = e
	return g, nil
}

// GrantType is the JWT bearer grant type.
func (s *Grant) GrantType() string { return GrantTypeJWTBearer }

// Advertise lists the grant and the ID-JAG profile when enterprise IdPs
// are configured.
func (s *Grant) Advertise(m map[string]any) bool {
	if s.enterprise == nil {
		return false
	}
	m["authorization_grant_profiles_supported"] = []string{GrantProfileIDJAG}
	return true
}

// Register adds nothing: the grant is the token endpoint's.
func (s *Grant) Register(*http.ServeMux) {}

// Redeem is the token endpoint's JWT bearer grant: the client of an
// enterprise IdP, a public client or a service account, checked against
// the IdP's clients.
func (s *Grant) Redeem(_ http.ResponseWriter, r *http.Request, form url.Values) ([]byte, string, *oauth.TokenError) {
	body, terr := s.redeemIDJAG(r, form)
	return body, "token_jwt_bearer", terr
}

// idjagClaims are the ID-JAG claims checked beyond the sso rules (draft
// section 3.1).
type idjagClaims struct {
	Issuer   string          `json:"iss"`
	Subject  string          `json:"sub"`
	ClientID string          `json:"client_id"`
	ID       string          `json:"jti"`
	Expiry   *int64          `json:"exp"`
	IssuedAt *int64          `json:"iat"`
	Resource json.RawMessage `json:"resource"`
	Scope    *string         `json:"scope"`
}

// parseIDJAG decodes an ID-JAG's header and claims without verifying the
// signature: the JOSE typ must be oauth-id-jag+jwt (RFC 8725 §3.11: an ID
// token or an access token of the same IdP is not an ID-JAG), the
// claims a JSON object. The signature and the sso rules are checked after.
func parseIDJAG(raw string) (idjagClaims, error) {
	if len(raw) > MaxIDJAGBytes {
		return idjagClaims{}, fmt.Errorf("the assertion is over %d bytes", MaxIDJAGBytes)
	}
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{
		jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return idjagClaims{}, errors.New("the assertion is not a JWT with one asymmetric signature")
	}
	typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string)
	if t := strings.ToLower(typ); t != TypeIDJAG && t != "application/"+TypeIDJAG {
		return idjagClaims{}, fmt.Errorf("the assertion's typ is %.40q, not %s: it is not an ID-JAG", typ, TypeIDJAG)
	}
	var c idjagClaims
	if err := json.NewDecoder(bytes.NewReader(jws.UnsafePayloadWithoutVerification())).Decode(&c); err != nil {
		return idjagClaims{}, errors.New("the assertion's claims do not decode")
	}
	return c, nil
}

// redeemIDJAG is the JWT bearer grant with an ID-JAG: it identifies the
// client, verifies the assertion (typ, signature by the trusted IdP with a
// pinned algorithm, iss, aud = this issuer, exp, email rules), checks its
// client_id, resource, scope and jti, and issues an access token.
func (s *Grant) redeemIDJAG(r *http.Request, form url.Values) ([]byte, *oauth.TokenError) {
	if s.enterprise == nil {
		return nil, oauth.NewTokenError(http.StatusBadRequest, "unsupported_grant_type", "this gateway accepts no identity assertions (oauth.enterprise)", 0)
	}
	// No budget of requests: only refused assertions spend the address's
	// budget of failed authentications (refuseIDJAG), so a genuine
	// assertion is answered whatever others sent from its address.
	// The request is checked before the client authenticates or the
	// assertion is verified, so a wrong resource or scope spends neither.
	if terr := s.srv.CheckTarget(form); terr != nil {
		return nil, terr
	}
	raw := form.Get("assertion")
	if raw == "" {
		return nil, oauth.InvalidRequest("assertion is required: the ID-JAG from your identity provider")
	}
	if len(raw) > MaxIDJAGBytes {
		return nil, oauth.InvalidRequest("assertion is over %d bytes", MaxIDJAGBytes)
	}
	clientID, terr := s.assertionClient(r, form)
	if terr != nil {
		return nil, terr
	}
	c, err := parseIDJAG(raw)
	if err != nil {
		return nil, s.refuseIDJAG(r, clientID, "", err.Error())
	}
	allowed, trusted := s.enterprise.clients[c.Issuer]
	if !trusted {
		return nil, s.refuseIDJAG(r, clientID, "", fmt.Sprintf("the assertion comes from %.200q, which is not one of oauth.enterprise.idps", c.Issuer))
	}
	id, err := s.enterprise.verifier.Verify(r.Context(), raw)
	if err != nil {
		var se *sso.Error
		if errors.As(err, &se) && se.Kind == sso.IssuerUnavailable {
			return nil, oauth.NewTokenError(http.StatusServiceUnavailable, "temporarily_unavailable", se.Description, max(se.RetryAfter, time.Second))
		}
		if errors.As(err, &se) {
			return nil, s.refuseIDJAG(r, clientID, c.Issuer, se.Description)
		}
		s.srv.Log().Error("oauth: ID-JAG verification failed", "err", err)
		return nil, oauth.ErrInternal()
	}
	now := s.srv.Now()
	if reason := s.checkIDJAG(c, clientID, allowed, now); reason != "" {
		return nil, s.refuseIDJAG(r, clientID, c.Issuer, reason)
	}
	switch s.enterprise.seen.Remember(c.Issuer+"\x00"+c.ID, time.Unix(*c.Expiry, 0).Add(idjagClockSkew), now) {
	case machine.RememberReplay:
		return nil, s.refuseIDJAG(r, clientID, c.Issuer, "the assertion was already used (jti); ask your identity provider for a new one")
	case machine.RememberFull:
		s.srv.Log().Warn("oauth: the ID-JAG replay memory is full; refusing assertions until some expire")
		return nil, oauth.NewTokenError(http.StatusServiceUnavailable, "temporarily_unavailable", "too many identity assertions; try again shortly", 10*time.Second)
	}
	body, terr := s.srv.Issue(id, clientID, "", "jag:"+oauth.RandomString(16), 0, GrantTypeJWTBearer)
	if terr != nil {
		return nil, terr
	}
	s.srv.Log().Info("oauth: identity assertion accepted", "email", id.Email, "idp", c.Issuer, "client", clientID,
		"jti", keyring.Digest(c.ID), "client_ip", s.srv.ClientIP(r))
	return body, nil
}

// checkIDJAG returns why a verified ID-JAG is refused, or "".
func (s *Grant) checkIDJAG(c idjagClaims, clientID string, allowed map[string]bool, now time.Time) string {
	switch {
	case c.Subject == "":
		return "the assertion has no sub"
	case c.ClientID != clientID:
		return fmt.Sprintf("the assertion was issued to client %.200q, not to the client presenting it", c.ClientID)
	case !allowed[clientID]:
		return fmt.Sprintf("client %.200q is not one the identity provider may vouch for here (oauth.enterprise.idps[].clients)", clientID)
	case c.Expiry == nil || c.IssuedAt == nil:
		return "the assertion has no exp or iat"
	case time.Unix(*c.Expiry, 0).After(now.Add(MaxIDJAGLifetime + idjagClockSkew)):
		return fmt.Sprintf("the assertion's exp is more than %s ahead", MaxIDJAGLifetime)
	case c.ID == "" || len(c.ID) > machine.MaxJTIBytes || auth.HasControlChar(c.ID):
		return fmt.Sprintf("jti is required: 1 to %d printable bytes", machine.MaxJTIBytes)
	case len(c.Resource) > 0 && !s.idjagResource(c.Resource):
		return "the assertion is for another resource, not " + s.srv.Resource()
	case c.Scope != nil && *c.Scope != "" && !slices.Contains(strings.Fields(*c.Scope), oauth.Scope):
		return fmt.Sprintf("the identity provider did not grant the %s scope (the assertion's scope is %.100q)", oauth.Scope, *c.Scope)
	}
	return ""
}

// idjagResource accepts the resource claim as one string or an array of
// one, naming the MCP endpoint.
func (s *Grant) idjagResource(raw json.RawMessage) bool {
	res := oauth.Strings(raw)
	return len(res) == 1 && s.srv.IsResource(res[0])
}

// assertionClient identifies the client of a JWT bearer grant: a service
// account named in the IdP's clients authenticates with its credential
// (client_secret_basic, client_secret_post or private_key_jwt); any other
// client names itself with client_id and no credential (a public client).
func (s *Grant) assertionClient(r *http.Request, form url.Values) (string, *oauth.TokenError) {
	_, _, basic := r.BasicAuth()
	_, post := form["client_secret"]
	_, jwtAuth := form["client_assertion"]
	if basic || post || jwtAuth {
		return s.machines.AuthenticateClient(r, form)
	}
	id := form.Get("client_id")
	if id == "" {
		return "", oauth.NewTokenError(http.StatusUnauthorized, "invalid_client", "client_id is required", 0)
	}
	if terr := s.machines.RefuseUnauthenticated(r, id); terr != nil {
		return "", terr
	}
	return id, nil
}

// refuseIDJAG logs a refused ID-JAG (never the assertion) and answers
// invalid_grant with the reason.
func (s *Grant) refuseIDJAG(r *http.Request, clientID, issuer, reason string) *oauth.TokenError {
	// A client id no IdP vouches for is logged as a digest: it may be a
	// secret pasted into the wrong field.
	label := "unknown:" + keyring.Digest(clientID)
	for _, set := range s.enterprise.clients {
		if set[clientID] {
			label = clientID
		}
	}
	ip := s.srv.ClientIP(r)
	if wait, tell := s.machines.SpendFailure(ip); wait > 0 {
		if tell {
			s.srv.Log().Warn("oauth: failed authentications from an address are over their budget; refusing its failures with 429 for now", "client_ip", ip, "grant", "jwt_bearer")
		}
		return oauth.NewTokenError(http.StatusTooManyRequests, "temporarily_unavailable", "too many failed authentications from your address; try again shortly", wait)
	}
	s.srv.Log().Warn("oauth: identity assertion refused", "client", label, "idp", issuer, "reason", reason, "client_ip", ip)
	return oauth.InvalidGrant("%s", reason)
}
