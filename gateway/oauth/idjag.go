package oauth

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

	"github.com/brainstem/brainstem/auth/sso"
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
	// MaxEnterpriseIdPs bounds oauth.enterprise.idps.
	MaxEnterpriseIdPs = 20
	// MaxEnterpriseClients bounds the clients of one IdP.
	MaxEnterpriseClients = 1000
	// idjagClockSkew is the leeway on an ID-JAG's exp, nbf and iat.
	idjagClockSkew = 30 * time.Second
	// maxIDJAGsRemembered bounds the replay memory of one replica.
	maxIDJAGsRemembered = 100000
)

// EnterpriseConfig is the `oauth.enterprise` section: the company IdPs
// whose ID-JAGs the token endpoint accepts. Empty: the grant is off and
// not advertised.
type EnterpriseConfig struct {
	// IdPs are the trusted IdPs, each with the clients it may vouch for.
	IdPs []EnterpriseIdP `yaml:"idps"`
}

// EnterpriseIdP is one company IdP that issues ID-JAGs for the gateway.
// Its keys are found by OpenID discovery (issuer +
// /.well-known/openid-configuration, then jwks_uri), cached and refreshed
// as the oidc section's are. Its ID-JAGs' emails pass the oidc section's
// rules: a verified email (or TrustEmail), oidc.allowed_domains, never the
// service account domain; groups come from oidc.groups_claim.
type EnterpriseIdP struct {
	// Issuer is the IdP's issuer, exactly as in the ID-JAG's iss: https,
	// or http on a loopback host (the development IdP).
	Issuer string `yaml:"issuer"`
	// Algorithms pins the accepted signature algorithms; default
	// ["RS256"]. Symmetric algorithms and "none" are refused.
	Algorithms []string `yaml:"algorithms"`
	// TrustEmail accepts an email without email_verified, as
	// oidc.issuers[].trust_email does; only for IdPs whose users cannot
	// set their own address.
	TrustEmail bool `yaml:"trust_email"`
	// Clients are the client ids the IdP may name in an ID-JAG's
	// client_id (what the IdP's administrator configured as the client's
	// id at this gateway), compared exactly. A client that is also one of
	// oauth.service_accounts must authenticate with that account's
	// credential (a confidential client); any other is a public client
	// that only names itself (client_id in the form).
	Clients []string `yaml:"clients"`
}

// validateEnterprise reports every problem of oauth.enterprise.
func validateEnterprise(c EnterpriseConfig, bad func(key, format string, args ...any)) {
	if len(c.IdPs) > MaxEnterpriseIdPs {
		bad("enterprise.idps", "%d identity providers, the limit is %d", len(c.IdPs), MaxEnterpriseIdPs)
		return
	}
	seen := map[string]int{}
	for i, idp := range c.IdPs {
		key := fmt.Sprintf("enterprise.idps[%d]", i)
		ic := sso.IssuerConfig{URL: idp.Issuer, Audiences: []string{"gateway"}, Algorithms: idp.Algorithms}
		if err := (sso.Config{Issuers: []sso.IssuerConfig{ic}}).Validate(); err != nil {
			bad(key, "%v", err)
		}
		if j, dup := seen[idp.Issuer]; dup {
			bad(key+".issuer", "%q is also enterprise.idps[%d]", idp.Issuer, j)
		}
		seen[idp.Issuer] = i
		switch n := len(idp.Clients); {
		case n == 0:
			bad(key+".clients", "required: the client ids this IdP may vouch for")
		case n > MaxEnterpriseClients:
			bad(key+".clients", "%d clients, the limit is %d", n, MaxEnterpriseClients)
		}
		for j, cl := range idp.Clients {
			if cl == "" || len(cl) > maxClientIDBytes || hasControlChar(cl) || strings.TrimSpace(cl) != cl {
				bad(fmt.Sprintf("%s.clients[%d]", key, j), "%q is empty, over %d bytes, unprintable or has surrounding spaces", cl, maxClientIDBytes)
			}
		}
	}
}

// maxClientIDBytes bounds a client id named in configuration.
const maxClientIDBytes = 2048

// enterprise is what New builds from oauth.enterprise.
type enterprise struct {
	verifier IdentityVerifier           // the sso rules, with the IdPs as issuers and the gateway as audience
	clients  map[string]map[string]bool // issuer → allowed client ids
	seen     *assertionStore            // issuer + jti of ID-JAGs accepted here
}

// newEnterprise builds the ID-JAG verifier: an sso.Verifier whose issuers
// are the enterprise IdPs and whose one audience is the gateway's issuer,
// with the oidc section's email rules (opt.AllowedDomains,
// opt.GroupsClaim). It has no cache: each ID-JAG is used once.
func newEnterprise(ctx context.Context, cfg EnterpriseConfig, issuer string, opt Options) (*enterprise, error) {
	if len(cfg.IdPs) == 0 {
		return nil, nil
	}
	sc := sso.Config{
		GroupsClaim: opt.GroupsClaim, AllowedDomains: opt.AllowedDomains, ClockSkew: idjagClockSkew, CacheSize: -1,
		HTTPClient: opt.HTTPClient, Now: opt.Now, Logger: opt.Logger,
	}
	e := &enterprise{clients: map[string]map[string]bool{}, seen: newAssertionStore(maxIDJAGsRemembered)}
	for _, idp := range cfg.IdPs {
		algs := idp.Algorithms
		if len(algs) == 0 {
			algs = []string{sso.DefaultAlgorithm}
		}
		sc.Issuers = append(sc.Issuers, sso.IssuerConfig{URL: idp.Issuer, Audiences: []string{issuer}, Algorithms: algs, TrustEmail: idp.TrustEmail})
		set := map[string]bool{}
		for _, c := range idp.Clients {
			set[c] = true
		}
		e.clients[idp.Issuer] = set
	}
	if sc.Now == nil {
		sc.Now = time.Now
	}
	v, err := sso.NewVerifier(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("oauth: enterprise: %w", err)
	}
	e.verifier = v
	return e, nil
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
		jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
	})
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
func (s *Server) redeemIDJAG(r *http.Request, form url.Values) ([]byte, *tokenError) {
	if s.enterprise == nil {
		return nil, &tokenError{http.StatusBadRequest, "unsupported_grant_type", "this gateway accepts no identity assertions (oauth.enterprise)", 0}
	}
	// No budget of requests: only refused assertions spend the address's
	// budget of failed authentications (refuseIDJAG), so a genuine
	// assertion is answered whatever others sent from its address.
	// The request is checked before the client authenticates or the
	// assertion is verified, so a wrong resource or scope spends neither.
	if terr := s.checkTarget(form); terr != nil {
		return nil, terr
	}
	raw := form.Get("assertion")
	if raw == "" {
		return nil, invalidRequest("assertion is required: the ID-JAG from your identity provider")
	}
	if len(raw) > MaxIDJAGBytes {
		return nil, invalidRequest("assertion is over %d bytes", MaxIDJAGBytes)
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
			return nil, &tokenError{http.StatusServiceUnavailable, "temporarily_unavailable", se.Description, max(se.RetryAfter, time.Second)}
		}
		if errors.As(err, &se) {
			return nil, s.refuseIDJAG(r, clientID, c.Issuer, se.Description)
		}
		s.log.Error("oauth: ID-JAG verification failed", "err", err)
		return nil, &tokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
	}
	now := s.now()
	if reason := s.checkIDJAG(c, clientID, allowed, now); reason != "" {
		return nil, s.refuseIDJAG(r, clientID, c.Issuer, reason)
	}
	switch s.enterprise.seen.remember(c.Issuer+"\x00"+c.ID, time.Unix(*c.Expiry, 0).Add(idjagClockSkew), now) {
	case rememberReplay:
		return nil, s.refuseIDJAG(r, clientID, c.Issuer, "the assertion was already used (jti); ask your identity provider for a new one")
	case rememberFull:
		s.log.Warn("oauth: the ID-JAG replay memory is full; refusing assertions until some expire")
		return nil, &tokenError{http.StatusServiceUnavailable, "temporarily_unavailable", "too many identity assertions; try again shortly", 10 * time.Second}
	}
	body, terr := s.issue(id, clientID, "", "jag:"+randomString(16), 0, GrantTypeJWTBearer)
	if terr != nil {
		return nil, terr
	}
	s.log.Info("oauth: identity assertion accepted", "email", id.Email, "idp", c.Issuer, "client", clientID,
		"jti", digest(c.ID), "client_ip", s.clientIP(r))
	return body, nil
}

// checkIDJAG returns why a verified ID-JAG is refused, or "".
func (s *Server) checkIDJAG(c idjagClaims, clientID string, allowed map[string]bool, now time.Time) string {
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
	case c.ID == "" || len(c.ID) > MaxJTIBytes || hasControlChar(c.ID):
		return fmt.Sprintf("jti is required: 1 to %d printable bytes", MaxJTIBytes)
	case len(c.Resource) > 0 && !s.idjagResource(c.Resource):
		return "the assertion is for another resource, not " + s.resource
	case c.Scope != nil && *c.Scope != "" && !slices.Contains(strings.Fields(*c.Scope), Scope):
		return fmt.Sprintf("the identity provider did not grant the %s scope (the assertion's scope is %.100q)", Scope, *c.Scope)
	}
	return ""
}

// idjagResource accepts the resource claim as one string or an array of
// one, naming the MCP endpoint.
func (s *Server) idjagResource(raw json.RawMessage) bool {
	var res []string
	if json.Unmarshal(raw, &res) != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return false
		}
		res = []string{one}
	}
	return len(res) == 1 && s.isResource(res[0])
}

// assertionClient identifies the client of a JWT bearer grant: a service
// account named in the IdP's clients authenticates with its credential
// (client_secret_basic, client_secret_post or private_key_jwt); any other
// client names itself with client_id and no credential (a public client).
func (s *Server) assertionClient(r *http.Request, form url.Values) (string, *tokenError) {
	_, _, basic := r.BasicAuth()
	_, post := form["client_secret"]
	_, jwtAuth := form["client_assertion"]
	if basic || post || jwtAuth {
		if len(s.accounts) == 0 {
			return "", errClientAuth()
		}
		acc, _, _, terr := s.authenticateClient(r, form)
		if terr != nil {
			return "", terr
		}
		return acc.id, nil
	}
	id := form.Get("client_id")
	if id == "" {
		return "", &tokenError{http.StatusUnauthorized, "invalid_client", "client_id is required", 0}
	}
	if s.accounts[id] != nil {
		s.refuseClient(r, id, "none", "a service account must authenticate with its credential")
		return "", errClientAuth()
	}
	return id, nil
}

// refuseIDJAG logs a refused ID-JAG (never the assertion) and answers
// invalid_grant with the reason.
func (s *Server) refuseIDJAG(r *http.Request, clientID, issuer, reason string) *tokenError {
	// A client id no IdP vouches for is logged as a digest: it may be a
	// secret pasted into the wrong field.
	label := "unknown:" + digest(clientID)
	for _, set := range s.enterprise.clients {
		if set[clientID] {
			label = clientID
		}
	}
	ip := s.clientIP(r)
	if wait, tell := s.addressFailures(ip).spend(s.now()); wait > 0 {
		if tell {
			s.log.Warn("oauth: failed authentications from an address are over their budget; refusing its failures with 429 for now", "client_ip", ip, "grant", "jwt_bearer")
		}
		return &tokenError{http.StatusTooManyRequests, "temporarily_unavailable", "too many failed authentications from your address; try again shortly", wait}
	}
	s.log.Warn("oauth: identity assertion refused", "client", label, "idp", issuer, "reason", reason, "client_ip", ip)
	return invalidGrant("%s", reason)
}
