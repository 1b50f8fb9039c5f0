package signin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxTokenBytes bounds an access or refresh token.
const MaxTokenBytes = 16 << 10

// OAuthError is an error answer of a registration, token or authorization
// endpoint (RFC 6749 §5.2, RFC 7591 §3.2.2).
type OAuthError struct {
	Endpoint    string // "registration", "token", "authorization"
	Status      int    // HTTP status; 0 for an authorization redirect
	Code        string // e.g. invalid_grant
	Description string
}

func (e *OAuthError) Error() string {
	s := fmt.Sprintf("signin: the %s endpoint refused", e.Endpoint)
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	if e.Code == "" && e.Description == "" && e.Status != 0 {
		s += fmt.Sprintf(" with HTTP %d", e.Status)
	}
	return s
}

// Registration is a client registered dynamically (RFC 7591).
type Registration struct {
	ClientID     string   `json:"client_id"`
	ClientName   string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
}

// Register registers a public client with loopback redirect URIs.
func Register(ctx context.Context, hc *http.Client, endpoint, name string, redirectURIs []string) (*Registration, error) {
	return register(ctx, hc, endpoint, map[string]any{
		"client_name":                name,
		"redirect_uris":              redirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

// register posts client metadata to the registration endpoint.
func register(ctx context.Context, hc *http.Client, endpoint string, meta map[string]any) (*Registration, error) {
	body, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("signin: %w", err)
	}
	var r Registration
	post := oauthPost{what: "registration", endpoint: endpoint, contentType: "application/json", body: string(body), created: true}
	if err := post.do(ctx, hc, &r); err != nil {
		return nil, err
	}
	if r.ClientID == "" || len(r.ClientID) > MaxTokenBytes || !headerSafe(r.ClientID) {
		return nil, errors.New("signin: the registration answer carries no usable client_id")
	}
	return &r, nil
}

// TokenResponse is a successful token endpoint answer (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// oauthPost is a POST to an endpoint of the authorization server, which
// answers JSON.
type oauthPost struct {
	what              string // the endpoint in errors: "token", "registration", …
	endpoint          string
	contentType, body string
	userAgent         string // "": Go's
	created           bool   // 201 Created is a success too
}

// formPost is a POST of an HTML form.
func formPost(what, endpoint string, form url.Values) oauthPost {
	return oauthPost{what: what, endpoint: endpoint, contentType: "application/x-www-form-urlencoded", body: form.Encode()}
}

// do sends the request and decodes the answer (at most MaxResponseBytes)
// into v. Another status than 200 (or 201 when created) is the server's
// *OAuthError.
func (p oauthPost) do(ctx context.Context, hc *http.Client, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, strings.NewReader(p.body))
	if err != nil {
		return fmt.Errorf("signin: %w", err)
	}
	req.Header.Set("Content-Type", p.contentType)
	req.Header.Set("Accept", "application/json")
	if p.userAgent != "" {
		req.Header.Set("User-Agent", p.userAgent)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("signin: cannot reach the %s endpoint %s: %w", p.what, p.endpoint, err)
	}
	defer resp.Body.Close()
	b, err := readLimited(resp.Body, MaxResponseBytes)
	if err != nil {
		return fmt.Errorf("signin: reading the %s answer: %w", p.what, err)
	}
	if resp.StatusCode != http.StatusOK && !(p.created && resp.StatusCode == http.StatusCreated) {
		return oauthError(p.what, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("signin: the %s answer is not JSON: %w", p.what, err)
	}
	return nil
}

// requestToken posts a token request and checks the answer.
func requestToken(ctx context.Context, hc *http.Client, endpoint string, form url.Values) (*TokenResponse, error) {
	var t TokenResponse
	if err := formPost("token", endpoint, form).do(ctx, hc, &t); err != nil {
		return nil, err
	}
	switch {
	case t.AccessToken == "" || len(t.AccessToken) > MaxTokenBytes || !headerSafe(t.AccessToken):
		return nil, errors.New("signin: the token answer carries no usable access_token")
	case !strings.EqualFold(t.TokenType, "Bearer"):
		return nil, fmt.Errorf("signin: the token answer's token_type is %.40q, not Bearer", t.TokenType)
	case t.ExpiresIn < 0:
		return nil, fmt.Errorf("signin: the token answer's expires_in is negative (%d)", t.ExpiresIn)
	case len(t.RefreshToken) > MaxTokenBytes || !headerSafe(t.RefreshToken):
		return nil, errors.New("signin: the token answer's refresh_token is unusable")
	}
	return &t, nil
}

// oauthError reads an OAuth error body; other bodies are summarised.
func oauthError(endpoint string, status int, body []byte) *OAuthError {
	e := &OAuthError{Endpoint: endpoint, Status: status}
	var v struct {
		Code        string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &v) == nil && v.Code != "" {
		e.Code, e.Description = clip(v.Code, 100), clip(v.Description, 500)
		return e
	}
	e.Description = fmt.Sprintf("HTTP %d %s", status, clip(strings.TrimSpace(string(body)), 200))
	return e
}

// clip shortens s to at most n bytes and drops control characters, so an
// answer cannot paint the terminal.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// headerSafe reports whether s can travel in an HTTP header: visible ASCII.
func headerSafe(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e })
}

// pkce is a PKCE S256 pair (RFC 7636).
type pkce struct{ verifier, challenge string }

func newPKCE() pkce {
	v := randomString(32) // 43 characters
	sum := sha256.Sum256([]byte(v))
	return pkce{verifier: v, challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// AuthorizationRequest is one authorization request's parameters.
type AuthorizationRequest struct {
	ClientID, RedirectURI, State, Challenge, Resource, Scope string
}

// URL renders the request on the authorization endpoint, keeping any query
// the endpoint already has.
func (a AuthorizationRequest) URL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("signin: authorization endpoint: %w", err)
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", a.ClientID)
	q.Set("redirect_uri", a.RedirectURI)
	q.Set("code_challenge", a.Challenge)
	q.Set("code_challenge_method", "S256")
	q.Set("state", a.State)
	q.Set("resource", a.Resource)
	if a.Scope != "" {
		q.Set("scope", a.Scope)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// NewAuthorizationRequest is a request with fresh state and PKCE challenge
// (the verifier is dropped: for probing an authorization endpoint only).
func NewAuthorizationRequest(clientID, redirectURI, resource, scope string) AuthorizationRequest {
	return AuthorizationRequest{ClientID: clientID, RedirectURI: redirectURI, State: randomString(16),
		Challenge: newPKCE().challenge, Resource: resource, Scope: scope}
}

// expiry is when a token answered at now with expiresIn seconds expires;
// zero when the answer did not say.
func expiry(now time.Time, expiresIn int64) time.Time {
	if expiresIn <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(expiresIn) * time.Second)
}
