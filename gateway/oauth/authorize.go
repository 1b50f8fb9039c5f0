package oauth

import (
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
	"github.com/brainstem/brainstem/gateway/oauth/pages"
	"github.com/brainstem/brainstem/gateway/oauth/upstream"
	"github.com/brainstem/brainstem/internal/loopback"
)

// Limits of an authorization request.
const (
	// MaxStateBytes bounds the client's state (echoed back to it).
	MaxStateBytes = 512
	// maxConsents bounds the consents one browser remembers.
	maxConsents = 20
	// maxLoginCookieBytes keeps a login cookie within what browsers store.
	maxLoginCookieBytes = 3800
)

// Cookie names (before the __Host- prefix).
const (
	cookieConsent = "brainstem-consent"
	cookieCSRF    = "brainstem-csrf"
	cookieLogin   = "brainstem-login-"
)

// Sealing purposes: a value sealed for one never opens as another.
const (
	purposeRequest = "authorization request"
	purposeConsent = "consent"
	purposeLogin   = "login"
	purposeCode    = "code"
	purposeRefresh = "refresh"
)

// authzRequest is a validated authorization request, sealed into the
// consent form between the consent page and its answer.
type authzRequest struct {
	ClientID    string `json:"c"`
	RedirectURI string `json:"r"`
	State       string `json:"s,omitempty"`
	Challenge   string `json:"ch"`
	CSRF        string `json:"x"`
	Exp         int64  `json:"e"`
}

// consentRecord is the consent cookie: the clients this browser approved.
type consentRecord struct {
	Entries []consentEntry `json:"c"`
}

type consentEntry struct {
	Key string `json:"k"` // consentKey(client id, redirect URI)
	Exp int64  `json:"e"`
}

// Login is the login cookie between the consent (or a grant's approval
// page) and the IdP's callback: what the facade needs to answer the
// client afterwards.
type Login struct {
	SID         string `json:"i"`
	Client      string `json:"c"` // digest of the client id
	RedirectURI string `json:"r"`
	State       string `json:"s,omitempty"`
	Challenge   string `json:"ch"`
	Verifier    string `json:"v"` // PKCE verifier of the upstream request
	Nonce       string `json:"n"`
	Request     string `json:"d,omitempty"` // the grant's request it approves (device flow): LoginFinisher
	Holder      string `json:"h,omitempty"` // the replica holding that request (device flow)
	Exp         int64  `json:"e"`
}

// authzError is an error answered by redirecting to the client (RFC 6749
// §4.1.2.1): only once the client and redirect URI are trusted.
type authzError struct{ code, description string }

// serveAuthorize is GET /authorize: validate, then ask for consent or go
// straight to the IdP when this browser already consented.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k, v := range q {
		if len(v) > 1 {
			s.RefusePage(w, "authorize", http.StatusBadRequest, "Invalid sign-in request", fmt.Sprintf("The parameter %q appears more than once.", k))
			return
		}
	}
	client, ok := s.trustedClient(w, r, q.Get("client_id"), q.Get("redirect_uri"))
	if !ok {
		return
	}
	redirect := q.Get("redirect_uri")
	state := q.Get("state")
	if len(state) > MaxStateBytes || strings.ContainsFunc(state, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		s.RefusePage(w, "authorize", http.StatusBadRequest, "Invalid sign-in request", fmt.Sprintf("The state parameter must be at most %d printable ASCII characters.", MaxStateBytes))
		return
	}
	if e := s.checkAuthzParams(q); e != nil {
		s.Count("authorize", "refused")
		s.redirectError(w, r, redirect, state, e)
		return
	}
	req := authzRequest{ClientID: client.ID, RedirectURI: redirect, State: state,
		Challenge: q.Get("code_challenge"), CSRF: RandomString(16), Exp: s.now().Add(config.LoginTTL).Unix()}
	// The IdP is discovered before the consent page, whose CSP must name
	// the IdP's origin for the redirect that follows the form.
	if _, err := s.up.Discovered(r.Context()); err != nil {
		s.Count("authorize", "unavailable")
		s.UnavailablePage(w, err)
		return
	}
	if s.consented(r, client.ID, redirect) {
		s.Count("authorize", "ok")
		s.startLogin(w, r, req)
		return
	}
	sealed, err := s.keys.Seal(purposeRequest, req)
	if err != nil {
		s.ServerError(w, err)
		return
	}
	s.SetCookie(w, cookieCSRF, req.CSRF, config.LoginTTL, http.SameSiteStrictMode)
	name := cmp.Or(client.Name, "An unnamed application")
	s.Count("authorize", "consent")
	s.RenderPage(w, http.StatusOK, pages.Consent, pages.ConsentData{
		Name: name, Gateway: s.issuer, MetadataHost: client.MetadataHost, RedirectHost: redirectHost(redirect),
		Dynamic: client.Dynamic, TokenTTL: pages.Human(s.cfg.AccessTokenTTL), RefreshTTL: pages.Human(s.cfg.RefreshTokenTTL),
		ConsentTTL: pages.Human(s.cfg.ConsentTTL), Action: s.issuer + PathAuthorize, Request: sealed}, s.up.Origin(), redirectTarget(redirect))
}

// trustedClient resolves the client and checks the redirect URI. Until
// both are trusted every error is a page in the browser, never a redirect.
func (s *Server) trustedClient(w http.ResponseWriter, r *http.Request, clientID, redirect string) (*Client, bool) {
	refuse := func(status int, msg string) (*Client, bool) {
		s.RefusePage(w, "authorize", status, "This application cannot sign in here", msg)
		return nil, false
	}
	if clientID == "" {
		return refuse(http.StatusBadRequest, "The request names no client (client_id is missing).")
	}
	client, err := s.ResolveClient(r, clientID)
	switch {
	case errors.Is(err, ErrNoMetadataDocuments):
		return refuse(http.StatusBadRequest, "This gateway does not accept client metadata documents; the application must register first.")
	case errors.Is(err, clients.ErrFetchLimit):
		return refuse(http.StatusTooManyRequests, "Too many sign-in requests from your address; wait a minute and try again.")
	case err != nil:
		s.log.Info("oauth: unknown client", "err", err, "client_ip", s.clientIP(r))
		msg := "The application's client id is not one this gateway issued or can verify. Remove the server from the application and add it again."
		if errors.Is(err, clients.ErrMetadataDocument) {
			msg = "The application's client metadata document cannot be used: " + strings.TrimPrefix(err.Error(), clients.ErrMetadataDocument.Error()+": ")
		}
		return refuse(http.StatusBadRequest, msg)
	}
	if redirect == "" {
		return refuse(http.StatusBadRequest, "The request names no redirect URI (redirect_uri is missing).")
	}
	if !redirectAllowed(client, redirect) {
		return refuse(http.StatusBadRequest, fmt.Sprintf("The redirect URI %.200q is not registered for this application.", redirect))
	}
	if client.Dynamic {
		// The operator may have narrowed the allowed redirect URIs since
		// the client registered.
		if err := s.checkRedirectURI(redirect); err != nil {
			return refuse(http.StatusBadRequest, err.Error())
		}
	}
	return client, true
}

// ErrNoMetadataDocuments: a client names itself by a metadata document's
// URL, and this gateway accepts none (client_metadata.disabled).
var ErrNoMetadataDocuments = errors.New("this gateway does not accept client metadata documents")

// ResolveClient finds the client of an id: a registered one, or a
// metadata document's, fetched within the budget of r's address.
func (s *Server) ResolveClient(r *http.Request, clientID string) (*Client, error) {
	if !clients.IsMetadataURL(clientID) {
		return s.parseRegisteredClient(clientID)
	}
	if s.meta == nil {
		return nil, ErrNoMetadataDocuments
	}
	return s.meta.Client(r.Context(), clientID, func() bool { return s.Allow(r, "metadata", metadataPerMin) }, s.checkRedirectURI)
}

// checkAuthzParams checks what can be refused by redirecting to the client.
func (s *Server) checkAuthzParams(q url.Values) *authzError {
	if rt := q.Get("response_type"); rt != "code" {
		return &authzError{"unsupported_response_type", "response_type must be code"}
	}
	switch m := q.Get("code_challenge_method"); {
	case q.Get("code_challenge") == "":
		return &authzError{"invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256"}
	case m == "plain" || m == "":
		return &authzError{"invalid_request", "code_challenge_method must be S256 (plain is not supported)"}
	case m != "S256":
		return &authzError{"invalid_request", "code_challenge_method must be S256"}
	case !auth.ValidPKCE(q.Get("code_challenge")) || len(q.Get("code_challenge")) != 43:
		return &authzError{"invalid_request", "code_challenge must be the 43-character base64url SHA-256 of the code verifier"}
	}
	if res, ok := q["resource"]; ok && !s.IsResource(res[0]) {
		return &authzError{"invalid_target", fmt.Sprintf("resource must be the MCP endpoint %s", s.resource)}
	}
	return nil
}

// isResource compares an RFC 8707 resource with the MCP URL: scheme and host
// case-insensitively, the rest exactly.
func (s *Server) IsResource(res string) bool {
	a, err1 := url.Parse(res)
	b, err2 := url.Parse(s.resource)
	if err1 != nil || err2 != nil || a.Fragment != "" || a.User != nil {
		return false
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host) &&
		a.EscapedPath() == b.EscapedPath() && a.RawQuery == b.RawQuery
}

// serveConsent is POST /authorize: the consent page's answer.
func (s *Server) serveConsent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.RefusePage(w, "consent", http.StatusBadRequest, "Invalid answer", "The consent form could not be read.")
		return
	}
	if !s.SameOrigin(r) {
		s.RefusePage(w, "consent", http.StatusForbidden, "Invalid answer", "The consent form was not submitted from this gateway's own page.")
		return
	}
	var req authzRequest
	if err := s.keys.Open(purposeRequest, r.PostForm.Get("request"), 16<<10, &req); err != nil || s.now().Unix() > req.Exp {
		s.RefusePage(w, "consent", http.StatusBadRequest, "This sign-in has expired", "The consent page is older than "+pages.Human(config.LoginTTL)+" or was altered.")
		return
	}
	csrf := s.Cookie(r, cookieCSRF)
	if csrf == "" || subtle.ConstantTimeCompare([]byte(csrf), []byte(req.CSRF)) != 1 {
		s.RefusePage(w, "consent", http.StatusForbidden, "Invalid answer", "The consent form does not belong to this browser's sign-in. Start the sign-in again from your application.")
		return
	}
	s.SetCookie(w, cookieCSRF, "", -1, http.SameSiteStrictMode)
	switch r.PostForm.Get("decision") {
	case "allow":
		s.remember(w, r, req.ClientID, req.RedirectURI)
		s.Count("consent", "ok")
		s.startLogin(w, r, req)
	case "deny":
		s.Count("consent", "denied")
		s.redirectError(w, r, req.RedirectURI, req.State, &authzError{"access_denied", "the user denied the request"})
	default:
		s.RefusePage(w, "consent", http.StatusBadRequest, "Invalid answer", "The consent form's answer is neither allow nor deny.")
	}
}

// sameOrigin rejects cross-site form posts: Origin, when sent, must be the
// gateway's own, and so must Sec-Fetch-Site. Together with the CSRF cookie
// this keeps another site from submitting the consent form.
func (s *Server) SameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	return o == "" || strings.EqualFold(o, originOf(s.issuer))
}

// consented reports whether this browser approved the client for this
// redirect target and the approval has not expired.
func (s *Server) consented(r *http.Request, clientID, redirect string) bool {
	var rec consentRecord
	if s.keys.Open(purposeConsent, s.Cookie(r, cookieConsent), 8<<10, &rec) != nil {
		return false
	}
	key, now := consentKey(clientID, redirect), s.now().Unix()
	return slices.ContainsFunc(rec.Entries, func(e consentEntry) bool {
		return subtle.ConstantTimeCompare([]byte(e.Key), []byte(key)) == 1 && now < e.Exp
	})
}

// remember adds a consent to the browser's record, dropping expired and
// the oldest entries beyond maxConsents.
func (s *Server) remember(w http.ResponseWriter, r *http.Request, clientID, redirect string) {
	var rec consentRecord
	_ = s.keys.Open(purposeConsent, s.Cookie(r, cookieConsent), 8<<10, &rec)
	now := s.now()
	key := consentKey(clientID, redirect)
	kept := slices.DeleteFunc(rec.Entries, func(e consentEntry) bool { return e.Exp <= now.Unix() || e.Key == key })
	kept = append(kept, consentEntry{Key: key, Exp: now.Add(s.cfg.ConsentTTL).Unix()})
	if len(kept) > maxConsents {
		kept = kept[len(kept)-maxConsents:]
	}
	sealed, err := s.keys.Seal(purposeConsent, consentRecord{Entries: kept})
	if err != nil {
		s.log.Error("oauth: seal consent", "err", err)
		return
	}
	s.SetCookie(w, cookieConsent, sealed, s.cfg.ConsentTTL, http.SameSiteLaxMode)
}

// startLogin sends the browser to the IdP, with a login cookie that binds
// the IdP's answer to this browser and this request.
func (s *Server) startLogin(w http.ResponseWriter, r *http.Request, req authzRequest) {
	s.SendToIdP(w, r, Login{
		SID: RandomString(16), Client: keyring.Digest(req.ClientID), RedirectURI: req.RedirectURI, State: req.State,
		Challenge: req.Challenge, Verifier: RandomString(32), Nonce: RandomString(16),
		Exp: s.now().Add(config.LoginTTL).Unix()})
}

// sendToIdP sends the browser to the IdP with the login cookie of ls.
func (s *Server) SendToIdP(w http.ResponseWriter, r *http.Request, ls Login) {
	sealed, err := s.keys.Seal(purposeLogin, ls)
	if err != nil {
		s.ServerError(w, err)
		return
	}
	if len(sealed) > maxLoginCookieBytes {
		s.ErrorPage(w, http.StatusBadRequest, "Invalid sign-in request", "The request's redirect URI and state are too long.")
		return
	}
	target, err := s.up.AuthURL(r.Context(), ls.SID, ls.Nonce, ls.Verifier)
	if err != nil {
		s.UnavailablePage(w, err)
		return
	}
	s.SetCookie(w, cookieLogin+ls.SID, sealed, config.LoginTTL, http.SameSiteLaxMode)
	pages.Security(w)
	http.Redirect(w, r, target, http.StatusFound)
}

// serveCallback is GET /oauth/callback: the IdP's answer. The facade
// does not redeem the IdP's code here: it seals it into its own code, and
// redeems it when the client redeems that (see serveToken). A device
// approval is the exception (finishDevice): there is no client redirect to
// carry a code, so the IdP's code is redeemed here.
func (s *Server) serveCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sid := q.Get("state")
	if len(sid) != 22 || strings.ContainsFunc(sid, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		s.RefusePage(w, "callback", http.StatusBadRequest, "Invalid sign-in answer", "The identity provider's answer carries no valid state.")
		return
	}
	var ls Login
	if err := s.keys.Open(purposeLogin, s.Cookie(r, cookieLogin+sid), maxLoginCookieBytes+100, &ls); err != nil || ls.SID != sid {
		s.RefusePage(w, "callback", http.StatusBadRequest, "This sign-in was not started in this browser",
			"The sign-in was started in another browser, has expired, or was already completed. Start it again from your application.")
		return
	}
	if ls.Request != "" && s.finisher != nil {
		s.finisher.FinishLogin(w, r, ls) // a device approval
		return
	}
	if !s.EndLogin(w, r, ls) {
		return
	}
	if ls.Request != "" {
		s.RefusePage(w, "callback", http.StatusBadRequest, "This sign-in request is gone", "Start the sign-in again on your device.")
		return
	}
	if e := q.Get("error"); e != "" {
		code := e
		if code != "access_denied" && code != "temporarily_unavailable" && code != "server_error" {
			code = "access_denied"
		}
		desc := "the identity provider refused the sign-in (" + e + ")"
		if d := q.Get("error_description"); d != "" {
			desc += ": " + d
		}
		s.Count("callback", "refused")
		s.redirectError(w, r, ls.RedirectURI, ls.State, &authzError{code, desc})
		return
	}
	upCode := q.Get("code")
	if upCode == "" || len(upCode) > 4096 {
		s.RefusePage(w, "callback", http.StatusBadRequest, "Invalid sign-in answer", "The identity provider's answer carries no usable code.")
		return
	}
	code, err := s.keys.Seal(purposeCode, codeState{
		ID: RandomString(16), Client: ls.Client, RedirectURI: ls.RedirectURI, Challenge: ls.Challenge,
		UpCode: upCode, Verifier: ls.Verifier, Nonce: ls.Nonce, Exp: s.now().Add(s.cfg.CodeTTL).Unix()})
	if err != nil {
		s.ServerError(w, err)
		return
	}
	s.Count("callback", "ok")
	s.redirectTo(w, r, ls.RedirectURI, ls.State, url.Values{"code": {codePrefix + code}, "iss": {s.issuer}})
}

// EndLogin ends the login of an IdP callback: its cookie is cleared, and
// it reports false (the page written) when the login expired or the
// answer names another IdP than the gateway's (RFC 9207).
func (s *Server) EndLogin(w http.ResponseWriter, r *http.Request, ls Login) bool {
	s.SetCookie(w, cookieLogin+ls.SID, "", -1, http.SameSiteLaxMode)
	if s.now().Unix() > ls.Exp {
		s.RefusePage(w, "callback", http.StatusBadRequest, "This sign-in has expired", "Start it again from your application.")
		return false
	}
	if iss := r.URL.Query().Get("iss"); iss != "" && iss != s.cfg.Upstream.Issuer {
		s.RefusePage(w, "callback", http.StatusBadRequest, "Invalid sign-in answer", "The answer names another identity provider than this gateway's.")
		return false
	}
	return true
}

// redirectError sends an authorization error to the client's (trusted)
// redirect URI.
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirect, state string, e *authzError) {
	s.redirectTo(w, r, redirect, state, url.Values{"error": {e.code}, "error_description": {e.description}, "iss": {s.issuer}})
}

// redirectTo redirects to the client's redirect URI with v, and the
// client's state when it sent one.
func (s *Server) redirectTo(w http.ResponseWriter, r *http.Request, redirect, state string, v url.Values) {
	if state != "" {
		v.Set("state", state)
	}
	u, err := url.Parse(redirect)
	if err != nil {
		s.ServerError(w, err)
		return
	}
	q := u.Query()
	maps.Copy(q, v)
	u.RawQuery = q.Encode()
	pages.Security(w)
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) UnavailablePage(w http.ResponseWriter, err error) {
	var ue *upstream.UnavailableError
	retry := 5 * time.Second
	if errors.As(err, &ue) {
		retry = ue.RetryAfter
	}
	s.log.Warn("oauth: identity provider unavailable", "err", err)
	w.Header().Set("Retry-After", RetryAfterSeconds(retry))
	s.ErrorPage(w, http.StatusServiceUnavailable, "Your company sign-in is unreachable",
		"The gateway cannot reach your company's identity provider right now. Try again in a minute.")
}

func (s *Server) ServerError(w http.ResponseWriter, err error) {
	s.log.Error("oauth: internal error", "err", err)
	s.ErrorPage(w, http.StatusInternalServerError, "Internal error", "The gateway failed; the details are in its log.")
}

// redirectHost names where the browser goes after sign-in, for the page.
func redirectHost(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return redirect
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	if loopback.Is(u.Hostname()) {
		return "an application on this computer (" + u.Host + ")"
	}
	return u.Host
}

// redirectTarget is the CSP source of a redirect URI: its origin, or its
// scheme for a private-use scheme.
// A CSP host-source cannot name an IPv6 literal, so a page whose form may
// lead to one ([::1] loopback) gets no form-action at all (pages.AnyFormTarget).
func redirectTarget(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return ""
	}
	if strings.Contains(u.Host, "[") {
		return pages.AnyFormTarget
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + ":"
}

// retryAfterSeconds renders a Retry-After value: whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

func RandomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}
