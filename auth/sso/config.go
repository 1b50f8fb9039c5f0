package sso

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/loopback"
)

// Defaults and limits.
const (
	// DefaultGroupsClaim is the claim groups are read from.
	DefaultGroupsClaim = "groups"
	// DefaultClockSkew is the leeway on exp, nbf and iat.
	DefaultClockSkew = 30 * time.Second
	// MaxClockSkew is the largest ClockSkew Validate accepts.
	MaxClockSkew = 5 * time.Minute
	// DefaultCacheSize is the number of verified tokens remembered.
	DefaultCacheSize = 10000
	// DefaultCacheTTL bounds how long a verified token is served from the
	// cache (never past its exp).
	DefaultCacheTTL = 5 * time.Minute
	// DefaultJWKSRefetchInterval is the least time between two JWKS fetches
	// of one issuer caused by tokens whose key id is unknown. It bounds the
	// load forged tokens can put on the IdP (one fetch per interval per
	// issuer and gateway replica, never two at once) while a real key
	// rotation is picked up by the first token signed with the new key. A
	// token whose unknown kid arrives inside the interval is answered 503
	// with Retry-After, never 401.
	DefaultJWKSRefetchInterval = time.Second
	// MinJWKSRefetchInterval is the smallest interval Validate accepts.
	MinJWKSRefetchInterval = time.Second
	// JWKSMaxAge is how old fetched keys may get before the next
	// verification refreshes them (so keys the IdP removed stop working).
	JWKSMaxAge = time.Hour
	// MaxTokenBytes bounds the size of a token Verify looks at.
	MaxTokenBytes = 16 << 10
	// MaxGroups bounds the number of groups taken from a token.
	MaxGroups = 1024
	// MaxResponseBytes bounds a discovery or JWKS response body.
	MaxResponseBytes = 1 << 20
	// MaxJWKSKeys bounds the keys taken from one JWKS document.
	MaxJWKSKeys = 100
	// DefaultHTTPTimeout is the timeout of the default HTTP client.
	DefaultHTTPTimeout = 10 * time.Second
	// DefaultAlgorithm is an issuer's signing algorithm when it pins none.
	DefaultAlgorithm = "RS256"
)

// DefaultConfig returns every default of a Config in one place: the
// values a zero field takes, and those the gateway's configuration starts
// from (its oidc section), so the two cannot differ.
func DefaultConfig() Config {
	return Config{GroupsClaim: DefaultGroupsClaim, ClockSkew: DefaultClockSkew, CacheSize: DefaultCacheSize, CacheTTL: DefaultCacheTTL,
		JWKSRefetchInterval: DefaultJWKSRefetchInterval}
}

// IssuerConfig is one trusted OIDC issuer.
type IssuerConfig struct {
	// URL is the issuer exactly as it appears in the iss claim and serves
	// /.well-known/openid-configuration. https, or http on a loopback host
	// (the development IdP).
	URL string `yaml:"url" json:"url"`
	// Audiences are the accepted client ids: aud must contain one of them.
	Audiences []string `yaml:"audiences" json:"audiences"`
	// Algorithms pins the accepted signing algorithms; default ["RS256"].
	// Symmetric algorithms and "none" are refused.
	Algorithms []string `yaml:"algorithms" json:"algorithms"`
	// TrustEmail accepts this issuer's email claim without an
	// email_verified claim, for IdPs that never send one but own the
	// addresses they assert (Microsoft Entra ID with the email optional
	// claim of a verified domain). An explicit email_verified false is
	// still refused. Only for issuers whose email claim users cannot set.
	TrustEmail bool `yaml:"trust_email" json:"trust_email"`
}

// Config configures a Verifier. Zero values take the defaults of
// DefaultConfig.
type Config struct {
	Issuers []IssuerConfig `yaml:"issuers" json:"issuers"`
	// GroupsClaim names the claim holding the groups. A name containing dots
	// is first looked up as a literal claim name (e.g.
	// "https://acme.com/groups") and otherwise as a path into nested
	// objects (e.g. "realm_access.roles"). The value may be a list of
	// strings or one string; anything else gives no groups.
	GroupsClaim string `yaml:"groups_claim" json:"groups_claim"`
	// AllowedDomains, when set, admits only emails whose part after the
	// last '@' is exactly one of them (case-insensitive).
	AllowedDomains []string `yaml:"allowed_domains" json:"allowed_domains"`
	// ClockSkew is the leeway on exp, nbf and iat; default 30s, at most 5m.
	ClockSkew time.Duration `yaml:"clock_skew" json:"clock_skew"`
	// CacheSize is the number of verified tokens remembered (keyed by the
	// token's SHA-256); default 10000; negative disables the cache.
	CacheSize int `yaml:"cache_size" json:"cache_size"`
	// CacheTTL bounds how long a verified token is served from the cache;
	// default 5m. An entry never outlives the token's exp.
	CacheTTL time.Duration `yaml:"cache_ttl" json:"cache_ttl"`
	// JWKSRefetchInterval is the least time between two key-miss JWKS
	// fetches per issuer (after failures the pause doubles, up to a
	// minute); default 1s, at least 1s.
	JWKSRefetchInterval time.Duration `yaml:"jwks_refetch_interval" json:"jwks_refetch_interval"`
	// HTTPClient fetches discovery documents and JWKS; default a client
	// with a 10s timeout. Response bodies are limited to MaxResponseBytes.
	HTTPClient *http.Client `yaml:"-" json:"-"`
	// Now is the clock; default time.Now.
	Now func() time.Time `yaml:"-" json:"-"`
	// Logger receives discovery and JWKS events; nil discards.
	Logger *slog.Logger `yaml:"-" json:"-"`
}

// allowedAlgs are the asymmetric JWS algorithms an issuer may be pinned to.
var allowedAlgs = map[string]bool{
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true,
	"EdDSA": true,
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("sso: config: "+format, args...)) }
	if len(c.Issuers) == 0 {
		add("no issuers (want at least one issuers[].url)")
	}
	seen := map[string]int{}
	for i, is := range c.Issuers {
		if err := validateIssuerURL(is.URL); err != nil {
			add("issuers[%d].url: %v", i, err)
		}
		if j, ok := seen[is.URL]; ok {
			add("issuers[%d].url: %q is the same issuer as issuers[%d]", i, is.URL, j)
		}
		seen[is.URL] = i
		if len(is.Audiences) == 0 {
			add("issuers[%d].audiences: empty (want the client id(s) tokens are issued to)", i)
		}
		for j, a := range is.Audiences {
			if strings.TrimSpace(a) == "" || a != strings.TrimSpace(a) {
				add("issuers[%d].audiences[%d]: %q is empty or has surrounding spaces", i, j, a)
			}
		}
		for j, a := range is.Algorithms {
			if !allowedAlgs[a] {
				add("issuers[%d].algorithms[%d]: %q is not allowed (want one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA)", i, j, a)
			}
		}
	}
	if g := c.GroupsClaim; g != "" && (strings.TrimSpace(g) != g || strings.Contains(g, "..")) {
		add("groups_claim: %q has surrounding spaces or an empty path segment", g)
	}
	for i, d := range c.AllowedDomains {
		if d == "" || strings.ContainsAny(d, "@ \t\r\n") || strings.HasPrefix(d, ".") {
			add("allowed_domains[%d]: %q is not a domain name (want e.g. acme.com, without '@')", i, d)
		}
	}
	if c.ClockSkew < 0 || c.ClockSkew > MaxClockSkew {
		add("clock_skew: %v is outside [0, %v]", c.ClockSkew, MaxClockSkew)
	}
	if c.CacheTTL < 0 {
		add("cache_ttl: %v is negative", c.CacheTTL)
	}
	if c.JWKSRefetchInterval != 0 && c.JWKSRefetchInterval < MinJWKSRefetchInterval {
		add("jwks_refetch_interval: %v is below the minimum %v", c.JWKSRefetchInterval, MinJWKSRefetchInterval)
	}
	return errors.Join(errs...)
}

func validateIssuerURL(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q must be a plain scheme://host[/path] URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback.Is(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q uses http on a non-loopback host; keys fetched over plain http could be replaced in transit (use https)", s)
	}
	return fmt.Errorf("%q: scheme must be https", s)
}

// withDefaults returns the config with zero values replaced by those of
// DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.GroupsClaim = cmp.Or(c.GroupsClaim, d.GroupsClaim)
	c.ClockSkew = cmp.Or(c.ClockSkew, d.ClockSkew)
	c.CacheSize = cmp.Or(c.CacheSize, d.CacheSize)
	c.CacheTTL = cmp.Or(c.CacheTTL, d.CacheTTL)
	c.JWKSRefetchInterval = cmp.Or(c.JWKSRefetchInterval, d.JWKSRefetchInterval)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	hc := &http.Client{Timeout: DefaultHTTPTimeout}
	if c.HTTPClient != nil {
		cp := *c.HTTPClient
		hc = &cp
	}
	hc.Transport = limitTransport{next: hc.Transport}
	c.HTTPClient = hc
	issuers := make([]IssuerConfig, len(c.Issuers))
	for i, is := range c.Issuers {
		if len(is.Algorithms) == 0 {
			is.Algorithms = []string{DefaultAlgorithm}
		}
		issuers[i] = is
	}
	c.Issuers = issuers
	return c
}

// limitTransport caps response bodies at MaxResponseBytes: go-oidc reads
// discovery documents with an unbounded io.ReadAll.
type limitTransport struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := cmp.Or(t.next, http.DefaultTransport)
	resp, err := next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

// ErrResponseTooLarge reports an IdP response over MaxResponseBytes.
var ErrResponseTooLarge = errors.New("sso: identity provider response too large")

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

// Read implements io.Reader, failing once the body passes the limit.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Distinguish "exactly at the limit" from "over it".
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, MaxResponseBytes)
		}
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	n, err := b.rc.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	return n, err
}

// Close implements io.Closer.
func (b *limitedBody) Close() error { return b.rc.Close() }
