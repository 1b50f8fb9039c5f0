package devidp

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/internal/loopback"
)

// Handler serves discovery, JWKS, /authorize (a minimal HTML login form:
// email and groups) and /token, below the issuer's path, and nothing else.
// Every route is behind LoopbackOnly.
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+p.path+"/.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET "+p.path+"/keys", p.jwks)
	mux.HandleFunc("GET "+p.path+"/authorize", p.authorizeForm)
	mux.HandleFunc("POST "+p.path+"/authorize", p.authorizeSubmit)
	mux.HandleFunc("POST "+p.path+"/token", p.token)
	return LoopbackOnly(mux)
}

// LoopbackOnly refuses, with 403, a request whose Host is not a loopback
// name (localhost, 127.0.0.0/8, ::1) or that carries an Origin that is not
// an http(s) origin on a loopback name. Listening on loopback is not enough
// for a server that signs in anyone: a web page on another site can make
// its own name resolve to 127.0.0.1 (DNS rebinding) and then talk to the
// server as same-origin; such a request carries that site's name in Host and
// Origin. brainstem dev puts its /dev/token endpoint behind it too.
func LoopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origins := r.Header.Values("Origin")
		ok := loopbackAuthority(r.Host)
		for _, o := range origins {
			u, err := url.Parse(o)
			ok = ok && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.User == nil &&
				(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && loopbackAuthority(u.Host)
		}
		if !ok {
			httpErrorPage(w, http.StatusForbidden, fmt.Sprintf("refusing a request for host %.100q from origin %.100q: "+
				"the development identity provider answers only requests addressed to localhost, 127.0.0.1 or [::1] "+
				"(a page on another site could otherwise obtain a token)", r.Host, strings.Join(origins, ", ")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackAuthority reports whether host[:port] names the loopback
// interface: "localhost" or a loopback IP literal.
func loopbackAuthority(hostport string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		host = hostport[1 : len(hostport)-1]
	}
	return loopback.Is(host)
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	authMethods := []string{"none"} // the token endpoint's client authentication methods
	if p.cfg.ClientSecret != "" {
		authMethods = []string{"client_secret_basic", "client_secret_post"}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.cfg.Issuer,
		"authorization_endpoint":                p.base + "/authorize",
		"token_endpoint":                        p.base + "/token",
		"jwks_uri":                              p.base + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", GrantTypeTokenExchange},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": authMethods,
		"scopes_supported":                      []string{"openid", "email", "profile", "groups", "offline_access"},
		"claims_supported":                      []string{"iss", "aud", "sub", "email", "email_verified", "groups", "iat", "exp", "nonce"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: string(jose.RS256), Use: "sig"}}})
}

// authRequest is a validated authorization request.
type authRequest struct {
	ClientID, RedirectURI, State, Challenge, Nonce, Scope string
}

// oauthError is an OAuth error answer (RFC 6749 §4.1.2.1, §5.2).
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

// parseAuthRequest validates the parameters of an authorization request.
// A bad client_id or redirect_uri cannot be redirected to (fatal); other
// problems are sent back to the client's redirect_uri.
func (p *Provider) parseAuthRequest(q url.Values) (ar authRequest, redirectErr *oauthError, fatal error) {
	ar = authRequest{
		ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"), State: q.Get("state"),
		Challenge: q.Get("code_challenge"), Nonce: q.Get("nonce"), Scope: q.Get("scope"),
	}
	if ar.ClientID != p.cfg.ClientID {
		return ar, nil, fmt.Errorf("unknown client_id %q: this development IdP serves only %q", ar.ClientID, p.cfg.ClientID)
	}
	if err := checkRedirectURI(ar.RedirectURI); err != nil {
		return ar, nil, err
	}
	switch {
	case q.Get("response_type") != "code":
		return ar, &oauthError{"unsupported_response_type", "response_type must be code"}, nil
	case q.Get("code_challenge_method") != "S256" || !auth.ValidPKCE(ar.Challenge):
		return ar, &oauthError{"invalid_request", "PKCE is required: send code_challenge (43 base64url characters) with code_challenge_method=S256"}, nil
	case len(ar.State) > 512 || len(ar.Nonce) > 512 || len(ar.Scope) > 512:
		return ar, &oauthError{"invalid_request", "state, nonce and scope are limited to 512 bytes"}, nil
	}
	return ar, nil, nil
}

// checkRedirectURI accepts only http URLs on a loopback host (any port, any
// path), as native apps and CLIs use (RFC 8252 §7.3).
func checkRedirectURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return fmt.Errorf("redirect_uri %q is not a URL", s)
	}
	if u.Scheme != "http" || !loopback.Is(u.Hostname()) || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("redirect_uri %q is not allowed: this development IdP redirects only to http://127.0.0.1:<port>/<path>, http://[::1]:<port>/<path> or http://localhost:<port>/<path>", s)
	}
	return nil
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Brainstem development sign-in</title></head>
<body style="font-family: sans-serif; max-width: 32em; margin: 3em auto">
<h1>Brainstem development sign-in</h1>
<p style="color: #a00"><strong>Development only.</strong> This identity provider signs in anyone as any email. Never use it in production.</p>
{{if .Error}}<p style="color: #a00">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="response_type" value="code">
<input type="hidden" name="client_id" value="{{.Req.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.Req.RedirectURI}}">
<input type="hidden" name="state" value="{{.Req.State}}">
<input type="hidden" name="code_challenge" value="{{.Req.Challenge}}">
<input type="hidden" name="code_challenge_method" value="S256">
<input type="hidden" name="nonce" value="{{.Req.Nonce}}">
<input type="hidden" name="scope" value="{{.Req.Scope}}">
<p><label>Email <input type="email" name="email" required autofocus value="{{.Email}}"></label></p>
<p><label>Groups (comma separated) <input type="text" name="groups" value="{{.Groups}}"></label></p>
<p><button type="submit">Sign in</button></p>
</form></body></html>
`))

type loginData struct {
	Action, Error, Email, Groups string
	Req                          authRequest
}

func (p *Provider) authorizeForm(w http.ResponseWriter, r *http.Request) {
	if ar, ok := p.authRequest(w, r, r.URL.Query()); ok {
		p.renderLogin(w, http.StatusOK, loginData{Action: p.base + "/authorize", Req: ar})
	}
}

// authRequest parses the authorization request in v; when it is refused,
// it answers (an error page, or the error sent back to the client's
// redirect URI) and returns false.
func (p *Provider) authRequest(w http.ResponseWriter, r *http.Request, v url.Values) (authRequest, bool) {
	ar, rerr, fatal := p.parseAuthRequest(v)
	if fatal != nil {
		httpErrorPage(w, http.StatusBadRequest, fatal.Error())
		return ar, false
	}
	if rerr != nil {
		redirectBack(w, r, ar, url.Values{"error": {rerr.Code}, "error_description": {rerr.Description}})
		return ar, false
	}
	return ar, true
}

func (p *Provider) renderLogin(w http.ResponseWriter, status int, d loginData) {
	secureHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := loginPage.Execute(w, d); err != nil {
		p.log.Warn("devidp: render login page", "err", err)
	}
}

func (p *Provider) authorizeSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		httpErrorPage(w, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	ar, ok := p.authRequest(w, r, r.PostForm)
	if !ok {
		return
	}
	email, err := checkEmail(r.PostForm.Get("email"))
	groups, gerr := parseGroups(r.PostForm.Get("groups"))
	if err == nil {
		err = gerr
	}
	if err == nil && p.isDisabled(email) {
		err = fmt.Errorf("%w: %s", ErrDisabled, email)
	}
	if err != nil {
		p.renderLogin(w, http.StatusBadRequest, loginData{Action: p.base + "/authorize", Req: ar, Error: err.Error(),
			Email: r.PostForm.Get("email"), Groups: r.PostForm.Get("groups")})
		return
	}
	code := randomToken()
	p.mu.Lock()
	p.codes.Add(code, authCode{
		grant:       grant{email: email, groups: groups, scope: ar.Scope, expires: p.cfg.Now().Add(CodeTTL)},
		redirectURI: ar.RedirectURI, challenge: ar.Challenge, nonce: ar.Nonce})
	p.mu.Unlock()
	p.log.Info("devidp: signed in", "email", email, "groups", groups)
	redirectBack(w, r, ar, url.Values{"code": {code}, "iss": {p.cfg.Issuer}})
}

// parseGroups splits the groups field on commas, trimming spaces and
// dropping empty names.
func parseGroups(s string) ([]string, error) {
	var out []string
	for g := range strings.SplitSeq(s, ",") {
		g = strings.TrimSpace(g)
		if g == "" || slices.Contains(out, g) {
			continue
		}
		if auth.HasControlChar(g) || len(g) > 256 {
			return nil, fmt.Errorf("devidp: group %.40q is unprintable or over 256 bytes", g)
		}
		out = append(out, g)
	}
	if len(out) > MaxGroups {
		return nil, fmt.Errorf("devidp: %d groups, the limit is %d", len(out), MaxGroups)
	}
	return out, nil
}

func withQuery(base string, q url.Values) string {
	u, _ := url.Parse(base) // validated by checkRedirectURI
	vals := u.Query()
	maps.Copy(vals, q)
	u.RawQuery = vals.Encode()
	return u.String()
}

// redirectBack answers an authorization request at its redirect URI with
// q and the request's state.
func redirectBack(w http.ResponseWriter, r *http.Request, ar authRequest, q url.Values) {
	if ar.State != "" {
		q.Set("state", ar.State)
	}
	http.Redirect(w, r, withQuery(ar.RedirectURI, q), http.StatusFound)
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenResponse is the token endpoint's success answer.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope,omitempty"`
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{"invalid_request", "the form could not be read: " + err.Error()})
		return
	}
	f := r.PostForm
	clientID, secret := f.Get("client_id"), f.Get("client_secret")
	if id, pw, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id) // RFC 6749 §2.3.1: form-encoded before Basic
		pw, _ = url.QueryUnescape(pw)
		if clientID != "" && clientID != id {
			writeJSON(w, http.StatusBadRequest, oauthError{"invalid_request", "client_id in the form and in Basic auth differ"})
			return
		}
		clientID, secret = id, pw
	}
	if clientID != p.cfg.ClientID {
		writeJSON(w, http.StatusUnauthorized, oauthError{"invalid_client", fmt.Sprintf("unknown client_id %q", clientID)})
		return
	}
	if p.cfg.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(p.cfg.ClientSecret)) != 1 {
		writeJSON(w, http.StatusUnauthorized, oauthError{"invalid_client", "client authentication failed (wrong or missing client_secret)"})
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		p.exchangeCode(w, f)
	case "refresh_token":
		p.exchangeRefresh(w, f)
	case GrantTypeTokenExchange:
		p.exchangeToken(w, f)
	default:
		writeJSON(w, http.StatusBadRequest, oauthError{"unsupported_grant_type", "grant_type must be authorization_code, refresh_token or " + GrantTypeTokenExchange})
	}
}

func (p *Provider) exchangeCode(w http.ResponseWriter, f url.Values) {
	code := f.Get("code")
	p.mu.Lock()
	ac, ok := p.codes.Peek(code)
	if ok {
		p.codes.Remove(code) // single use, whatever happens next
	}
	p.mu.Unlock()
	verifier := f.Get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	switch {
	case !ok:
		invalidGrant(w, "unknown or already used authorization code")
	case !p.cfg.Now().Before(ac.expires):
		invalidGrant(w, "the authorization code expired; sign in again")
	case f.Get("redirect_uri") != ac.redirectURI:
		invalidGrant(w, "redirect_uri does not match the authorization request")
	case p.isDisabled(ac.email):
		invalidGrant(w, "the account is disabled")
	case !auth.ValidPKCE(verifier) || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(ac.challenge)) != 1:
		invalidGrant(w, "code_verifier does not match the code_challenge (PKCE S256)")
	default:
		p.issue(w, ac.grant, ac.nonce)
	}
}

func (p *Provider) exchangeRefresh(w http.ResponseWriter, f url.Values) {
	rt := f.Get("refresh_token")
	p.mu.Lock()
	g, ok := p.refresh.Peek(rt)
	if ok {
		p.refresh.Remove(rt) // rotated: the old token is dead from now on
	}
	p.mu.Unlock()
	switch {
	case !ok:
		invalidGrant(w, "unknown, expired or already used refresh token; sign in again")
	case !p.cfg.Now().Before(g.expires):
		invalidGrant(w, "the refresh token expired; sign in again")
	case p.isDisabled(g.email):
		invalidGrant(w, "the account is disabled")
	default:
		p.issue(w, g, "")
	}
}

func invalidGrant(w http.ResponseWriter, desc string) {
	writeJSON(w, http.StatusBadRequest, oauthError{"invalid_grant", desc})
}

// issue answers a token request with a fresh JWT (as both id_token and
// access_token) and a new refresh token.
func (p *Provider) issue(w http.ResponseWriter, g grant, nonce string) {
	tok, exp, err := p.mint(g.email, g.groups, 0, nonce)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, oauthError{"server_error", err.Error()})
		return
	}
	rt := randomToken()
	now := p.cfg.Now()
	p.mu.Lock()
	p.refresh.Add(rt, grant{email: g.email, groups: g.groups, scope: g.scope, expires: now.Add(RefreshTTL)})
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, tokenResponse{
		AccessToken: tok, IDToken: tok, RefreshToken: rt, TokenType: "Bearer",
		ExpiresIn: int64(exp.Sub(now.Truncate(time.Second)) / time.Second), Scope: g.scope})
}

func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http://127.0.0.1:* http://localhost:*; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	secureHeaders(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func httpErrorPage(w http.ResponseWriter, status int, msg string) {
	secureHeaders(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "devidp: %s\n", msg)
}
