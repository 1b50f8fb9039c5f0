package devidp

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/internal/loopback"
	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Defaults and limits.
const (
	// DefaultClientID is the audience of the provider's tokens.
	DefaultClientID = "brainstem"
	// DefaultAssertionClientID is Config.AssertionClientID's default.
	DefaultAssertionClientID = "brainstem-agent"
	// DefaultTokenTTL is the lifetime of ID and access tokens.
	DefaultTokenTTL = time.Hour
	// CodeTTL is how long an authorization code can be exchanged.
	CodeTTL = time.Minute
	// RefreshTTL is how long a refresh token stays usable.
	RefreshTTL = 24 * time.Hour
	// MaxPending bounds outstanding authorization codes and refresh tokens
	// (each; the oldest are forgotten first).
	MaxPending = 10000
	// MaxFormBytes bounds a form posted to /authorize or /token.
	MaxFormBytes = 64 << 10
	// MaxGroups bounds the groups typed into the login form or given to Mint.
	MaxGroups = 64
)

// Errors.
var (
	// ErrNotLoopback: the provider refuses to be reachable from other
	// machines, because it signs a token for any email typed into its form.
	ErrNotLoopback = errors.New("devidp: refusing a non-loopback address: the development IdP signs a token for any email typed into its form, so it must only be reachable from this machine")
	// ErrBadEmail reports an email the email rule (auth.CanonicalEmail)
	// refuses.
	ErrBadEmail = errors.New("devidp: not an email address")
)

// Config configures a Provider.
type Config struct {
	// Issuer is the exact base URL the provider is served at (the iss of
	// its tokens), e.g. "http://127.0.0.1:5556". Its host must be loopback.
	Issuer string
	// ClientID is the audience of its tokens and the only client it serves;
	// default "brainstem".
	ClientID string
	// ClientSecret, when set, makes the client confidential: the token
	// endpoint then requires it (client_secret_basic or client_secret_post),
	// as a company IdP does of the gateway's authorization server.
	ClientSecret string
	// TokenTTL is the lifetime of ID and access tokens; default 1h.
	TokenTTL time.Duration
	// AssertionClientID is the client_id the provider names in the ID-JAGs
	// its token exchange issues: the client's id at the authorization
	// server the ID-JAG is for (a company IdP keeps that mapping per
	// client); default DefaultAssertionClientID.
	AssertionClientID string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives the development warning and request errors; nil discards.
	Logger *slog.Logger
}

// Provider is a small, real OpenID Connect provider for development and
// tests: discovery, JWKS, an authorization endpoint with a login form that
// accepts any email, and a token endpoint (authorization_code with PKCE S256,
// refresh_token with rotation, and the token exchange of an ID token for an
// ID-JAG). It keeps everything in memory.
type Provider struct {
	cfg    Config
	base   string // issuer without a trailing slash
	path   string // the issuer's path, routes hang below it
	key    *rsa.PrivateKey
	kid    string
	signer jose.Signer
	log    *slog.Logger

	mu       sync.Mutex // makes look-up-and-delete of codes and refresh tokens atomic
	codes    *lru.Cache[string, authCode]
	refresh  *lru.Cache[string, grant]
	disabled map[string]bool // guarded by mu: accounts an administrator disabled
}

// grant is what an authorization code or refresh token stands for.
type grant struct {
	email   string
	groups  []string
	scope   string
	expires time.Time
}

type authCode struct {
	grant
	redirectURI string
	challenge   string
	nonce       string
}

// New generates an RSA-2048 signing key (RS256) and returns a provider for
// cfg. It logs a loud warning: this provider authenticates anyone.
func New(cfg Config) (*Provider, error) {
	cfg.ClientID = cmp.Or(cfg.ClientID, DefaultClientID)
	cfg.TokenTTL = cmp.Or(cfg.TokenTTL, DefaultTokenTTL)
	cfg.AssertionClientID = cmp.Or(cfg.AssertionClientID, DefaultAssertionClientID)
	if cfg.TokenTTL < 0 {
		return nil, fmt.Errorf("devidp: negative token ttl %v", cfg.TokenTTL)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	u, err := url.Parse(cfg.Issuer)
	if err != nil || cfg.Issuer == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("devidp: issuer %q must be an http(s)://host:port[/path] URL", cfg.Issuer)
	}
	if !loopback.Is(u.Hostname()) {
		return nil, fmt.Errorf("%w (issuer %s)", ErrNotLoopback, cfg.Issuer)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("devidp: generate key: %w", err)
	}
	der := key.PublicKey.N.Bytes()
	sum := sha256.Sum256(der)
	kid := base64.RawURLEncoding.EncodeToString(sum[:8])
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		return nil, fmt.Errorf("devidp: signer: %w", err)
	}
	codes, _ := lru.New[string, authCode](MaxPending)
	refresh, _ := lru.New[string, grant](MaxPending)
	p := &Provider{cfg: cfg, base: strings.TrimSuffix(cfg.Issuer, "/"), path: strings.TrimSuffix(u.Path, "/"),
		key: key, kid: kid, signer: signer, log: cfg.Logger, codes: codes, refresh: refresh, disabled: map[string]bool{}}
	p.log.Warn("DEVELOPMENT IDENTITY PROVIDER: it signs a token for ANY email typed into its login form. "+
		"Use it only on this machine for `brainstem dev` and tests; never trust it in production.", "issuer", cfg.Issuer, "client_id", cfg.ClientID)
	return p, nil
}

// Issuer returns the issuer URL (the iss of the provider's tokens).
func (p *Provider) Issuer() string { return p.cfg.Issuer }

// ClientID returns the audience of the provider's tokens.
func (p *Provider) ClientID() string { return p.cfg.ClientID }

// ErrDisabled reports a sign-in of an account that was disabled.
var ErrDisabled = errors.New("devidp: the account is disabled")

// SetDisabled disables or re-enables an account, as an IdP administrator
// does: a disabled account cannot sign in, and its refresh tokens and
// unredeemed codes are refused, so every client signed in through the
// provider loses access at its next refresh. Tokens already issued stay
// valid until they expire.
func (p *Provider) SetDisabled(email string, disabled bool) error {
	e, err := checkEmail(email)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if disabled {
		p.disabled[e] = true
	} else {
		delete(p.disabled, e)
	}
	return nil
}

func (p *Provider) isDisabled(email string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.disabled[email]
}

// Mint signs an ID-token-style JWT for email (canonicalised by
// auth.CanonicalEmail; an address it refuses is ErrBadEmail) and groups:
// iss, aud = ClientID, sub = email, email, email_verified true, groups, iat,
// exp. ttl 0 means TokenTTL. The same JWT is a valid gateway bearer token.
func (p *Provider) Mint(email string, groups []string, ttl time.Duration) (token string, exp time.Time, err error) {
	return p.mint(email, groups, ttl, "")
}

func (p *Provider) mint(email string, groups []string, ttl time.Duration, nonce string) (string, time.Time, error) {
	email, err := checkEmail(email)
	if err != nil {
		return "", time.Time{}, err
	}
	if len(groups) > MaxGroups {
		return "", time.Time{}, fmt.Errorf("devidp: %d groups, the limit is %d", len(groups), MaxGroups)
	}
	ttl = cmp.Or(ttl, p.cfg.TokenTTL)
	if ttl < 0 {
		return "", time.Time{}, fmt.Errorf("devidp: negative ttl %v", ttl)
	}
	now := p.cfg.Now().Truncate(time.Second)
	exp := now.Add(ttl)
	if groups == nil {
		groups = []string{}
	}
	claims := map[string]any{
		"iss": p.cfg.Issuer, "aud": p.cfg.ClientID, "sub": email,
		"email": email, "email_verified": true, "groups": groups,
		"iat": now.Unix(), "exp": exp.Unix(),
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	tok, err := auth.SignClaims(p.signer, claims)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("devidp: mint: %w", err)
	}
	return tok, exp, nil
}

func checkEmail(s string) (string, error) {
	e, err := auth.CanonicalEmail(s)
	if err != nil {
		return "", fmt.Errorf("%w: %.100q (want name@example.com): %w", ErrBadEmail, s, err)
	}
	return e, nil
}

// Serve serves the provider on ln until ctx ends and returns at once. The
// listener must be a loopback TCP address (else ErrNotLoopback, and ln is
// left to the caller); when cfg.Issuer is empty it becomes
// "http://<ln.Addr()>". The server and listener are closed when ctx ends.
func Serve(ctx context.Context, ln net.Listener, cfg Config) (*Provider, error) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return nil, fmt.Errorf("%w (listener %s)", ErrNotLoopback, ln.Addr())
	}
	cfg.Issuer = cmp.Or(cfg.Issuer, "http://"+addr.String())
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("devidp: serve", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return p, nil
}
