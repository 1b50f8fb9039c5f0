package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth"
)

// Cookie names (on https, __Host- prefixed: Secure, Path=/, no Domain).
const (
	cookieSignIn = "brainstem-console-signin"
	cookieLogin  = "brainstem-console-login"
)

// Sealing purposes of the console's cookies.
const (
	purposeSignIn = "console sign-in"
	purposeLogin  = "console login"
)

// Bounds of the sign-in.
const (
	loginTTL = 10 * time.Minute
	// maxCookieBytes keeps a cookie within what every browser stores.
	maxCookieBytes = 3800
	// maxNextBytes bounds the page to return to after signing in.
	maxNextBytes = 1024
)

// signIn is the sealed sign-in cookie: the facade's access token (which
// carries the identity and expiry, and which sign-out revokes) and the
// sign-in's CSRF secret.
type signIn struct {
	Token  string `json:"t"`
	Client string `json:"c"` // the console's client id the token was issued to
	CSRF   string `json:"x"`
	Exp    int64  `json:"e"`
}

// loginState is the sealed login cookie between /console/login and
// /console/callback.
type loginState struct {
	Client   string `json:"c"` // the console's client id at the start (replicas may differ while a key rotates)
	State    string `json:"s"`
	Verifier string `json:"v"`
	Next     string `json:"n"`
	Exp      int64  `json:"e"`
}

// errNotSignedIn: no sign-in cookie at all. errSignInEnded: a cookie that
// no longer opens, or whose token is expired or revoked.
var (
	errNotSignedIn = errors.New("console: not signed in")
	errSignInEnded = errors.New("console: the sign-in has ended")
)

// setCookie sets a console cookie by the facade's rules (__Host- prefixed
// on https, HttpOnly, SameSite=Lax); maxAge ≤ 0 deletes it.
func (c *Console) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	if maxAge <= 0 {
		maxAge = -1
	}
	c.facade.SetCookie(w, name, value, maxAge, http.SameSiteLaxMode)
}

// authenticate opens the sign-in cookie and verifies its access token as
// /mcp verifies a bearer token (signature, audience, expiry, revocation).
func (c *Console) authenticate(r *http.Request) (signIn, auth.Identity, error) {
	raw := c.facade.Cookie(r, cookieSignIn)
	if raw == "" {
		return signIn{}, auth.Identity{}, errNotSignedIn
	}
	var s signIn
	if err := c.facade.OpenFirstParty(purposeSignIn, raw, maxCookieBytes, &s); err != nil {
		return signIn{}, auth.Identity{}, errors.Join(errSignInEnded, err)
	}
	if c.now().Unix() >= s.Exp || s.CSRF == "" {
		return signIn{}, auth.Identity{}, errSignInEnded
	}
	id, err := c.facade.Verify(r.Context(), s.Token)
	if err != nil {
		return signIn{}, auth.Identity{}, errors.Join(errSignInEnded, err)
	}
	return s, id, nil
}

// serveLogin starts a sign-in: a login cookie with the state and PKCE
// verifier, then the facade sends the browser to the IdP.
func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	next := c.safeNext(r.URL.Query().Get("next"))
	ls := loginState{Client: c.clientID, State: oauth.RandomString(16), Verifier: oauth.RandomString(32), Next: next, Exp: c.now().Add(loginTTL).Unix()}
	sealed, err := c.facade.SealFirstParty(purposeLogin, ls)
	if err != nil {
		c.serverError(w, err)
		return
	}
	c.setCookie(w, cookieLogin, sealed, loginTTL)
	sum := sha256.Sum256([]byte(ls.Verifier))
	c.facade.AuthorizeFirstParty(w, r, c.clientID, c.callback, ls.State, base64.RawURLEncoding.EncodeToString(sum[:]))
}

// serveCallback finishes a sign-in: the state must be the login cookie's,
// the code is redeemed with its verifier, and the sign-in cookie is set.
func (c *Console) serveCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ls loginState
	if err := c.facade.OpenFirstParty(purposeLogin, c.facade.Cookie(r, cookieLogin), maxCookieBytes, &ls); err != nil ||
		c.now().Unix() > ls.Exp || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(ls.State)) != 1 {
		c.plainPage(w, http.StatusBadRequest, "Sign-in not started here", "This sign-in was not started in this browser, has expired or was already completed.", true)
		return
	}
	c.setCookie(w, cookieLogin, "", -1)
	if e := q.Get("error"); e != "" {
		c.plainPage(w, http.StatusForbidden, "Sign-in refused", "The identity provider refused the sign-in: "+truncate(q.Get("error_description"), 300), true)
		return
	}
	tok, err := c.facade.ExchangeFirstParty(r.Context(), ls.Client, c.callback, q.Get("code"), ls.Verifier)
	if err != nil {
		c.log.Info("console: sign-in refused", "err", err)
		c.plainPage(w, http.StatusForbidden, "Sign-in refused", "The sign-in could not be completed: "+truncate(err.Error(), 300), true)
		return
	}
	s := signIn{Token: tok.AccessToken, Client: ls.Client, CSRF: oauth.RandomString(24), Exp: tok.Expiry.Unix()}
	sealed, err := c.facade.SealFirstParty(purposeSignIn, s)
	if err != nil {
		c.serverError(w, err)
		return
	}
	if len(sealed) > maxCookieBytes {
		c.plainPage(w, http.StatusBadRequest, "Sign-in refused", "Your account is in too many groups for a console sign-in cookie; ask an administrator to limit the groups claim.", true)
		return
	}
	c.setCookie(w, cookieSignIn, sealed, tok.Expiry.Sub(c.now()))
	w.Header().Set("Cache-Control", "no-store")
	// Checked again: a login cookie sealed by an older replica may carry a
	// page the current rules refuse.
	http.Redirect(w, r, c.safeNext(ls.Next), http.StatusSeeOther)
}

// serveLogout signs out: only a sign-in that opens, with its CSRF token
// from the console's origin, is signed out (the access token revoked, the
// cookie cleared). Any other request is refused as a forged form is, and
// sets no cookie: a cross-site form arrives without the (SameSite=Lax)
// cookie, and a browser keeps the cookies of a top-level navigation's
// answer, so clearing the cookie here would let any site sign a curator
// out.
func (c *Console) serveLogout(w http.ResponseWriter, r *http.Request) {
	s, _, ok := c.signedForm(w, r, c.unauthorized)
	if !ok {
		return
	}
	c.facade.RevokeFirstParty(s.Client, s.Token)
	c.setCookie(w, cookieSignIn, "", -1)
	http.Redirect(w, r, c.prefix+"signed-out", http.StatusSeeOther)
}

// signedForm authenticates a state-changing request and checks its form
// (checkForm). It answers a refusal itself, through signedOut for the
// sign-in, and reports whether the request may go on.
func (c *Console) signedForm(w http.ResponseWriter, r *http.Request, signedOut func(http.ResponseWriter, error)) (signIn, auth.Identity, bool) {
	s, id, err := c.authenticate(r)
	if err != nil {
		signedOut(w, err)
		return s, id, false
	}
	if status, msg := c.checkForm(w, r, s); status != 0 {
		c.plainPage(w, status, "Request refused", msg, false)
		return s, id, false
	}
	return s, id, true
}

// checkForm refuses a state-changing request that did not come from the
// console's own page: another origin (Origin, Sec-Fetch-Site), an
// unreadable or oversized form, or a CSRF token that is not the sign-in's.
// It returns 0 when the request may go on.
func (c *Console) checkForm(w http.ResponseWriter, r *http.Request, s signIn) (int, string) {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return http.StatusForbidden, "The form was not sent from the console's own page (Sec-Fetch-Site: " + truncate(site, 40) + ")."
	}
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, c.origin) {
		return http.StatusForbidden, "The form was sent from another origin."
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return http.StatusRequestEntityTooLarge, "The form could not be read or is over the console's limit."
	}
	tok := r.PostForm.Get("csrf")
	if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.CSRF)) != 1 {
		return http.StatusForbidden, "The form does not carry this sign-in's CSRF token; reload the page and try again."
	}
	return 0, ""
}

// safeNext keeps a return path only when it is a page of the console as
// the browser will resolve it: a path (no scheme, host, "//", backslash or
// control character, raw or percent-encoded) whose cleaned form (dot
// segments removed, "%2e%2e" being one to a browser) is under the
// console's prefix. It returns that cleaned form, else the console's home.
func (c *Console) safeNext(next string) string {
	if next == "" || len(next) > maxNextBytes || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsFunc(next, unsafeInNext) {
		return c.prefix
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || strings.ContainsFunc(u.Path, unsafeInNext) {
		return c.prefix
	}
	p := path.Clean(u.Path) // the decoded path: every encoded dot and slash is one
	if strings.HasSuffix(u.Path, "/") && p != "/" {
		p += "/"
	}
	if p+"/" == c.prefix {
		p = c.prefix
	}
	if !strings.HasPrefix(p, c.prefix) {
		return c.prefix
	}
	return (&url.URL{Path: p, RawQuery: u.RawQuery}).String()
}

// unsafeInNext: a backslash (a slash to browsers) or a control character
// (stripped or refused by browsers) in a return path.
func unsafeInNext(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
