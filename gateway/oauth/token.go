package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
	"github.com/brainstem/brainstem/gateway/oauth/upstream"
	"github.com/brainstem/brainstem/signin"
)

// Prefixes of the facade's opaque values.
const (
	codePrefix    = "bsa1."
	refreshPrefix = "bsr1."
)

// Size limits of the values the token endpoint opens.
const (
	maxCodeBytes    = 16 << 10
	maxRefreshBytes = 64 << 10
)

// codeState is an authorization code: the IdP's code and everything the
// client's token request must match.
type codeState struct {
	ID          string `json:"i"`
	Client      string `json:"c"` // digest of the client id
	RedirectURI string `json:"r"`
	Challenge   string `json:"ch"`
	UpCode      string `json:"u"` // the IdP's authorization code, not yet redeemed
	Verifier    string `json:"v"` // PKCE verifier of the upstream request
	Nonce       string `json:"n"`
	Exp         int64  `json:"e"`
}

// refreshState is a refresh token: one sign-in (the family), its user, and
// the IdP's refresh token that each refresh redeems.
type refreshState struct {
	ID     string   `json:"i"`
	Family string   `json:"f"`
	Client string   `json:"c"` // digest of the client id
	Email  string   `json:"em"`
	Groups []string `json:"g,omitempty"`
	Up     string   `json:"u"` // the IdP's refresh token
	Exp    int64    `json:"e"` // the end of the sign-in
	Iat    int64    `json:"t"` // when this refresh token was issued (offboarding)
}

// refreshUse records the first use of a refresh token on this replica.
type refreshUse struct{ at time.Time }

// graceAnswer is the answer to a refresh token's first use, given again
// to a use within the reuse grace.
type graceAnswer struct {
	until time.Time
	body  []byte
}

// TokenResponse is RFC 6749 §5.1: the answer the sign-in client reads
// (signin.TokenResponse).
type TokenResponse = signin.TokenResponse

// TokenError is RFC 6749 §5.2, with the HTTP status to answer it with
// and, when set, the Retry-After of a temporary refusal.
type TokenError struct {
	Status      int
	Code        string
	Description string
	RetryAfter  time.Duration
}

func (e *TokenError) Error() string { return e.Code + ": " + e.Description }

func InvalidGrant(format string, args ...any) *TokenError {
	return &TokenError{http.StatusBadRequest, "invalid_grant", fmt.Sprintf(format, args...), 0}
}

func InvalidRequest(format string, args ...any) *TokenError {
	return &TokenError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, args...), 0}
}

// serveToken is POST /token.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	form, terr := readTokenForm(w, r)
	if g := s.grants[form.Get("grant_type")]; terr == nil && g != nil {
		// A grant added beside the core's identifies its client itself
		// (grant.go).
		body, endpoint, terr := g.Redeem(w, r, form)
		if endpoint != "" {
			s.answerToken(w, r, endpoint, body, terr)
		}
		return
	}
	var clientID string
	if terr == nil {
		clientID, terr = s.TokenClient(r, form)
	}
	if terr != nil {
		s.RefuseToken(w, "token", terr)
		return
	}
	var (
		body  []byte
		grant = form.Get("grant_type")
	)
	switch grant {
	case "authorization_code":
		body, terr = s.redeemCode(r.Context(), form, clientID)
	case "refresh_token":
		body, terr = s.redeemRefresh(r.Context(), form, clientID)
	default:
		terr = &TokenError{http.StatusBadRequest, "unsupported_grant_type", "grant_type must be " + s.grantTypes(), 0}
		grant = ""
	}
	endpoint := "token"
	if grant != "" {
		endpoint += "_" + grant
	}
	s.answerToken(w, r, endpoint, body, terr)
}

// answerToken counts and writes a token endpoint's answer. A failed client
// authentication that used HTTP Basic gets the challenge RFC 6749 §5.2 asks.
func (s *Server) answerToken(w http.ResponseWriter, r *http.Request, endpoint string, body []byte, terr *TokenError) {
	if terr != nil {
		outcome := "refused"
		if terr.Status >= 500 {
			outcome = "unavailable"
		}
		s.Count(endpoint, outcome)
		if _, _, basic := r.BasicAuth(); basic && terr.Code == "invalid_client" {
			w.Header().Set("WWW-Authenticate", `Basic realm="brainstem"`)
		}
		s.WriteTokenError(w, terr)
		return
	}
	s.Count(endpoint, "ok")
	writeBody(w, http.StatusOK, body)
}

// tokenForm reads a token or revocation request: a form body with each
// parameter at most once, and the public client's id (in the form or as
// the user of HTTP Basic authentication).
func (s *Server) TokenForm(w http.ResponseWriter, r *http.Request) (url.Values, string, *TokenError) {
	form, terr := readTokenForm(w, r)
	if terr != nil {
		return nil, "", terr
	}
	clientID, terr := s.TokenClient(r, form)
	if terr != nil {
		return nil, "", terr
	}
	return form, clientID, nil
}

// readTokenForm reads a form body with each parameter at most once.
func readTokenForm(w http.ResponseWriter, r *http.Request) (url.Values, *TokenError) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, InvalidRequest("the body must be application/x-www-form-urlencoded")
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxFormBytes))
	if err != nil {
		return nil, InvalidRequest("the body could not be read or is over %d bytes", MaxFormBytes)
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		return nil, InvalidRequest("the body is not a valid form")
	}
	for k, v := range form {
		if len(v) > 1 {
			return nil, InvalidRequest("the parameter %q appears more than once", k)
		}
	}
	return form, nil
}

// tokenClient is the public client's id of a token or revocation request
// (in the form or as the user of HTTP Basic authentication).
func (s *Server) TokenClient(r *http.Request, form url.Values) (string, *TokenError) {
	clientID := form.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok {
		user, err := url.QueryUnescape(user) // RFC 6749 §2.3.1
		if err != nil || clientID != "" && clientID != user {
			return "", InvalidRequest("client_id in the form and in Basic authentication differ")
		}
		clientID = user
	}
	if clientID == "" {
		return "", &TokenError{http.StatusUnauthorized, "invalid_client", "client_id is required", 0}
	}
	if !s.knownClientID(clientID) {
		return "", &TokenError{http.StatusUnauthorized, "invalid_client", "the client id is not one this gateway issued; register again", 0}
	}
	return clientID, nil
}

// knownClientID reports whether a client id is validly signed, or a
// well-formed metadata document URL (codes and refresh tokens are bound to
// the id, so it need not be fetched again).
func (s *Server) knownClientID(id string) bool {
	if clients.IsMetadataURL(id) {
		if s.meta == nil {
			return false
		}
		_, err := s.meta.CheckURL(id)
		return err == nil
	}
	_, err := s.parseRegisteredClient(id)
	return err == nil
}

// redeemCode checks an authorization code against the token request, then
// redeems the IdP's code inside it and verifies the ID token.
func (s *Server) redeemCode(ctx context.Context, form url.Values, clientID string) ([]byte, *TokenError) {
	var cs codeState
	if !s.keys.OpenToken(form.Get("code"), codePrefix, purposeCode, maxCodeBytes, &cs) {
		return nil, InvalidGrant("the authorization code is not valid")
	}
	now := s.now()
	switch {
	case now.Unix() > cs.Exp:
		return nil, InvalidGrant("the authorization code expired; sign in again")
	case !keyring.IsDigest(cs.Client, clientID):
		return nil, InvalidGrant("the authorization code was issued to another client")
	case form.Get("redirect_uri") != cs.RedirectURI:
		return nil, InvalidGrant("redirect_uri does not match the authorization request")
	}
	if terr := s.checkResource(form); terr != nil {
		return nil, terr
	}
	verifier := form.Get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	if !auth.ValidPKCE(verifier) || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(cs.Challenge)) != 1 {
		return nil, InvalidGrant("code_verifier does not match the code_challenge (PKCE S256)")
	}
	// Single use on this replica, whatever happens next; on any other
	// replica the IdP refuses its own code the second time.
	if seen, _ := s.usedCodes.ContainsOrAdd(cs.ID, time.Unix(cs.Exp, 0)); seen {
		return nil, InvalidGrant("the authorization code was already used")
	}
	tok, err := s.up.Exchange(ctx, cs.UpCode, cs.Verifier)
	if err != nil {
		if errors.Is(err, upstream.ErrRefused) {
			return nil, InvalidGrant("the authorization code was already used or has expired at the identity provider; sign in again")
		}
		if errors.Is(err, upstream.ErrUnavailable) {
			// The IdP never took its code: the client may retry the same one.
			s.usedCodes.Remove(cs.ID)
		}
		return nil, s.UpstreamFailure(err)
	}
	id, terr := s.Identify(ctx, tok, cs.Nonce)
	if terr != nil {
		return nil, terr
	}
	fam := RandomString(16)
	return s.Issue(id, clientID, tok.RefreshToken, fam, now.Add(s.cfg.RefreshTokenTTL).Unix(), "authorization_code")
}

// redeemRefresh rotates a refresh token: it refreshes the IdP's token (so a
// user disabled there is refused) and issues a new pair.
func (s *Server) redeemRefresh(ctx context.Context, form url.Values, clientID string) ([]byte, *TokenError) {
	var rs refreshState
	if !s.keys.OpenToken(form.Get("refresh_token"), refreshPrefix, purposeRefresh, maxRefreshBytes, &rs) {
		return nil, InvalidGrant("the refresh token is not valid; sign in again")
	}
	now := s.now()
	switch {
	case !keyring.IsDigest(rs.Client, clientID):
		return nil, InvalidGrant("the refresh token was issued to another client")
	case now.Unix() > rs.Exp:
		return nil, InvalidGrant("the sign-in expired; sign in again")
	case s.isRevoked("f:"+rs.Family, now):
		return nil, InvalidGrant("the refresh token was revoked; sign in again")
	}
	if e, ended := s.ended.Ended(rs.Email, time.Unix(rs.Iat, 0)); ended {
		s.revoked.Add("f:"+rs.Family, time.Unix(rs.Exp, 0))
		s.log.Info("oauth: refresh refused: an operator ended the sign-ins", "email", rs.Email,
			"not_before", e.NotBefore.Format(time.RFC3339), "reason", e.Reason)
		return nil, InvalidGrant("an operator ended your sign-ins (%s); sign in again", e.NotBefore.Format(time.RFC3339))
	}
	if terr := s.checkResource(form); terr != nil {
		return nil, terr
	}
	// Concurrent uses of one token on this replica share one refresh; a use
	// within the grace gets the first answer again; a later one is reuse.
	ch := s.refreshFlight.DoChan(rs.ID, func() (any, error) {
		if a, ok := s.graceAnswers.Get(rs.ID); ok && now.Before(a.until) {
			return a.body, nil
		}
		if use, seen := s.usedRefresh.Get(rs.ID); seen {
			s.revoked.Add("f:"+rs.Family, time.Unix(rs.Exp, 0))
			s.log.Warn("oauth: refresh token reused after its grace; the sign-in is revoked on this replica",
				"email", rs.Email, "first_use", use.at.UTC().Format(time.RFC3339))
			return nil, InvalidGrant("the refresh token was already used; sign in again")
		}
		body, err := s.refreshUpstream(context.WithoutCancel(ctx), rs, clientID)
		if err != nil {
			return nil, err // not marked used: a retry after an outage works
		}
		s.usedRefresh.Add(rs.ID, refreshUse{at: now})
		s.graceAnswers.Add(rs.ID, graceAnswer{until: now.Add(s.cfg.RefreshReuseGrace), body: body})
		return body, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			var terr *TokenError
			if errors.As(res.Err, &terr) {
				return nil, terr
			}
			return nil, ErrInternal()
		}
		return res.Val.([]byte), nil
	case <-ctx.Done():
		return nil, &TokenError{http.StatusServiceUnavailable, "temporarily_unavailable", "the request was cancelled", time.Second}
	}
}

func (s *Server) refreshUpstream(ctx context.Context, rs refreshState, clientID string) ([]byte, error) {
	tok, err := s.up.Refresh(ctx, rs.Up)
	if err != nil {
		if errors.Is(err, upstream.ErrRefused) {
			s.revoked.Add("f:"+rs.Family, time.Unix(rs.Exp, 0))
			s.log.Info("oauth: the identity provider refused a refresh; the user must sign in again", "email", rs.Email, "err", err)
			return nil, InvalidGrant("your company sign-in is no longer valid (the account may be disabled or the session ended); sign in again")
		}
		return nil, s.UpstreamFailure(err)
	}
	id := auth.Identity{Email: rs.Email, Groups: rs.Groups}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		fresh, terr := s.Identify(ctx, tok, "")
		if terr != nil {
			return nil, terr
		}
		if fresh.Email != rs.Email {
			return nil, InvalidGrant("the identity provider now signs you in as another user; sign in again")
		}
		id = fresh
	}
	body, terr := s.Issue(id, clientID, tok.RefreshToken, rs.Family, rs.Exp, "refresh_token")
	if terr != nil {
		return nil, terr
	}
	return body, nil
}

// checkResource refuses a token request whose RFC 8707 resource is not
// the MCP endpoint.
func (s *Server) checkResource(form url.Values) *TokenError {
	if res, ok := form["resource"]; ok && !s.IsResource(res[0]) {
		return &TokenError{http.StatusBadRequest, "invalid_target", "resource must be the MCP endpoint " + s.resource, 0}
	}
	return nil
}

// CheckTarget refuses a token request whose resource is not the MCP
// endpoint or whose scope names anything but Scope (the grants without a
// user's consent check them before any credential is spent).
func (s *Server) CheckTarget(form url.Values) *TokenError {
	if terr := s.checkResource(form); terr != nil {
		return terr
	}
	if sc, ok := form["scope"]; ok {
		for _, v := range strings.Fields(sc[0]) {
			if v != Scope {
				return &TokenError{http.StatusBadRequest, "invalid_scope", "the only scope is " + Scope, 0}
			}
		}
	}
	return nil
}

// idTokenClaims are the ID token claims checked beyond the SSO rules.
type idTokenClaims struct {
	Issuer   string          `json:"iss"`
	Audience json.RawMessage `json:"aud"`
	Nonce    string          `json:"nonce"`
}

// identify verifies the IdP's ID token with the gateway's SSO rules, and
// that it was issued to the facade's client for this sign-in.
func (s *Server) Identify(ctx context.Context, tok *oauth2.Token, nonce string) (auth.Identity, *TokenError) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		s.log.Error("oauth: the identity provider returned no ID token; request the openid scope (oauth.upstream.scopes)")
		return auth.Identity{}, &TokenError{http.StatusInternalServerError, "server_error", "the identity provider returned no ID token; tell an operator", 0}
	}
	id, err := s.verifier.Verify(ctx, raw)
	if err != nil {
		var se *sso.Error
		if errors.As(err, &se) {
			if se.Kind == sso.IssuerUnavailable {
				return auth.Identity{}, &TokenError{http.StatusServiceUnavailable, "temporarily_unavailable", se.Description, 5 * time.Second}
			}
			return auth.Identity{}, InvalidGrant("%s", se.Description)
		}
		s.log.Error("oauth: ID token verification failed", "err", err)
		return auth.Identity{}, ErrInternal()
	}
	parts := strings.Split(raw, ".")
	var c idTokenClaims
	if len(parts) != 3 || decodeSegment(parts[1], &c) != nil {
		return auth.Identity{}, InvalidGrant("the identity provider's ID token does not decode")
	}
	aud := Strings(c.Audience)
	switch {
	case c.Issuer != s.cfg.Upstream.Issuer && !(c.Issuer == "accounts.google.com" && s.cfg.Upstream.Issuer == "https://accounts.google.com"):
		// Google's ID tokens may name the issuer without its scheme.
		return auth.Identity{}, InvalidGrant("the ID token comes from another identity provider")
	case !slices.Contains(aud, s.cfg.Upstream.ClientID):
		return auth.Identity{}, InvalidGrant("the ID token was issued to another client")
	case nonce != "" && subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(nonce)) != 1:
		return auth.Identity{}, InvalidGrant("the ID token does not belong to this sign-in (nonce)")
	}
	return id, nil
}

// Strings reads a JWT claim that is one string or an array of them
// (aud, resource); nil when it is neither.
func Strings(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil
		}
		list = []string{one}
	}
	return list
}

// upstreamFailure maps an IdP failure other than a refused grant.
func (s *Server) UpstreamFailure(err error) *TokenError {
	var ue *upstream.UnavailableError
	if errors.As(err, &ue) {
		s.log.Warn("oauth: identity provider unavailable", "err", err)
		return &TokenError{http.StatusServiceUnavailable, "temporarily_unavailable", "the company identity provider is unreachable; try again shortly", ue.RetryAfter}
	}
	s.log.Error("oauth: the identity provider refused the gateway's client; check oauth.upstream (client id, secret, redirect URI "+s.issuer+PathCallback+")", "err", err)
	return &TokenError{http.StatusInternalServerError, "server_error", "the gateway's sign-in is misconfigured; tell an operator", 0}
}

// AccessClaims are the claims of an access token (RFC 9068 profile).
type AccessClaims struct {
	Issuer   string   `json:"iss"`
	Subject  string   `json:"sub"`
	Audience string   `json:"aud"`
	ClientID string   `json:"client_id"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups,omitempty"`
	Scope    string   `json:"scope"`
	Family   string   `json:"sid"`
	IssuedAt int64    `json:"iat"`
	Expiry   int64    `json:"exp"`
	ID       string   `json:"jti"`
}

// SignAccess signs an access token of claims.
func (s *Server) SignAccess(claims AccessClaims) (string, *TokenError) {
	at, err := auth.SignClaims(s.signer, claims)
	if err != nil {
		return "", ErrInternal()
	}
	return at, nil
}

// ErrInternal is the token endpoint's answer to a failure of its own.
func ErrInternal() *TokenError {
	return &TokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
}

// Issue signs an access token and, when the IdP gave a refresh token, seals
// a refresh token of the same sign-in.
func (s *Server) Issue(id auth.Identity, clientID, upRefresh, family string, familyExp int64, grant string) ([]byte, *TokenError) {
	now := s.now()
	exp := now.Add(s.cfg.AccessTokenTTL)
	claims := AccessClaims{
		Issuer: s.issuer, Subject: id.Email, Audience: s.resource, ClientID: clientID, Email: id.Email,
		Groups: id.Groups, Scope: Scope, Family: family, IssuedAt: now.Unix(), Expiry: exp.Unix(), ID: RandomString(16),
	}
	at, terr := s.SignAccess(claims)
	if terr != nil {
		return nil, terr
	}
	if len(at) > sso.MaxTokenBytes {
		return nil, InvalidGrant("your account is in %d groups, too many for an access token; ask an administrator to limit the groups claim to the groups the wing policies use", len(id.Groups))
	}
	resp := TokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(s.cfg.AccessTokenTTL / time.Second), Scope: Scope}
	if upRefresh != "" {
		sealed, err := s.keys.Seal(purposeRefresh, refreshState{
			ID: RandomString(16), Family: family, Client: keyring.Digest(clientID), Email: id.Email, Groups: id.Groups,
			Up: upRefresh, Exp: familyExp, Iat: now.Unix()})
		if err != nil {
			return nil, ErrInternal()
		}
		resp.RefreshToken = refreshPrefix + sealed
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return nil, ErrInternal()
	}
	s.log.Info("oauth: tokens issued", "grant", grant, "email", id.Email, "groups", len(id.Groups),
		"client", ClientLabel(clientID), "refresh_token", resp.RefreshToken != "")
	s.recordSignIn(family, id.Email, clientID, grant, now, exp, familyExp)
	return body, nil
}

// clientLabel is a short name for a client id in logs.
func ClientLabel(id string) string {
	if clients.IsMetadataURL(id) {
		return id
	}
	return "registered:" + keyring.Digest(id)
}

// serveRegister is POST /register (RFC 7591).
func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	if !s.Allow(r, "register", registerPerMin) {
		s.Count("register", "refused")
		w.Header().Set("Retry-After", "60")
		WriteJSON(w, http.StatusTooManyRequests, errorAnswer{"temporarily_unavailable", "too many registrations from your address; try again in a minute"})
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		s.Count("register", "refused")
		WriteJSON(w, http.StatusBadRequest, errorAnswer{"invalid_client_metadata", "the body must be application/json"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, clients.MaxRegistrationBytes))
	if err != nil {
		s.Count("register", "refused")
		WriteJSON(w, http.StatusBadRequest, errorAnswer{"invalid_client_metadata", fmt.Sprintf("the body could not be read or is over %d bytes", clients.MaxRegistrationBytes)})
		return
	}
	now := s.now()
	c, rerr := s.register(body, now)
	if rerr != nil {
		s.Count("register", "refused")
		WriteJSON(w, http.StatusBadRequest, rerr)
		return
	}
	s.Count("register", "ok")
	s.log.Info("oauth: client registered", "client", ClientLabel(c.ID), "name", c.Name, "redirect_uris", c.RedirectURIs, "client_ip", s.clientIP(r))
	resp := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        now.Unix(),
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                grantTypes(c),
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	if c.Name != "" {
		resp["client_name"] = c.Name
	}
	WriteJSON(w, http.StatusCreated, resp)
}

// serveRevoke is POST /revoke (RFC 7009). Revoking a refresh token ends the
// sign-in (on this replica, and at the IdP when it offers revocation);
// revoking an access token ends it on this replica. The answer is 200
// whatever the token, as RFC 7009 §2.2 asks.
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	form, clientID, terr := s.TokenForm(w, r)
	if terr != nil {
		s.RefuseToken(w, "revoke", terr)
		return
	}
	tok := form.Get("token")
	if tok == "" {
		s.RefuseToken(w, "revoke", InvalidRequest("token is required"))
		return
	}
	if strings.HasPrefix(tok, refreshPrefix) {
		var rs refreshState
		if s.keys.OpenToken(tok, refreshPrefix, purposeRefresh, maxRefreshBytes, &rs) && keyring.IsDigest(rs.Client, clientID) {
			s.revoked.Add("f:"+rs.Family, time.Unix(rs.Exp, 0))
			s.up.Revoke(r.Context(), rs.Up)
			s.log.Info("oauth: sign-in revoked", "email", rs.Email, "client", ClientLabel(clientID))
		}
	} else if c, err := s.parseAccessToken(tok); err == nil && c.ClientID == clientID {
		s.revoked.Add("j:"+c.ID, time.Unix(c.Expiry, 0))
		s.log.Info("oauth: access token revoked", "email", c.Email, "client", ClientLabel(clientID))
	}
	s.Count("revoke", "ok")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) isRevoked(key string, now time.Time) bool {
	until, ok := s.revoked.Get(key)
	return ok && now.Before(until)
}

// RefuseToken counts a refusal of endpoint and answers it (WriteTokenError).
func (s *Server) RefuseToken(w http.ResponseWriter, endpoint string, e *TokenError) {
	s.Count(endpoint, "refused")
	s.WriteTokenError(w, e)
}

func (s *Server) WriteTokenError(w http.ResponseWriter, e *TokenError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", RetryAfterSeconds(e.RetryAfter))
	}
	WriteJSON(w, e.Status, errorAnswer{e.Code, e.Description})
}

func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	writeBody(w, status, b)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// NewTokenError is a token endpoint's refusal: its HTTP status, RFC 6749
// error code and description, and the Retry-After of a temporary one.
func NewTokenError(status int, code, description string, retryAfter time.Duration) *TokenError {
	return &TokenError{Status: status, Code: code, Description: description, RetryAfter: retryAfter}
}
