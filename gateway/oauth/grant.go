package oauth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Grant is a grant type the token endpoint offers beside the core's own
// (authorization_code and refresh_token): the device flow
// (gateway/oauth/device), machine identities (gateway/oauth/machine) and
// identity assertions (gateway/oauth/idjag). The grants import the core;
// the gateway adds them to its server (Server.Add).
type Grant interface {
	// GrantType is the grant_type of the token requests Redeem answers.
	GrantType() string
	// Redeem answers a token request of the grant type: the answer's body
	// or its error, and the endpoint the request metric counts it under;
	// endpoint "" when Redeem wrote the answer itself.
	Redeem(w http.ResponseWriter, r *http.Request, form url.Values) (body []byte, endpoint string, err *TokenError)
	// Advertise adds what the grant offers to the RFC 8414 metadata, and
	// reports whether grant_types_supported lists it (not while nothing is
	// configured for it).
	Advertise(metadata map[string]any) bool
	// Register adds the grant's own endpoints (below Server.Base) to mux.
	Register(mux *http.ServeMux)
}

// LoginFinisher is a grant whose browser sign-ins come back through the
// core's IdP callback (Login.Request set): the device flow's approvals,
// which have no client redirect to carry a code.
type LoginFinisher interface {
	FinishLogin(w http.ResponseWriter, r *http.Request, l Login)
}

// ServiceVerifier is the grant that issues access tokens to service
// accounts: Verify asks it of each such token.
type ServiceVerifier interface {
	VerifyService(c AccessClaims) error
}

// Add registers grants with the server, in the order
// grant_types_supported lists them. It is called before the server
// serves (it is not safe to call concurrently with requests).
func (s *Server) Add(grants ...Grant) error {
	for _, g := range grants {
		if _, dup := s.grants[g.GrantType()]; dup || g.GrantType() == "authorization_code" || g.GrantType() == "refresh_token" {
			return fmt.Errorf("oauth: the grant type %s is added twice", g.GrantType())
		}
		s.grants[g.GrantType()] = g
		s.order = append(s.order, g)
		g.Register(s.handlers)
		if f, ok := g.(LoginFinisher); ok {
			s.finisher = f
		}
		if v, ok := g.(ServiceVerifier); ok {
			s.services = v
		}
	}
	return s.marshalMetadata()
}

// Now is the server's clock.
func (s *Server) Now() time.Time { return s.now() }

// Log is the server's logger.
func (s *Server) Log() *slog.Logger { return s.log }

// Config is the server's configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Base is the issuer's path, "" or "/prefix": the endpoints are below it.
func (s *Server) Base() string { return s.base }

// Resource is the MCP endpoint URL, the audience of access tokens.
func (s *Server) Resource() string { return s.resource }

// HTTPClient is the client the server calls identity providers with.
func (s *Server) HTTPClient() *http.Client { return s.up.HTTP }

// ClientIP is the address limits count r against.
func (s *Server) ClientIP(r *http.Request) string { return s.clientIP(r) }

// Endpoints are the server's own endpoints, grants' included: what a
// request passed on by another replica is answered with.
func (s *Server) Endpoints() http.Handler { return s.handlers }

// Seal seals v for purpose under the current key (Open opens it).
func (s *Server) Seal(purpose string, v any) (string, error) { return s.keys.Seal(purpose, v) }

// Open opens a value sealed for purpose, at most limit bytes, into v.
func (s *Server) Open(purpose, sealed string, limit int, v any) error {
	return s.keys.Open(purpose, sealed, limit, v)
}

// DiscoverIdP discovers the IdP (once); a page whose form leads there is
// shown only after, as its CSP names the IdP's origin (IdPOrigin).
func (s *Server) DiscoverIdP(ctx context.Context) error {
	_, err := s.up.Discovered(ctx)
	return err
}

// IdPOrigin is the discovered IdP's origin, for a page's CSP.
func (s *Server) IdPOrigin() string { return s.up.Origin() }

// Exchange redeems the IdP's authorization code of a login.
func (s *Server) Exchange(ctx context.Context, code, verifier string) (*oauth2.Token, error) {
	return s.up.Exchange(ctx, code, verifier)
}

// forwardedKey marks a request passed on by another replica; its value is
// the original client's address.
type forwardedKey struct{}

// Forwarded marks ctx as a request passed on by another replica for a
// client at ip: limits count it against ip, and it is not passed on again.
func Forwarded(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, forwardedKey{}, ip)
}

// ForwardedIP is the original client's address of a request passed on by
// another replica.
func ForwardedIP(r *http.Request) (string, bool) {
	ip, ok := r.Context().Value(forwardedKey{}).(string)
	return ip, ok
}

// grantTypes lists the grant types the token endpoint accepts, for its
// unsupported_grant_type answer.
func (s *Server) grantTypes() string {
	names := []string{"authorization_code", "refresh_token"}
	for _, g := range s.order {
		names = append(names, g.GrantType())
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}
