package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
	"github.com/brainstem/brainstem/gateway/oauth/upstream"
)

// The configuration's types, defined in gateway/oauth/config.
type (
	Config               = config.Config
	UpstreamConfig       = config.UpstreamConfig
	ClientMetadataConfig = config.ClientMetadataConfig
	ServiceAccount       = config.ServiceAccount
	Credential           = config.Credential
	EnterpriseConfig     = config.EnterpriseConfig
	EnterpriseIdP        = config.EnterpriseIdP
)

// Client is a client the facade knows (gateway/oauth/clients).
type Client = clients.Client

// GrantTypeDevice is the device authorization grant type (RFC 8628),
// which a client registers (or its metadata document lists) to use the
// device flow (gateway/oauth/device).
const GrantTypeDevice = clients.GrantTypeDevice

// Scope is the one scope the facade grants: use of the MCP endpoint.
const Scope = "mcp"

// Paths below the issuer's path.
const (
	PathAuthorize = "/authorize"
	PathCallback  = "/oauth/callback"
	PathToken     = "/token"
	PathRegister  = "/register"
	PathRevoke    = "/revoke"
	PathJWKS      = "/jwks"
)

// Bounds of the per-replica memories (codes redeemed, refresh tokens used,
// revocations, verified access tokens, per-address limiters).
const (
	memorySize       = 100000
	graceMemorySize  = 10000
	accessCacheTTL   = 5 * time.Minute
	registerPerMin   = 20
	metadataPerMin   = 30
	MaxFormBytes     = 64 << 10 // bounds a form body
	limiterCacheSize = 10000
)

// IdentityVerifier verifies the IdP's ID tokens with the gateway's SSO
// rules (issuer, audience, signature, expiry, verified email or trusted
// issuer, allowed domains, groups claim). *sso.Verifier satisfies it.
type IdentityVerifier interface {
	Verify(ctx context.Context, raw string) (auth.Identity, error)
}

// Options are the server's dependencies.
type Options struct {
	// Issuer is the gateway's public URL, the issuer of its tokens.
	Issuer string
	// Resource is the MCP endpoint URL: the audience of access tokens and
	// the only accepted RFC 8707 resource.
	Resource string
	// Verifier checks the IdP's ID tokens.
	Verifier IdentityVerifier
	// Keys, when set, are used instead of the configured key files (the
	// first signs); for the development environment and tests.
	Keys []auth.KeyPair
	// HTTPClient calls the IdP; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives sign-in events; nil discards.
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// ClientIP returns the address limits are counted against; nil means
	// the TCP peer.
	ClientIP func(*http.Request) string
	// Ended, when set, is the sign-ins an operator ended (offboarding):
	// access tokens (console cookies hold one) and refresh tokens of those
	// people issued before their not_before are refused.
	Ended *offboard.List
}

// Server is the authorization server. It is safe for concurrent use.
type Server struct {
	cfg      Config
	issuer   string // no trailing slash
	base     string // the issuer's path, "" or "/prefix"
	resource string
	secure   bool // https: cookies are Secure and __Host- prefixed
	keys     *keyring.Ring
	signer   jose.Signer
	up       *upstream.IdP
	verifier IdentityVerifier
	meta     *clients.Fetcher
	now      func() time.Time
	log      *slog.Logger
	clientIP func(*http.Request) string

	usedCodes     *lru.Cache[string, time.Time]   // code id → until when it could be replayed
	usedRefresh   *lru.Cache[string, refreshUse]  // refresh token id → its first use
	graceAnswers  *lru.Cache[string, graceAnswer] // refresh token id → the answer within the grace
	refreshFlight singleflight.Group
	revoked       *lru.Cache[string, time.Time]     // access token id or refresh family → until
	verified      *lru.Cache[[32]byte, accessEntry] // access tokens verified recently
	limits        *lru.Cache[string, *rate.Limiter]
	handlers      *http.ServeMux             // this server's endpoints, for requests passed by a peer
	ended         *offboard.List             // never nil; empty without offboarding
	signins       *lru.Cache[string, SignIn] // sign-ins seen by this replica, by family

	grants   map[string]Grant // the grants added beside the core's (grant.go), by grant type
	order    []Grant          // in the order they were added
	finisher LoginFinisher    // the grant whose logins end at the callback; nil without
	services ServiceVerifier  // the grant of service accounts; nil without

	requests     *prometheus.CounterVec
	metadataJSON []byte
}

// New builds the server from an enabled, valid configuration. It reads the
// key files and the client secret, and makes no network call: the IdP is
// discovered on the first sign-in.
func New(ctx context.Context, cfg Config, opt Options) (*Server, error) {
	if err := cfg.Validate(opt.Issuer); err != nil {
		return nil, err
	}
	if !cfg.Enabled {
		return nil, errors.New("oauth: not enabled")
	}
	if opt.Verifier == nil {
		return nil, errors.New("oauth: no identity verifier")
	}
	cfg = cfg.WithDefaults()
	u, err := url.Parse(strings.TrimRight(opt.Issuer, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oauth: issuer %q is not a URL", opt.Issuer)
	}
	s := &Server{
		cfg: cfg, issuer: strings.TrimRight(opt.Issuer, "/"), base: u.Path, resource: opt.Resource,
		secure: u.Scheme == "https", verifier: opt.Verifier, now: opt.Now, log: opt.Logger, clientIP: opt.ClientIP,
		ended: cmp.Or(opt.Ended, offboard.NewList()),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.log = cmp.Or(s.log, slog.New(slog.DiscardHandler))
	if s.clientIP == nil {
		s.clientIP = RemoteIP
	}
	direct := s.clientIP
	s.clientIP = func(r *http.Request) string {
		if ip, ok := ForwardedIP(r); ok { // passed by a peer: its client's
			return ip
		}
		return direct(r)
	}
	if err := s.loadKeys(opt); err != nil {
		return nil, err
	}
	secret, err := upstreamSecret(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	hc := cmp.Or(opt.HTTPClient, &http.Client{Timeout: upstream.Timeout})
	s.up = &upstream.IdP{Config: cfg.Upstream, Secret: secret, RedirectURL: s.issuer + PathCallback,
		HTTP: hc, Now: s.now, Log: s.log, Lifetime: ctx}
	if !cfg.ClientMetadata.Disabled {
		s.meta = clients.NewFetcher(cfg.ClientMetadata, s.now)
	}
	if err := s.newMemory(opt.Registerer); err != nil {
		return nil, err
	}
	s.grants = map[string]Grant{}
	s.handlers = http.NewServeMux()
	s.Register(s.handlers)
	if err := s.marshalMetadata(); err != nil {
		return nil, err
	}
	return s, nil
}

// loadKeys loads the signing keys (opt.Keys, else the key files) and
// builds the access-token signer on the current one.
func (s *Server) loadKeys(opt Options) error {
	var err error
	if len(opt.Keys) > 0 {
		s.keys, err = keyring.New(opt.Keys...)
	} else {
		s.keys, err = keyring.Load(s.cfg.SigningKeyFile, s.cfg.PreviousSigningKeyFiles)
	}
	if err != nil {
		return err
	}
	cur := s.keys.Current()
	s.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: cur.Priv}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", cur.ID))
	if err != nil {
		return fmt.Errorf("oauth: signer: %w", err)
	}
	return nil
}

// upstreamSecret is the client secret at the IdP: given, or read from its
// file.
func upstreamSecret(up UpstreamConfig) (string, error) {
	if up.ClientSecret != "" {
		return up.ClientSecret, nil
	}
	b, err := keyring.ReadSmallFile(up.ClientSecretFile)
	if err != nil {
		return "", fmt.Errorf("oauth: upstream.client_secret_file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("oauth: upstream.client_secret_file %s is empty", up.ClientSecretFile)
	}
	return secret, nil
}

// newMemory builds what the server remembers (used codes and refresh
// tokens, grace answers, revocations, verified tokens, rate limiters) and
// its request counter, registered with reg when given.
func (s *Server) newMemory(reg prometheus.Registerer) error {
	s.usedCodes, _ = lru.New[string, time.Time](memorySize)
	s.usedRefresh, _ = lru.New[string, refreshUse](memorySize)
	s.graceAnswers, _ = lru.New[string, graceAnswer](graceMemorySize)
	s.revoked, _ = lru.New[string, time.Time](memorySize)
	s.verified, _ = lru.New[[32]byte, accessEntry](memorySize)
	s.limits, _ = lru.New[string, *rate.Limiter](limiterCacheSize)
	s.signins, _ = lru.New[string, SignIn](memorySize)
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "brainstem_gateway_oauth_requests_total",
		Help: "Requests to the gateway's authorization server, by endpoint and outcome (ok, refused, unavailable, error)."}, []string{"endpoint", "outcome"})
	if reg != nil {
		if err := reg.Register(s.requests); err != nil {
			return fmt.Errorf("oauth: metrics: %w", err)
		}
	}
	return nil
}

// Issuer is the issuer URL (the gateway's public URL).
func (s *Server) Issuer() string { return s.issuer }

// Scopes are the scopes the server grants.
func (s *Server) Scopes() []string { return []string{Scope} }

// metadata is the RFC 8414 document, with what each grant adds
// (Grant.Advertise).
func (s *Server) metadata() map[string]any {
	m := map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.issuer + PathAuthorize,
		"token_endpoint":                                 s.issuer + PathToken,
		"registration_endpoint":                          s.issuer + PathRegister,
		"revocation_endpoint":                            s.issuer + PathRevoke,
		"jwks_uri":                                       s.issuer + PathJWKS,
		"scopes_supported":                               []string{Scope},
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"client_id_metadata_document_supported":          s.meta != nil,
		"authorization_response_iss_parameter_supported": true,
	}
	grants := []string{"authorization_code", "refresh_token"}
	for _, g := range s.order {
		if g.Advertise(m) {
			grants = append(grants, g.GrantType())
		}
	}
	m["grant_types_supported"] = grants
	return m
}

func (s *Server) marshalMetadata() error {
	b, err := json.Marshal(s.metadata())
	if err != nil {
		return fmt.Errorf("oauth: metadata: %w", err)
	}
	s.metadataJSON = b
	return nil
}

// Register adds the server's endpoints to mux: the metadata at the RFC 8414
// and OIDC discovery paths for the issuer, and the endpoints below the
// issuer's path, the grants' included.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/oauth-authorization-server"+s.base, s.serveMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration"+s.base, s.serveMetadata)
	if s.base != "" {
		mux.HandleFunc("GET "+s.base+"/.well-known/openid-configuration", s.serveMetadata)
	}
	mux.HandleFunc("GET "+s.base+PathJWKS, s.serveJWKS)
	mux.HandleFunc("GET "+s.base+PathAuthorize, s.serveAuthorize)
	mux.HandleFunc("POST "+s.base+PathAuthorize, s.serveConsent)
	mux.HandleFunc("GET "+s.base+PathCallback, s.serveCallback)
	for path, h := range map[string]http.HandlerFunc{PathToken: s.serveToken, PathRegister: s.serveRegister, PathRevoke: s.serveRevoke} {
		HandleCORS(mux, s.base+path, h)
	}
	for _, g := range s.order {
		g.Register(mux)
	}
}

func (s *Server) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	writePublic(w, s.metadataJSON)
}

func (s *Server) serveJWKS(w http.ResponseWriter, _ *http.Request) { writePublic(w, s.keys.JWKS) }

// writePublic answers a public JSON document any origin may read and cache.
func writePublic(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(body)
}

// HandleCORS serves h at POST path, callable by browser-based clients
// from any origin (with its OPTIONS preflight): the token, registration,
// revocation and device authorization endpoints use no cookies.
func HandleCORS(mux *http.ServeMux, path string, h http.HandlerFunc) {
	mux.HandleFunc("POST "+path, withCORS(h))
	mux.HandleFunc("OPTIONS "+path, withCORS(nil))
}

func withCORS(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if h == nil {
			w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h(w, r)
	}
}

// allow takes one token from the per-address bucket of kind.
func (s *Server) Allow(r *http.Request, kind string, perMinute int) bool {
	key := kind + " " + s.clientIP(r)
	l, ok := s.limits.Get(key)
	if !ok {
		l = rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)
		if prev, found, _ := s.limits.PeekOrAdd(key, l); found {
			l = prev
		}
	}
	return l.AllowN(s.now(), 1)
}

func (s *Server) Count(endpoint, outcome string) {
	s.requests.WithLabelValues(endpoint, outcome).Inc()
}

func RemoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
