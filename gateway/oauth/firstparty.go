package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/config"
)

// The gateway's own browser client (the curators' console, gateway/console)
// signs in through this server like any client — the same IdP round trip,
// the same code, PKCE and token checks — with three differences that make
// it first party: its client id is made in process (on the issuer's own
// origin, so without the redirect rules of dynamic registration), it skips the
// consent page (it is the gateway's own page on the gateway's own origin,
// so there is nobody else to consent to), and it exchanges its code and
// revokes its token by method call instead of over HTTP.

// purposeFirstParty prefixes the sealing purposes of first-party values, so
// that none of them opens as one of the server's own.
const purposeFirstParty = "first party: "

// ErrFirstParty reports a first-party sign-in that could not complete: the
// code was refused, or the IdP could not be reached.
var ErrFirstParty = errors.New("oauth: first-party sign-in refused")

// FirstPartyToken is the access token a first-party client received.
type FirstPartyToken struct {
	AccessToken string
	Expiry      time.Time
}

// RegisterFirstParty returns the client id of the gateway's own client
// with its redirect URI (on the gateway's origin, so not subject to the
// redirect-URI rules of dynamic registration). The id is signed like a
// registered one and made the same way on every replica holding the same
// current key; any replica accepts the id of any other.
func (s *Server) RegisterFirstParty(name, redirectURI string) (string, error) {
	if _, err := clients.CleanName(name); err != nil || name == "" {
		return "", fmt.Errorf("oauth: first-party client name %q: %w", name, ErrClientID)
	}
	u, err := url.Parse(redirectURI)
	if err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, originOf(s.issuer)) || !plainURI(redirectURI) || u.Fragment != "" {
		return "", fmt.Errorf("oauth: first-party redirect URI %q is not on the issuer's origin: %w", redirectURI, ErrClientID)
	}
	payload, err := json.Marshal(clientClaims{Name: name, RedirectURIs: []string{redirectURI}, Nonce: "first-party"})
	if err != nil {
		return "", fmt.Errorf("oauth: first-party client: %w", err)
	}
	enc := registeredPrefix + base64.RawURLEncoding.EncodeToString(payload)
	return enc + "." + base64.RawURLEncoding.EncodeToString(s.keys.MAC([]byte(enc))), nil
}

// originOf is the scheme://host of a URL.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// AuthorizeFirstParty sends the browser to the IdP for the first-party
// client, as GET /authorize does after consent: the IdP's answer comes back
// through /oauth/callback, which redirects to redirectURI with a code and
// state. challenge is the S256 PKCE challenge of the client's verifier.
func (s *Server) AuthorizeFirstParty(w http.ResponseWriter, r *http.Request, clientID, redirectURI, state, challenge string) {
	client, err := s.parseRegisteredClient(clientID)
	if err != nil || !redirectAllowed(client, redirectURI) || !auth.ValidPKCE(challenge) || len(challenge) != 43 || len(state) > MaxStateBytes {
		s.RefusePage(w, "authorize", http.StatusBadRequest, "Invalid sign-in request", "The console's sign-in request is not valid.")
		return
	}
	if _, err := s.up.Discovered(r.Context()); err != nil {
		s.Count("authorize", "unavailable")
		s.UnavailablePage(w, err)
		return
	}
	s.Count("authorize", "ok")
	s.startLogin(w, r, authzRequest{ClientID: clientID, RedirectURI: redirectURI, State: state, Challenge: challenge, Exp: s.now().Add(config.LoginTTL).Unix()})
}

// ExchangeFirstParty redeems a code the first-party client received, with
// every check of POST /token (client, redirect URI, PKCE, single use, the
// IdP's code redeemed now, the ID token verified). The refresh token, if
// any, is not handed out: a console session ends with its access token.
func (s *Server) ExchangeFirstParty(ctx context.Context, clientID, redirectURI, code, verifier string) (FirstPartyToken, error) {
	form := url.Values{"code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}, "resource": {s.resource}}
	body, terr := s.redeemCode(ctx, form, clientID)
	if terr != nil {
		s.Count("token", "refused")
		return FirstPartyToken{}, fmt.Errorf("%w: %s: %s", ErrFirstParty, terr.Code, terr.Description)
	}
	var tr TokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		return FirstPartyToken{}, fmt.Errorf("oauth: first-party token: %w", err)
	}
	s.Count("token", "ok")
	return FirstPartyToken{AccessToken: tr.AccessToken, Expiry: s.now().Add(time.Duration(tr.ExpiresIn) * time.Second)}, nil
}

// RevokeFirstParty revokes an access token of the first-party client on
// this replica, as POST /revoke does: Verify refuses it from now on.
func (s *Server) RevokeFirstParty(clientID, accessToken string) {
	c, err := s.parseAccessToken(accessToken)
	if err != nil || c.ClientID != clientID {
		return
	}
	s.revoked.Add("j:"+c.ID, time.Unix(c.Expiry, 0).Add(AccessClockSkew))
	s.Count("revoke", "ok")
	s.log.Info("oauth: access token revoked", "email", c.Email, "client", ClientLabel(clientID))
}

// SealFirstParty seals v (AES-256-GCM under a key derived from the signing
// key every replica holds) for purpose; OpenFirstParty opens it on any
// replica, for that purpose only.
func (s *Server) SealFirstParty(purpose string, v any) (string, error) {
	return s.keys.Seal(purposeFirstParty+purpose, v)
}

// OpenFirstParty opens a value SealFirstParty sealed for purpose, refusing
// one over limit bytes.
func (s *Server) OpenFirstParty(purpose, sealed string, limit int, v any) error {
	return s.keys.Open(purposeFirstParty+purpose, sealed, limit, v)
}

// Secure reports whether the issuer is https (cookies are then Secure and
// __Host- prefixed).
func (s *Server) Secure() bool { return s.secure }
