package signin

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
)

// Defaults of a Client.
const (
	// DefaultCallbackTimeout is how long Login waits for the browser.
	DefaultCallbackTimeout = 5 * time.Minute
	// DefaultRefreshMargin: Token refreshes an access token that expires
	// within this margin.
	DefaultRefreshMargin = time.Minute
	// DefaultClientName is the name this client registers with; the
	// consent page shows it.
	DefaultClientName = "Brainstem CLI (brainstem login)"
	// refreshLockWait bounds the wait for another process's refresh.
	refreshLockWait = 30 * time.Second
)

// ErrSignInEnded: the stored sign-in can no longer be refreshed (it
// expired, was revoked, or the user was disabled at the company IdP).
var ErrSignInEnded = errors.New("signin: the sign-in has ended")

// Client signs a user in to Brainstem gateways and keeps the tokens.
type Client struct {
	// HTTP calls the gateway; nil means a client with a 30 s timeout.
	HTTP *http.Client
	// Store keeps the sign-ins (required).
	Store *Store
	// Browser opens the sign-in page; nil means SystemBrowser{}.
	Browser Browser
	// Out receives the messages for the user (the URL to open); nil
	// discards them.
	Out io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CallbackTimeout bounds the wait for the browser; 0 means
	// DefaultCallbackTimeout.
	CallbackTimeout time.Duration
	// RefreshMargin: see DefaultRefreshMargin; 0 means the default.
	RefreshMargin time.Duration
	// ClientName is the name registered; "" means DefaultClientName
	// (DefaultDeviceClientName for LoginDevice).
	ClientName string
	// Sleep waits between device-flow polls; nil means a timer.
	Sleep func(context.Context, time.Duration) error
	// Device makes Login use the device authorization grant (LoginDevice):
	// no browser on this computer, a code typed into one anywhere.
	Device bool
}

// errNoBrowserAsked: --no-browser; the URL is printed instead.
var errNoBrowserAsked = errors.New("signin: --no-browser")

// NewDefault is the sign-in client of a command line on this machine: the
// sign-ins kept in the user's configuration directory (DefaultStore), the
// system browser, or none with noBrowser (the sign-in URL is then only
// printed), messages on out, timeout for the browser to come back.
func NewDefault(out io.Writer, noBrowser bool, timeout time.Duration) (*Client, error) {
	store, err := DefaultStore()
	if err != nil {
		return nil, err
	}
	c := &Client{Store: store, Out: out, CallbackTimeout: timeout, HTTP: &http.Client{Timeout: 30 * time.Second}}
	if noBrowser {
		c.Browser = BrowserFunc(func(context.Context, string) error { return errNoBrowserAsked })
	}
	return c, nil
}

func (c *Client) httpClient() *http.Client {
	return cmp.Or(c.HTTP, &http.Client{Timeout: 30 * time.Second})
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) out() io.Writer {
	return cmp.Or(c.Out, io.Discard)
}

// Login signs the user in to mcpURL: discovery, dynamic registration, the
// authorization code flow with PKCE S256 and resource = mcpURL through the
// browser and a loopback redirect, then the code exchange (or, with
// Device, LoginDevice). The tokens are saved before Login returns.
func (c *Client) Login(ctx context.Context, mcpURL string) (*Record, error) {
	if c.Device {
		return c.LoginDevice(ctx, mcpURL)
	}
	hc, d, err := c.discover(ctx, mcpURL)
	if err != nil {
		return nil, err
	}
	if why := c.noBrowserHere(); why != nil && d.Server.DeviceAuthorizationEndpoint != "" {
		fmt.Fprintf(c.out(), "No browser can be opened on this computer (%v): signing in with a code you type into a browser anywhere instead (as with --device).\n", why)
		return c.LoginDevice(ctx, mcpURL)
	}
	name := cmp.Or(c.ClientName, DefaultClientName)
	reg, err := Register(ctx, hc, d.Server.RegistrationEndpoint, name, []string{RegisteredRedirectURI})
	if err != nil {
		return nil, err
	}
	pk := newPKCE()
	state := randomString(16)
	l, err := listenCallback(state)
	if err != nil {
		return nil, err
	}
	defer l.close()
	areq := AuthorizationRequest{ClientID: reg.ClientID, RedirectURI: l.RedirectURI(), State: state,
		Challenge: pk.challenge, Resource: mcpURL, Scope: d.Scope}
	authURL, err := areq.URL(d.Server.AuthorizationEndpoint)
	if err != nil {
		return nil, err
	}
	res, err := c.browse(ctx, l, mcpURL, d.Server.Issuer, authURL)
	if err != nil {
		return nil, err
	}
	// RFC 9207: the answer must come from the server the request went to.
	if res.iss != "" || d.Server.IssParameterSupported {
		if res.iss != d.Server.Issuer {
			return nil, fmt.Errorf("signin: the answer names the issuer %.200q, not %s; the sign-in is not used", res.iss, d.Server.Issuer)
		}
	}
	now := c.now()
	tr, err := requestToken(ctx, hc, d.Server.TokenEndpoint, url.Values{
		"grant_type": {"authorization_code"}, "code": {res.code}, "redirect_uri": {l.RedirectURI()},
		"client_id": {reg.ClientID}, "code_verifier": {pk.verifier}, "resource": {mcpURL}})
	if err != nil {
		return nil, err
	}
	return c.save(d, reg.ClientID, tr, now)
}

// discover starts a sign-in to mcpURL: it needs a store, then Discover.
func (c *Client) discover(ctx context.Context, mcpURL string) (*http.Client, *Discovery, error) {
	if c.Store == nil {
		return nil, nil, errors.New("signin: no store to keep the sign-in in")
	}
	hc := c.httpClient()
	d, err := Discover(ctx, hc, mcpURL)
	return hc, d, err
}

// save keeps the sign-in to d.MCPURL that tr answered at now in the store.
func (c *Client) save(d *Discovery, clientID string, tr *TokenResponse, now time.Time) (*Record, error) {
	rec := &Record{
		Version: RecordVersion, MCPURL: d.MCPURL, Issuer: d.Server.Issuer, TokenEndpoint: d.Server.TokenEndpoint,
		RevocationEndpoint: d.Server.RevocationEndpoint, ClientID: clientID,
		AccessToken: tr.AccessToken, TokenType: "Bearer", ExpiresAt: expiry(now, tr.ExpiresIn),
		RefreshToken: tr.RefreshToken, Scope: tr.Scope, Email: displayEmail(tr.AccessToken), SignedInAt: now,
	}
	if err := c.Store.Save(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// noBrowserHere reports why the system browser cannot be opened on this
// computer (no graphical session and no $BROWSER), nil when it can or
// when another Browser is set (tests, --no-browser).
func (c *Client) noBrowserHere() error {
	sb, ok := c.Browser.(SystemBrowser)
	if c.Browser == nil {
		sb, ok = SystemBrowser{}, true
	}
	if !ok {
		return nil
	}
	if _, err := sb.Commands("https://example.invalid/"); errors.Is(err, ErrNoBrowser) {
		return errors.New(strings.TrimPrefix(err.Error(), ErrNoBrowser.Error()+": "))
	}
	return nil
}

// browse opens the browser on authURL (or asks the user to) and waits, at
// most CallbackTimeout, for the sign-in's answer on l.
func (c *Client) browse(ctx context.Context, l *callbackListener, mcpURL, issuer, authURL string) (callbackResult, error) {
	timeout := c.CallbackTimeout
	if timeout <= 0 {
		timeout = DefaultCallbackTimeout
	}
	browser := cmp.Or[Browser](c.Browser, SystemBrowser{})
	out := c.out()
	fmt.Fprintf(out, "Signing in to %s with %s.\n", mcpURL, issuer)
	if err := browser.Open(ctx, authURL); errors.Is(err, errNoBrowserAsked) {
		fmt.Fprintf(out, "Open this URL in a browser on this computer (the sign-in ends at %s; on another computer use `brainstem login --device %s`):\n\n  %s\n\n", l.RedirectURI(), mcpURL, authURL)
	} else if err != nil {
		fmt.Fprintf(out, "Could not open a browser (%v).\nOpen this URL in a browser on this computer, or sign in with a code from any computer with `brainstem login --device %s`:\n\n  %s\n\n", err, mcpURL, authURL)
	} else {
		fmt.Fprintf(out, "Your browser opens the sign-in page. If it does not, open this URL in a browser on this computer:\n\n  %s\n\n", authURL)
	}
	fmt.Fprintf(out, "Waiting up to %s for the sign-in to finish…\n", timeout)
	res, err := l.wait(ctx, timeout)
	if err != nil {
		if errors.Is(err, ErrCallbackTimeout) {
			return res, fmt.Errorf("%w: run `brainstem login %s` again and finish the sign-in in the browser; the browser must run on this computer, since the sign-in ends at %s",
				err, mcpURL, l.RedirectURI())
		}
		return res, err
	}
	return res, res.err
}

// Token returns mcpURL's stored sign-in with an access token usable for at
// least the refresh margin, refreshing it first when needed. A rotated
// refresh token is saved before the new access token is returned.
func (c *Client) Token(ctx context.Context, mcpURL string) (*Record, error) {
	if c.Store == nil {
		return nil, errors.New("signin: no store to read the sign-in from")
	}
	margin := c.RefreshMargin
	if margin <= 0 {
		margin = DefaultRefreshMargin
	}
	rec, err := c.Store.Load(mcpURL)
	if err != nil {
		return nil, err
	}
	if rec.Fresh(c.now(), margin) {
		return rec, nil
	}
	if rec.RefreshToken == "" {
		return nil, fmt.Errorf("%w: the access token expired at %s and there is no refresh token", ErrSignInEnded, rec.ExpiresAt.Local().Format(time.RFC3339))
	}
	lctx, cancel := context.WithTimeout(ctx, refreshLockWait)
	defer cancel()
	unlock, err := c.Store.lock(lctx, mcpURL)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another process may have refreshed while this one waited.
	if rec, err = c.Store.Load(mcpURL); err != nil {
		return nil, err
	}
	if rec.Fresh(c.now(), margin) {
		return rec, nil
	}
	now := c.now()
	tr, err := requestToken(ctx, c.httpClient(), rec.TokenEndpoint, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {rec.RefreshToken},
		"client_id": {rec.ClientID}, "resource": {rec.MCPURL}})
	if err != nil {
		var oe *OAuthError
		if errors.As(err, &oe) && (oe.Code == "invalid_grant" || oe.Code == "invalid_client" || oe.Code == "unauthorized_client") {
			return nil, fmt.Errorf("%w: %w", ErrSignInEnded, err)
		}
		return nil, err
	}
	next := *rec
	next.AccessToken, next.TokenType, next.ExpiresAt = tr.AccessToken, "Bearer", expiry(now, tr.ExpiresIn)
	if tr.RefreshToken != "" {
		next.RefreshToken = tr.RefreshToken
	}
	if tr.Scope != "" {
		next.Scope = tr.Scope
	}
	if e := displayEmail(tr.AccessToken); e != "" {
		next.Email = e
	}
	next.RefreshedAt = now
	if err := c.Store.Save(&next); err != nil {
		return nil, fmt.Errorf("signin: the refreshed tokens could not be saved, so they are not used (sign in again if this persists): %w", err)
	}
	return &next, nil
}

// displayEmail reads the email claim of a JWT access token without
// verifying it, to show who is signed in; "" when it has none. The token
// is opaque to this client for every other purpose.
func displayEmail(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Email string `json:"email"`
	}
	if json.Unmarshal(b, &c) != nil || len(c.Email) > brain.MaxEmailBytes || strings.ContainsFunc(c.Email, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return ""
	}
	return c.Email
}
