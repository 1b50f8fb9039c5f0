package oauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
	"github.com/brainstem/brainstem/internal/loopback"
)

// registeredPrefix starts every client id the facade signs at registration.
const registeredPrefix = "bsc1."

// grantTypes are the grant types a client may use, as the registration
// answer lists them.
func grantTypes(c *Client) []string {
	var g []string
	if !c.NoCodeFlow {
		g = append(g, "authorization_code")
	}
	g = append(g, "refresh_token")
	if c.Device {
		g = append(g, clients.GrantTypeDevice)
	}
	return g
}

// clientClaims is the signed payload of a registered client id.
type clientClaims struct {
	Name         string   `json:"n,omitempty"`
	RedirectURIs []string `json:"r"`
	IssuedAt     int64    `json:"t"`
	Nonce        string   `json:"j"` // makes every registration's id distinct
	// Device: the client registered the device grant; DeviceOnly: and not
	// the authorization code grant (it then has no redirect URIs).
	Device     bool `json:"d,omitempty"`
	DeviceOnly bool `json:"do,omitempty"`
}

// ErrClientID reports a client id that is neither validly signed by this
// gateway nor a usable metadata document URL.
var ErrClientID = errors.New("oauth: unknown client")

// registrationRequest is the subset of RFC 7591 client metadata the facade
// reads; other members are ignored (RFC 7591 §2).
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// errorAnswer is an OAuth error answer: the token endpoint's (RFC 6749
// §5.2) and the registration endpoint's (RFC 7591 §3.2.2).
type errorAnswer struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *errorAnswer) Error() string { return e.Code + ": " + e.Description }

// register validates a registration request and returns the client with
// its signed id.
func (s *Server) register(body []byte, now time.Time) (*clients.Client, *errorAnswer) {
	var req registrationRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return nil, &errorAnswer{"invalid_client_metadata", "the body is not a JSON object of client metadata: " + err.Error()}
	}
	if dec.More() {
		return nil, &errorAnswer{"invalid_client_metadata", "the body holds more than one JSON value"}
	}
	// token_endpoint_auth_method: every client is public. RFC 7591 §3.2.1
	// lets the server replace a requested value; the answer says "none".
	device, codeFlow := false, len(req.GrantTypes) == 0
	for _, g := range req.GrantTypes {
		switch g {
		case "authorization_code":
			codeFlow = true
		case "refresh_token":
		case clients.GrantTypeDevice:
			device = true
		default:
			return nil, &errorAnswer{"invalid_client_metadata", fmt.Sprintf("grant type %.40q is not supported (authorization_code, refresh_token and %s are)", g, clients.GrantTypeDevice)}
		}
	}
	if !codeFlow && !device {
		return nil, &errorAnswer{"invalid_client_metadata", "grant_types names neither authorization_code nor " + clients.GrantTypeDevice}
	}
	for _, rt := range req.ResponseTypes {
		if rt != "code" {
			return nil, &errorAnswer{"invalid_client_metadata", fmt.Sprintf("response type %.40q is not supported (code is)", rt)}
		}
	}
	name, err := clients.CleanName(req.ClientName)
	if err != nil {
		return nil, &errorAnswer{"invalid_client_metadata", err.Error()}
	}
	if !codeFlow && len(req.RedirectURIs) > 0 {
		return nil, &errorAnswer{"invalid_redirect_uri", "redirect_uris are for the authorization_code grant, which grant_types does not name"}
	}
	if codeFlow && len(req.RedirectURIs) == 0 {
		return nil, &errorAnswer{"invalid_redirect_uri", "redirect_uris is required: at least one redirect URI"}
	}
	if len(req.RedirectURIs) > clients.MaxRedirectURIs {
		return nil, &errorAnswer{"invalid_redirect_uri", fmt.Sprintf("%d redirect URIs; the limit is %d", len(req.RedirectURIs), clients.MaxRedirectURIs)}
	}
	for _, r := range req.RedirectURIs {
		if err := s.checkRedirectURI(r); err != nil {
			return nil, &errorAnswer{"invalid_redirect_uri", err.Error()}
		}
	}
	c := clientClaims{Name: name, RedirectURIs: req.RedirectURIs, IssuedAt: now.Unix(), Nonce: RandomString(6),
		Device: device, DeviceOnly: !codeFlow}
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, &errorAnswer{"invalid_client_metadata", err.Error()}
	}
	enc := registeredPrefix + base64.RawURLEncoding.EncodeToString(payload)
	id := enc + "." + base64.RawURLEncoding.EncodeToString(s.keys.MAC([]byte(enc)))
	if len(id) > clients.MaxClientIDBytes {
		return nil, &errorAnswer{"invalid_client_metadata", fmt.Sprintf("the client metadata is too large (its id would be %d bytes; the limit is %d): register fewer or shorter redirect URIs", len(id), clients.MaxClientIDBytes)}
	}
	return &clients.Client{ID: id, Name: name, RedirectURIs: req.RedirectURIs, Dynamic: true, Device: device, NoCodeFlow: !codeFlow}, nil
}

// parseRegisteredClient checks the signature of a registered client id and
// returns the client it describes.
func (s *Server) parseRegisteredClient(id string) (*clients.Client, error) {
	if len(id) > clients.MaxClientIDBytes || !strings.HasPrefix(id, registeredPrefix) {
		return nil, ErrClientID
	}
	// The prefix holds a dot: split after it.
	enc, sum, ok := strings.Cut(id[len(registeredPrefix):], ".")
	if !ok {
		return nil, ErrClientID
	}
	enc = registeredPrefix + enc
	mac, err := base64.RawURLEncoding.DecodeString(sum)
	if err != nil || !s.keys.VerifyMAC([]byte(enc), mac) {
		return nil, ErrClientID
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc[len(registeredPrefix):])
	if err != nil {
		return nil, ErrClientID
	}
	var c clientClaims
	if err := json.Unmarshal(payload, &c); err != nil || len(c.RedirectURIs) == 0 && !c.DeviceOnly || c.DeviceOnly && (!c.Device || len(c.RedirectURIs) > 0) {
		return nil, ErrClientID
	}
	return &clients.Client{ID: id, Name: c.Name, RedirectURIs: c.RedirectURIs, Dynamic: true, Device: c.Device, NoCodeFlow: c.DeviceOnly}, nil
}

// checkRedirectURI says whether a client may register a redirect URI: a
// loopback http URI (any port, RFC 8252 §7.3), one of the operator's
// redirect_uris exactly, or a URI with one of the operator's private-use
// schemes.
func (s *Server) checkRedirectURI(raw string) error {
	if len(raw) > clients.MaxRedirectURIBytes {
		return fmt.Errorf("redirect URI of %d bytes; the limit is %d", len(raw), clients.MaxRedirectURIBytes)
	}
	if !plainURI(raw) {
		return fmt.Errorf("redirect URI %.80q holds spaces, control or non-ASCII characters", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("redirect URI %.80q is not an absolute URI", raw)
	}
	if unescaped, err := url.PathUnescape(u.EscapedPath() + "?" + u.RawQuery); err != nil || !plainURI(strings.ReplaceAll(unescaped, " ", "")) {
		return fmt.Errorf("redirect URI %.80q encodes control or non-ASCII characters", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("redirect URI %.80q must not have a fragment", raw)
	}
	if u.User != nil {
		return fmt.Errorf("redirect URI %.80q must not carry user info", raw)
	}
	switch {
	case u.Scheme == "http" && loopback.Is(u.Hostname()):
		return nil
	case slices.Contains(s.cfg.RedirectURIs, raw):
		return nil
	case slices.Contains(s.cfg.RedirectSchemes, u.Scheme):
		return nil
	case u.Scheme == "http" || u.Scheme == "https":
		return fmt.Errorf("redirect URI %.80q is not allowed: use a loopback http://127.0.0.1:<port>/... URI, or ask the operator to add it to oauth.redirect_uris", raw)
	}
	return fmt.Errorf("redirect URI scheme %.20q is not allowed: ask the operator to add it to oauth.redirect_schemes", u.Scheme)
}

// plainURI reports whether s holds only printable ASCII without spaces.
func plainURI(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r > 0x7e })
}

// redirectAllowed reports whether the redirect URI of an authorization
// request matches one the client registered: exactly, or, for loopback http
// URIs, in everything but the port (RFC 8252 §7.3: native apps pick a free
// port at each sign-in).
func redirectAllowed(c *clients.Client, uri string) bool {
	if slices.Contains(c.RedirectURIs, uri) {
		return true
	}
	if !plainURI(uri) || strings.Contains(uri, "#") {
		return false
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || !loopback.Is(u.Hostname()) {
		return false
	}
	for _, r := range c.RedirectURIs {
		ru, err := url.Parse(r)
		if err != nil || ru.Scheme != "http" || !loopback.Is(ru.Hostname()) {
			continue
		}
		if strings.EqualFold(ru.Hostname(), u.Hostname()) && ru.EscapedPath() == u.EscapedPath() && ru.RawQuery == u.RawQuery && u.User == nil && u.Fragment == "" {
			return true
		}
	}
	return false
}

// consentKey identifies what a consent covers: the client and its redirect
// target, loopback ports aside.
func consentKey(clientID, redirect string) string {
	if u, err := url.Parse(redirect); err == nil && u.Scheme == "http" && loopback.Is(u.Hostname()) {
		u.Host = u.Hostname()
		redirect = u.String()
	}
	return keyring.Digest("consent", clientID, redirect)
}
