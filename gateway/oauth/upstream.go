package oauth

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
)

// Discovery backoff after a failure: 1s doubling to 1m.
const (
	upstreamBackoffMin = time.Second
	upstreamBackoffMax = time.Minute
	upstreamTimeout    = 10 * time.Second
)

// Errors of the upstream IdP.
var (
	// ErrUpstreamUnavailable: the IdP could not be reached or answered with
	// a server error; the client should retry later.
	ErrUpstreamUnavailable = errors.New("oauth: identity provider unavailable")
	// ErrUpstreamRefused: the IdP refused a code or refresh token
	// (invalid_grant): the user must sign in again.
	ErrUpstreamRefused = errors.New("oauth: identity provider refused the grant")
	// ErrUpstreamClient: the IdP refused the gateway itself (wrong client
	// id or secret, redirect URI not registered): an operator must fix the
	// configuration.
	ErrUpstreamClient = errors.New("oauth: identity provider refused the gateway's client")
)

// unavailableError carries how long to wait before the next attempt.
type unavailableError struct {
	retryAfter time.Duration
	err        error
}

func (e *unavailableError) Error() string {
	return fmt.Sprintf("identity provider unavailable (retry in %s): %v", e.retryAfter.Round(time.Second), e.err)
}
func (e *unavailableError) Unwrap() []error { return []error{ErrUpstreamUnavailable, e.err} }

// upstream is the facade's client of the company IdP: it discovers the
// IdP's endpoints on first use (retrying with backoff after a failure) and
// runs the code exchange, refresh and revocation.
type upstream struct {
	cfg         UpstreamConfig
	secret      string
	redirectURL string
	hc          *http.Client
	now         func() time.Time
	log         *slog.Logger
	lifetime    context.Context

	mu         sync.Mutex
	conf       *oauth2.Config
	authOrigin string // scheme://host of the authorization endpoint (for CSP)
	revokeURL  string
	fails      int
	nextTry    time.Time
	lastErr    error
}

// discovered returns the OAuth configuration, discovering the IdP first if
// needed.
func (u *upstream) discovered(ctx context.Context) (*oauth2.Config, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conf != nil {
		return u.conf, nil
	}
	now := u.now()
	if now.Before(u.nextTry) {
		return nil, &unavailableError{retryAfter: u.nextTry.Sub(now), err: u.lastErr}
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), u.hc), upstreamTimeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, u.cfg.Issuer)
	var meta struct {
		Revocation string `json:"revocation_endpoint"`
	}
	if err == nil {
		err = p.Claims(&meta)
	}
	if err != nil {
		backoff := min(upstreamBackoffMin<<min(u.fails, 6), upstreamBackoffMax)
		u.fails++
		u.nextTry, u.lastErr = u.now().Add(backoff), err
		u.log.Warn("oauth: identity provider discovery failed", "issuer", u.cfg.Issuer, "retry_in_seconds", backoff.Seconds(), "err", err)
		return nil, &unavailableError{retryAfter: backoff, err: err}
	}
	ep := p.Endpoint()
	if au, err := url.Parse(ep.AuthURL); err == nil {
		u.authOrigin = au.Scheme + "://" + au.Host
	}
	u.conf = &oauth2.Config{
		ClientID: u.cfg.ClientID, ClientSecret: u.secret,
		Endpoint: ep, RedirectURL: u.redirectURL, Scopes: u.cfg.Scopes,
	}
	u.revokeURL = meta.Revocation
	u.fails, u.lastErr = 0, nil
	return u.conf, nil
}

// origin returns the authorization endpoint's origin once discovered.
func (u *upstream) origin() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.authOrigin
}

// authURL is the IdP authorization request for one sign-in.
func (u *upstream) authURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	conf, err := u.discovered(ctx)
	if err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)}
	for k, v := range u.cfg.AuthParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	return conf.AuthCodeURL(state, opts...), nil
}

func (u *upstream) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, upstreamTimeout)
	return context.WithValue(ctx, oauth2.HTTPClient, u.hc), cancel
}

// exchange redeems the IdP's authorization code.
func (u *upstream) exchange(ctx context.Context, code, verifier string) (*oauth2.Token, error) {
	conf, err := u.discovered(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := u.ctx(ctx)
	defer cancel()
	tok, err := conf.Exchange(cctx, code, oauth2.VerifierOption(verifier))
	return tok, classifyUpstream(err)
}

// refresh redeems the IdP's refresh token.
func (u *upstream) refresh(ctx context.Context, refreshToken string) (*oauth2.Token, error) {
	conf, err := u.discovered(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := u.ctx(ctx)
	defer cancel()
	tok, err := conf.TokenSource(cctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	return tok, classifyUpstream(err)
}

// revoke asks the IdP to revoke a refresh token (RFC 7009), when it
// advertises a revocation endpoint. Best effort: the result is logged.
func (u *upstream) revoke(ctx context.Context, refreshToken string) {
	conf, err := u.discovered(ctx)
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
	resp, err := u.hc.Do(req)
	if err != nil {
		u.log.Warn("oauth: upstream revocation failed", "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		u.log.Warn("oauth: upstream revocation refused", "status", resp.StatusCode)
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
			return &unavailableError{retryAfter: 5 * time.Second, err: err}
		case re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client" || re.ErrorCode == "unsupported_grant_type":
			return fmt.Errorf("%w: %s", ErrUpstreamClient, describeRetrieve(re))
		}
		// invalid_grant, and what IdPs answer instead for a code or refresh
		// token they no longer know (Dex: invalid_request): sign in again.
		return fmt.Errorf("%w: %s", ErrUpstreamRefused, describeRetrieve(re))
	}
	return &unavailableError{retryAfter: 5 * time.Second, err: err}
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
