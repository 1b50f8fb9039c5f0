// Package upstream is the client of the company IdP that the gateway's
// authorization server (gateway/oauth) signs people in with: it discovers
// the IdP's endpoints on first use (retrying with backoff after a failure)
// and runs the code exchange, refresh and revocation.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/brainstem/brainstem/gateway/oauth/config"
)

// Discovery backoff after a failure: 1s doubling to 1m.
const (
	upstreamBackoffMin = time.Second
	upstreamBackoffMax = time.Minute
	// Timeout bounds one call to the IdP.
	Timeout = 10 * time.Second
)

// Errors of the upstream IdP.
var (
	// ErrUnavailable: the IdP could not be reached or answered with
	// a server error; the client should retry later.
	ErrUnavailable = errors.New("oauth: identity provider unavailable")
	// ErrRefused: the IdP refused a code or refresh token
	// (invalid_grant): the user must sign in again.
	ErrRefused = errors.New("oauth: identity provider refused the grant")
	// ErrClient: the IdP refused the gateway itself (wrong client
	// id or secret, redirect URI not registered): an operator must fix the
	// configuration.
	ErrClient = errors.New("oauth: identity provider refused the gateway's client")
)

// UnavailableError carries how long to wait before the next attempt.
type UnavailableError struct {
	RetryAfter time.Duration
	err        error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("identity provider unavailable (retry in %s): %v", e.RetryAfter.Round(time.Second), e.err)
}
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// IdP is the facade's client of the company IdP.
type IdP struct {
	Config      config.UpstreamConfig
	Secret      string // the facade's client secret there
	RedirectURL string // the facade's callback
	HTTP        *http.Client
	Now         func() time.Time
	Log         *slog.Logger
	Lifetime    context.Context // bounds discovery and calls beyond a request's

	mu         sync.Mutex
	conf       *oauth2.Config
	authOrigin string // scheme://host of the authorization endpoint (for CSP)
	revokeURL  string
	fails      int
	nextTry    time.Time
	lastErr    error
}

// Discovered returns the OAuth configuration, discovering the IdP first if
// needed.
func (u *IdP) Discovered(ctx context.Context) (*oauth2.Config, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conf != nil {
		return u.conf, nil
	}
	now := u.Now()
	if now.Before(u.nextTry) {
		return nil, &UnavailableError{RetryAfter: u.nextTry.Sub(now), err: u.lastErr}
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), u.HTTP), Timeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, u.Config.Issuer)
	var meta struct {
		Revocation string `json:"revocation_endpoint"`
	}
	if err == nil {
		err = p.Claims(&meta)
	}
	if err != nil {
		backoff := min(upstreamBackoffMin<<min(u.fails, 6), upstreamBackoffMax)
		u.fails++
		u.nextTry, u.lastErr = u.Now().Add(backoff), err
		u.Log.Warn("oauth: identity provider discovery failed", "issuer", u.Config.Issuer, "retry_in_seconds", backoff.Seconds(), "err", err)
		return nil, &UnavailableError{RetryAfter: backoff, err: err}
	}
	ep := p.Endpoint()
	if au, err := url.Parse(ep.AuthURL); err == nil {
		u.authOrigin = au.Scheme + "://" + au.Host
	}
	u.conf = &oauth2.Config{
		ClientID: u.Config.ClientID, ClientSecret: u.Secret,
		Endpoint: ep, RedirectURL: u.RedirectURL, Scopes: u.Config.Scopes,
	}
	u.revokeURL = meta.Revocation
	u.fails, u.lastErr = 0, nil
	return u.conf, nil
}

// Origin returns the authorization endpoint's origin once discovered.
func (u *IdP) Origin() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.authOrigin
}

// AuthURL is the IdP authorization request for one sign-in.
func (u *IdP) AuthURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	conf, err := u.Discovered(ctx)
	if err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)}
	for k, v := range u.Config.AuthParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	return conf.AuthCodeURL(state, opts...), nil
}

func (u *IdP) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	return context.WithValue(ctx, oauth2.HTTPClient, u.HTTP), cancel
}

// Exchange redeems the IdP's authorization code.
func (u *IdP) Exchange(ctx context.Context, code, verifier string) (*oauth2.Token, error) {
	conf, err := u.Discovered(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := u.ctx(ctx)
	defer cancel()
	tok, err := conf.Exchange(cctx, code, oauth2.VerifierOption(verifier))
	return tok, classifyUpstream(err)
}

// Refresh redeems the IdP's refresh token.
func (u *IdP) Refresh(ctx context.Context, refreshToken string) (*oauth2.Token, error) {
	conf, err := u.Discovered(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := u.ctx(ctx)
	defer cancel()
	tok, err := conf.TokenSource(cctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	return tok, classifyUpstream(err)
}

// Revoke asks the IdP to revoke a refresh token (RFC 7009), when it
// advertises a revocation endpoint. Best effort: the result is logged.
func (u *IdP) Revoke(ctx context.Context, refreshToken string) {
	conf, err := u.Discovered(ctx)
	if err != nil || u.revokeURL == "" {
		return
	}
	cctx, cancel := u.ctx(ctx)
	defer cancel()
	form := url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}}
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, u.revokeURL, strings.NewReader(form.Encode()))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(conf.ClientID), url.QueryEscape(conf.ClientSecret))
	resp, err := u.HTTP.Do(req)
	if err != nil {
		u.Log.Warn("oauth: upstream revocation failed", "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		u.Log.Warn("oauth: upstream revocation refused", "status", resp.StatusCode)
	}
}

// classifyUpstream sorts a token-endpoint failure into refused (sign in
// again) and unavailable (retry).
func classifyUpstream(err error) error {
	if err == nil {
		return nil
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch {
		case re.Response != nil && re.Response.StatusCode >= 500:
			return &UnavailableError{RetryAfter: 5 * time.Second, err: err}
		case re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client" || re.ErrorCode == "unsupported_grant_type":
			return fmt.Errorf("%w: %s", ErrClient, describeRetrieve(re))
		}
		// invalid_grant, and what IdPs answer instead for a code or refresh
		// token they no longer know (Dex: invalid_request): sign in again.
		return fmt.Errorf("%w: %s", ErrRefused, describeRetrieve(re))
	}
	return &UnavailableError{RetryAfter: 5 * time.Second, err: err}
}

func describeRetrieve(re *oauth2.RetrieveError) string {
	s := re.ErrorCode
	if re.ErrorDescription != "" {
		s += ": " + re.ErrorDescription
	}
	if s == "" && re.Response != nil {
		s = re.Response.Status
	}
	return s
}
