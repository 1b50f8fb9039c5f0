package signin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/loopback"
)

// Limits of what the servers answer.
const (
	// MaxMetadataBytes bounds a metadata document.
	MaxMetadataBytes = 64 << 10
	// MaxResponseBytes bounds a registration or token endpoint answer.
	MaxResponseBytes = 64 << 10
)

// Errors of discovery. Each is wrapped with the detail; errors.Is finds it.
var (
	// ErrTooLarge: an answer exceeds its limit.
	ErrTooLarge = errors.New("signin: answer too large")
	// ErrNoMetadata: the URL serves no protected-resource metadata.
	ErrNoMetadata = errors.New("signin: no protected-resource metadata")
	// ErrResourceMismatch: the metadata describes another resource than
	// the URL used (the gateway's public_url is not the URL clients use).
	ErrResourceMismatch = errors.New("signin: the metadata describes another resource")
	// ErrServerMetadata: the authorization server's metadata is missing or
	// unusable.
	ErrServerMetadata = errors.New("signin: unusable authorization server metadata")
	// ErrIssuerMismatch: the authorization server's metadata names another
	// issuer than the one it was fetched for.
	ErrIssuerMismatch = errors.New("signin: the authorization server metadata names another issuer")
	// ErrNoS256: the authorization server does not advertise PKCE S256.
	ErrNoS256 = errors.New("signin: the authorization server does not support PKCE S256")
	// ErrNoRegistration: the authorization server offers no dynamic
	// registration (a company IdP named directly, without the gateway's
	// sign-in facade).
	ErrNoRegistration = errors.New("signin: the authorization server offers no dynamic client registration")
	// ErrInsecureEndpoint: an endpoint is plain http on a non-loopback host.
	ErrInsecureEndpoint = errors.New("signin: endpoint is not https")
)

// ResourceMetadata is an RFC 9728 protected-resource metadata document.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

// ServerMetadata is an RFC 8414 authorization server metadata document.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	DeviceAuthorizationEndpoint       string   `json:"device_authorization_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

// ProtectedResourceMetadataURL is the RFC 9728 §3.1 well-known URL of the
// metadata of mcpURL: the suffix goes between the host and the path.
func ProtectedResourceMetadataURL(mcpURL string) (string, error) {
	u, err := url.Parse(mcpURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("signin: %q is not an absolute URL", mcpURL)
	}
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// ChallengeAnswer is what the MCP endpoint answers a request without a token.
type ChallengeAnswer struct {
	Status int
	// Bearer is the Bearer challenge, when the answer carries one.
	Bearer *Challenge
	// ResourceMetadata is the challenge's resource_metadata parameter.
	ResourceMetadata string
	// Scope is the challenge's scope parameter.
	Scope string
	// Date is the answer's Date header (zero when absent); Sent and
	// Received are the local clock around the request.
	Date, Sent, Received time.Time
}

// FetchChallenge sends an MCP request without a token to mcpURL, as a client's
// first request, and reads the 401 challenge. now is the local clock.
func FetchChallenge(ctx context.Context, hc *http.Client, mcpURL string, now func() time.Time) (*ChallengeAnswer, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"brainstem","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("signin: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	a := &ChallengeAnswer{Sent: now()}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("signin: cannot reach %s: %w", mcpURL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	a.Received = now()
	a.Status = resp.StatusCode
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		a.Date = d
	}
	if vals := resp.Header.Values("WWW-Authenticate"); len(vals) > 0 {
		cs, err := ParseChallenges(vals...)
		if err != nil {
			return a, err
		}
		if b, ok := Bearer(cs); ok {
			a.Bearer = &b
			a.ResourceMetadata = b.Params["resource_metadata"]
			a.Scope = b.Params["scope"]
		}
	}
	return a, nil
}

// FetchResourceMetadata fetches the protected-resource metadata at metaURL
// and checks that it describes mcpURL exactly (RFC 9728 §3.3).
func FetchResourceMetadata(ctx context.Context, hc *http.Client, metaURL, mcpURL string) (*ResourceMetadata, error) {
	if err := checkEndpoint("resource_metadata", metaURL); err != nil {
		return nil, err
	}
	var m ResourceMetadata
	status, err := getJSON(ctx, hc, metaURL, &m)
	if err != nil {
		if status == http.StatusNotFound || errors.Is(err, errNotJSON) {
			return nil, fmt.Errorf("%w at %s: %v", ErrNoMetadata, metaURL, err)
		}
		return nil, err
	}
	if m.Resource != mcpURL {
		return &m, fmt.Errorf("%w: %s describes %q, not %q", ErrResourceMismatch, metaURL, m.Resource, mcpURL)
	}
	if len(m.AuthorizationServers) == 0 {
		return &m, fmt.Errorf("%w: %s names no authorization server", ErrNoMetadata, metaURL)
	}
	return &m, nil
}

// ServerMetadataURLs are the places RFC 8414 §3.1 and OpenID Connect
// Discovery put an issuer's metadata, in the order MCP clients try them.
func ServerMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: issuer %q is not an absolute URL", ErrServerMetadata, issuer)
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimRight(u.EscapedPath(), "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}, nil
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}, nil
}

// FetchServerMetadata fetches the metadata of the authorization server
// issuer and checks that it names that issuer exactly (RFC 8414 §3.3) and
// that its endpoints are https (or loopback http).
func FetchServerMetadata(ctx context.Context, hc *http.Client, issuer string) (*ServerMetadata, error) {
	if err := checkEndpoint("issuer", issuer); err != nil {
		return nil, err
	}
	urls, err := ServerMetadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	var tried []string
	for _, mu := range urls {
		var m ServerMetadata
		status, err := getJSON(ctx, hc, mu, &m)
		if err != nil {
			if status >= 400 && status < 500 || errors.Is(err, errNotJSON) {
				tried = append(tried, fmt.Sprintf("%s (%v)", mu, err))
				continue
			}
			return nil, err
		}
		if m.Issuer != issuer {
			return &m, fmt.Errorf("%w: %s names %q, not %q", ErrIssuerMismatch, mu, m.Issuer, issuer)
		}
		for _, ep := range []struct{ name, v string }{
			{"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint},
		} {
			if ep.v == "" {
				return &m, fmt.Errorf("%w: %s has no %s", ErrServerMetadata, mu, ep.name)
			}
		}
		for _, ep := range []struct{ name, v string }{
			{"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint},
			{"registration_endpoint", m.RegistrationEndpoint}, {"revocation_endpoint", m.RevocationEndpoint},
			{"device_authorization_endpoint", m.DeviceAuthorizationEndpoint},
		} {
			if ep.v == "" {
				continue
			}
			if err := checkEndpoint(ep.name, ep.v); err != nil {
				return &m, err
			}
		}
		return &m, nil
	}
	return nil, fmt.Errorf("%w: none found for %s: tried %s", ErrServerMetadata, issuer, strings.Join(tried, "; "))
}

// CheckClientSupport checks what this client needs of the authorization
// server: the code flow with PKCE S256 and dynamic registration of a public
// client.
func (m *ServerMetadata) CheckClientSupport() error {
	if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("%w (code_challenge_methods_supported is %v)", ErrNoS256, m.CodeChallengeMethodsSupported)
	}
	if m.RegistrationEndpoint == "" {
		return fmt.Errorf("%w at %s", ErrNoRegistration, m.Issuer)
	}
	if len(m.ResponseTypesSupported) > 0 && !slices.Contains(m.ResponseTypesSupported, "code") {
		return fmt.Errorf("%w: response type code is not supported (%v)", ErrServerMetadata, m.ResponseTypesSupported)
	}
	if len(m.TokenEndpointAuthMethodsSupported) > 0 && !slices.Contains(m.TokenEndpointAuthMethodsSupported, "none") {
		return fmt.Errorf("%w: public clients (token_endpoint_auth_method none) are not supported (%v)", ErrServerMetadata, m.TokenEndpointAuthMethodsSupported)
	}
	return nil
}

// Discovery is what a client learns before it signs in.
type Discovery struct {
	MCPURL              string
	ResourceMetadataURL string
	Resource            *ResourceMetadata
	Server              *ServerMetadata
	// Scope is what to ask for: the challenge's scope, else the scopes
	// the resource supports.
	Scope string
}

// Discover walks what an MCP client does before signing in: the 401
// challenge of mcpURL (its resource_metadata, else the well-known URL),
// the protected-resource metadata (resource must equal mcpURL), then the
// authorization server's metadata (issuer exact, S256, registration).
func Discover(ctx context.Context, hc *http.Client, mcpURL string) (*Discovery, error) {
	d := &Discovery{MCPURL: mcpURL}
	ch, err := FetchChallenge(ctx, hc, mcpURL, time.Now)
	if err != nil && !errors.Is(err, ErrChallenge) {
		return nil, err
	}
	// A resource_metadata on another origin is ignored, as MCP clients do
	// (RFC 9728 §7.3 leaves it to the client): the well-known URL is used.
	if ch != nil && ch.ResourceMetadata != "" && sameOrigin(ch.ResourceMetadata, mcpURL) {
		d.ResourceMetadataURL, d.Scope = ch.ResourceMetadata, ch.Scope
	} else if d.ResourceMetadataURL, err = ProtectedResourceMetadataURL(mcpURL); err != nil {
		return nil, err
	}
	d.Resource, err = FetchResourceMetadata(ctx, hc, d.ResourceMetadataURL, mcpURL)
	if err != nil {
		return nil, err
	}
	d.Scope = cmp.Or(d.Scope, strings.Join(d.Resource.ScopesSupported, " "))
	// The first authorization server a client can register with.
	var errs []error
	for _, as := range d.Resource.AuthorizationServers {
		m, err := FetchServerMetadata(ctx, hc, as)
		if err == nil {
			err = m.CheckClientSupport()
		}
		if err == nil {
			d.Server = m
			return d, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// errNotJSON: the answer is not a JSON object.
var errNotJSON = errors.New("not a JSON document")

// getJSON GETs u and decodes a JSON object of at most MaxMetadataBytes.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("signin: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("signin: cannot reach %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body, MaxMetadataBytes)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("signin: reading %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.StatusCode, fmt.Errorf("%w: %s: %v", errNotJSON, u, err)
	}
	return resp.StatusCode, nil
}

// readLimited reads at most limit bytes, failing with ErrTooLarge beyond.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit)
	}
	return bytes.TrimSpace(b), nil
}

// checkEndpoint accepts an absolute https URL, or http on a loopback host
// (a gateway run by `brainstem dev`), without user info or fragment.
func checkEndpoint(name, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%w: %s %q is not an absolute http(s) URL", ErrServerMetadata, name, raw)
	}
	if u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%w: %s %q carries user info or a fragment", ErrServerMetadata, name, raw)
	}
	if u.Scheme == "http" && !loopback.Is(u.Hostname()) {
		return fmt.Errorf("%w: %s %q uses plain http on a host that is not this computer", ErrInsecureEndpoint, name, raw)
	}
	return nil
}

// sameOrigin reports whether two URLs share scheme and host (with port).
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}
