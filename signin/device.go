package signin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"time"

	"github.com/brainstem/brainstem/internal/pause"
)

// The device authorization grant (RFC 8628): `brainstem login --device`
// on a computer without a browser. The user opens the verification URL
// in a browser anywhere and types the code; this client polls the token
// endpoint meanwhile.

// GrantTypeDevice is the device authorization grant type.
const GrantTypeDevice = "urn:ietf:params:oauth:grant-type:device_code"

// Limits of the device flow on the client side.
const (
	// MaxDeviceWait bounds the wait for the user, whatever expires_in says.
	MaxDeviceWait = 30 * time.Minute
	// maxDeviceInterval bounds the polling interval, whatever the server
	// asks (slow_down adds 5 s each time).
	maxDeviceInterval = time.Minute
	// maxUserCodeBytes bounds the user code shown.
	maxUserCodeBytes = 64
)

// Errors of the device flow. Each is wrapped with the detail.
var (
	// ErrNoDeviceFlow: the authorization server advertises no device
	// authorization endpoint.
	ErrNoDeviceFlow = errors.New("signin: the authorization server offers no device sign-in")
	// ErrDeviceDenied: the user (or the IdP) denied the request.
	ErrDeviceDenied = errors.New("signin: the sign-in was denied")
	// ErrDeviceExpired: nobody approved the request in time.
	ErrDeviceExpired = errors.New("signin: the code expired before it was approved")
)

// DeviceAuthorization is a device authorization answer (RFC 8628 §3.2).
type DeviceAuthorization struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// DeviceUserAgent is the User-Agent of the device request: the gateway's
// approval page shows it, so it names this computer.
func DeviceUserAgent() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("brainstem login --device (host %s; %s/%s)", clip(host, 64), runtime.GOOS, runtime.GOARCH)
}

// RequestDeviceAuthorization starts a device sign-in.
func RequestDeviceAuthorization(ctx context.Context, hc *http.Client, endpoint string, form url.Values) (*DeviceAuthorization, error) {
	post := formPost("device authorization", endpoint, form)
	post.userAgent = DeviceUserAgent()
	var d DeviceAuthorization
	if err := post.do(ctx, hc, &d); err != nil {
		return nil, err
	}
	switch {
	case d.DeviceCode == "" || len(d.DeviceCode) > MaxTokenBytes || !headerSafe(d.DeviceCode):
		return nil, errors.New("signin: the device authorization answer carries no usable device_code")
	case d.UserCode == "" || len(d.UserCode) > maxUserCodeBytes || clip(d.UserCode, maxUserCodeBytes) != d.UserCode:
		return nil, errors.New("signin: the device authorization answer carries no usable user_code")
	case checkEndpoint("verification_uri", d.VerificationURI) != nil:
		return nil, fmt.Errorf("signin: the verification_uri %.200q is not an https URL", d.VerificationURI)
	case d.ExpiresIn <= 0:
		return nil, fmt.Errorf("signin: the device authorization answer's expires_in is %d", d.ExpiresIn)
	}
	if d.VerificationURIComplete != "" && (checkEndpoint("verification_uri_complete", d.VerificationURIComplete) != nil ||
		!sameOrigin(d.VerificationURIComplete, d.VerificationURI) || !headerSafe(d.VerificationURIComplete)) {
		d.VerificationURIComplete = "" // unusable: not shown
	}
	return &d, nil
}

// sleep waits d or until ctx ends.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return pause.For(ctx, d)
}

// LoginDevice signs the user in to mcpURL with the device authorization
// grant: discovery, registration of a device client, the device request,
// then it prints the verification URL and the code and polls the token
// endpoint (honouring interval and slow_down) until the user approved in
// a browser anywhere, denied, or the code expired. The tokens are saved
// before LoginDevice returns, as Login saves them.
func (c *Client) LoginDevice(ctx context.Context, mcpURL string) (*Record, error) {
	hc, d, err := c.discover(ctx, mcpURL)
	if err != nil {
		return nil, err
	}
	ep := d.Server.DeviceAuthorizationEndpoint
	if ep == "" {
		return nil, fmt.Errorf("%w at %s: use `brainstem login` in a browser on this computer", ErrNoDeviceFlow, d.Server.Issuer)
	}
	if err := checkEndpoint("device_authorization_endpoint", ep); err != nil {
		return nil, err
	}
	name := cmp.Or(c.ClientName, DefaultDeviceClientName)
	reg, err := register(ctx, hc, d.Server.RegistrationEndpoint, map[string]any{
		"client_name": name, "grant_types": []string{GrantTypeDevice, "refresh_token"},
		"token_endpoint_auth_method": "none",
	})
	if err != nil {
		return nil, err
	}
	form := url.Values{"client_id": {reg.ClientID}, "resource": {mcpURL}}
	if d.Scope != "" {
		form.Set("scope", d.Scope)
	}
	da, err := RequestDeviceAuthorization(ctx, hc, ep, form)
	if err != nil {
		return nil, err
	}
	out := c.out()
	fmt.Fprintf(out, "Signing in to %s with %s.\n", mcpURL, d.Server.Issuer)
	fmt.Fprintf(out, "On any computer or phone, open\n\n  %s\n\nand type the code\n\n  %s\n\n", da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(out, "(or open %s, which fills the code in).\n", da.VerificationURIComplete)
	}
	fmt.Fprintf(out, "The page shows the computer asking as %q: approve only that.\n", DeviceUserAgent())
	wait := min(time.Duration(da.ExpiresIn)*time.Second, MaxDeviceWait)
	fmt.Fprintf(out, "Waiting up to %s for the approval…\n", wait.Round(time.Second))
	tr, err := c.pollDevice(ctx, hc, d.Server.TokenEndpoint, da, reg.ClientID, mcpURL, wait)
	if err != nil {
		return nil, err
	}
	return c.save(d, reg.ClientID, tr, c.now())
}

// DefaultDeviceClientName is the name `brainstem login --device` registers.
const DefaultDeviceClientName = "Brainstem CLI (brainstem login --device)"

// pollDevice polls the token endpoint every interval (at least 5 s, RFC
// 8628 §3.2's default), adding 5 s at each slow_down, until the tokens,
// a refusal, or wait has passed.
func (c *Client) pollDevice(ctx context.Context, hc *http.Client, tokenEndpoint string, da *DeviceAuthorization, clientID, mcpURL string, wait time.Duration) (*TokenResponse, error) {
	interval := 5 * time.Second
	if da.Interval > 0 {
		interval = min(time.Duration(da.Interval)*time.Second, maxDeviceInterval)
	}
	deadline := c.now().Add(wait)
	form := url.Values{"grant_type": {GrantTypeDevice}, "device_code": {da.DeviceCode}, "client_id": {clientID}, "resource": {mcpURL}}
	for {
		if err := c.sleep(ctx, interval); err != nil {
			return nil, err
		}
		tr, err := requestToken(ctx, hc, tokenEndpoint, form)
		if err == nil {
			return tr, nil
		}
		var oe *OAuthError
		if !errors.As(err, &oe) {
			return nil, err
		}
		switch oe.Code {
		case "authorization_pending":
		case "slow_down":
			interval = min(interval+5*time.Second, maxDeviceInterval)
		case "access_denied":
			return nil, fmt.Errorf("%w: %w", ErrDeviceDenied, err)
		case "expired_token":
			return nil, fmt.Errorf("%w: run `brainstem login --device %s` again: %w", ErrDeviceExpired, mcpURL, err)
		default:
			return nil, err
		}
		if !c.now().Before(deadline) {
			return nil, fmt.Errorf("%w: nobody approved it within %s; run `brainstem login --device %s` again", ErrDeviceExpired, wait.Round(time.Second), mcpURL)
		}
	}
}
