// Package config is the gateway's configuration: the YAML the Helm chart
// renders (Config and its sections), its defaults, the BRAINSTEM_*
// environment overrides, and the checks of `brainstem gateway
// --check-config` (Validate, CheckConfig), each problem named by its key.
// It holds no running state: package gateway builds the gateway from it.
package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
	oauthcfg "github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/internal/logging"
	"github.com/brainstem/brainstem/internal/loopback"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
)

// Config is the gateway's configuration, read from YAML (the Helm chart
// renders exactly these keys). Start from DefaultConfig; LoadConfig does.
type Config struct {
	// PublicURL is the externally visible base URL; the MCP endpoint is
	// PublicURL + "/mcp" and it is the OAuth protected resource identifier.
	PublicURL string `yaml:"public_url"`
	// Listen is the public HTTPS listen address.
	Listen string `yaml:"listen"`
	// AdminListen serves /metrics, /healthz and /readyz (plain HTTP, keep it private).
	AdminListen string `yaml:"admin_listen"`
	// TLS is the public listener's certificate; required unless Listen is loopback.
	TLS TLSFiles `yaml:"tls"`
	// AllowedOrigins are browser origins allowed besides PublicURL's own origin.
	// A request with an Origin header not in this set is refused with 403.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// OIDC configures SSO token verification (see auth/sso).
	OIDC sso.Config `yaml:"oidc"`
	// OAuth configures the gateway's own authorization server, through
	// which MCP clients sign in with nothing but the URL (see gateway/oauth).
	OAuth oauthcfg.Config `yaml:"oauth"`
	// Peers lets the gateway's replicas reach each other (PeersConfig).
	Peers PeersConfig `yaml:"peers"`
	// Shards configures the QUIC connections to the wings' shards.
	Shards ShardsConfig `yaml:"shards"`
	// Wings lists every wing and where its shard listens.
	Wings []WingConfig `yaml:"wings"`
	// DefaultWing, when set, is the wing of a wing-scoped tool call whose
	// arguments name none (no wing, note id or path): the callers of the
	// predecessor's single brain name no wing (docs/decisions.md, "The
	// predecessor's call shapes"). It must be one of wings. Unset, such a
	// call is refused with invalid_argument naming "wing". A search
	// naming no wing still searches every wing the caller can read.
	DefaultWing string `yaml:"default_wing"`
	// Limits bounds what one caller or one address can make the gateway do.
	Limits LimitsConfig `yaml:"limits"`
	// Grants bounds the grant cache: the shard tokens held per email and
	// group set (grantCache; the design brief's "session cache").
	Grants GrantsConfig `yaml:"grants"`
	// Sessions is the grants section's former key, still read for one
	// release (ParseConfig moves it to Grants and Deprecations names it);
	// giving both is an error. Always nil after ParseConfig.
	Sessions *GrantsConfig `yaml:"sessions,omitempty"`
	// Signins configures offboarding: the ended sign-ins every replica
	// enforces, and the operator's admin endpoints (SigninsConfig).
	Signins SigninsConfig `yaml:"signins"`
	// Log selects the log format and level.
	Log LogConfig `yaml:"log"`
	// Audit configures the per-call audit log.
	Audit AuditConfig `yaml:"audit"`
	// DrainTimeout bounds the graceful shutdown: in-flight calls get this
	// long to finish once the gateway is told to stop.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// DrainGrace is how long the gateway keeps serving after it is told to
	// stop, before it stops accepting: /readyz answers 503 and every answer
	// closes its connection, so clients (or an Ingress) stop reusing
	// keep-alive connections and none is closed under a request being sent.
	// 0 turns it off.
	DrainGrace time.Duration `yaml:"drain_grace"`
	// deprecated are the warnings of the deprecated keys used (Deprecations).
	deprecated []string
}

// TLSFiles names a PEM certificate and key (and, for mTLS, a CA bundle).
type TLSFiles struct {
	CAFile   string `yaml:"ca_file,omitempty"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// ShardFiles names the files of shards.tls for pki.ReadFiles, which names
// them in its errors by their configuration keys.
func (t TLSFiles) ShardFiles() pki.Files {
	return pki.Files{CA: t.CAFile, Cert: t.CertFile, Key: t.KeyFile,
		CAName: "shards.tls.ca_file", CertName: "shards.tls.cert_file", KeyName: "shards.tls.key_file"}
}

// ShardsConfig configures the gateway's shard clients.
type ShardsConfig struct {
	// TLS is the gateway's mTLS client identity and the internal CA.
	TLS TLSFiles `yaml:"tls"`
	// CallTimeout bounds every request to a shard (mint, stats, call).
	CallTimeout time.Duration `yaml:"call_timeout"`
	// MaxInFlight bounds concurrent requests per shard.
	MaxInFlight int `yaml:"max_in_flight"`
	// RefreshInterval is how often tool descriptors are re-fetched.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// WatchInterval is how often, while an MCP client listens for
	// notifications, the gateway asks every wing for its change generation
	// (gateway/surfaces/watch.go); a change is notified within about this long. Default 500ms.
	WatchInterval time.Duration `yaml:"watch_interval"`
	// RetryBase is the first backoff delay when a shard rejects a freshly
	// minted token (then doubled; 3 tries in all).
	RetryBase time.Duration `yaml:"retry_base"`
	// KeepAlive is how often a quiet shard connection sends a PING, so
	// that silence means the shard is gone.
	KeepAlive time.Duration `yaml:"keep_alive"`
	// IdleTimeout is how long a shard may stay silent before its
	// connection is given up: calls in flight then end at once, and calls
	// fail fast while the gateway redials. Sized for a cluster network.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// WingConfig names one wing and its shard.
type WingConfig struct {
	Name       string `yaml:"name"`
	Address    string `yaml:"address"`     // host:port of the shard's QUIC listener
	ServerName string `yaml:"server_name"` // TLS server name to verify; default: the host of Address
}

// LimitsConfig holds the abuse limits.
type LimitsConfig struct {
	MaxBodyBytes        int64   `yaml:"max_body_bytes"`
	CallsPerSecond      float64 `yaml:"calls_per_second"`       // per email, token bucket refill rate
	Burst               int     `yaml:"burst"`                  // per email, token bucket size
	FailedAuthPerMinute int     `yaml:"failed_auth_per_minute"` // per client IP
	FanoutConcurrency   int     `yaml:"fanout_concurrency"`     // wings queried at once by one cross-wing search
	// FanoutTimeout bounds a cross-wing brain_query: wings that have not
	// answered by then are listed under "unavailable" and the others'
	// hits are returned (the audit outcome is "partial"). A longer
	// shards.call_timeout does not extend it; a shorter one bounds it.
	FanoutTimeout time.Duration `yaml:"fanout_timeout"`
	// HeaderTimeout bounds reading a request's headers.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	// BodyTimeout bounds reading a request's body (from the end of its
	// headers); a peer that withholds it is answered and disconnected.
	BodyTimeout time.Duration `yaml:"body_timeout"`
	// IdleConnTimeout closes a keep-alive connection idle this long.
	IdleConnTimeout time.Duration `yaml:"idle_conn_timeout"`
	// MaxUnauthenticatedConns bounds connections that have not (yet)
	// carried an authenticated request; beyond it new connections are
	// closed at once.
	MaxUnauthenticatedConns int `yaml:"max_unauthenticated_conns"`
	// ClientIPHeader, when set (e.g. "X-Forwarded-For"), names a header set
	// by a trusted proxy; its right-most address is the client IP for the
	// failed-authentication limit. Empty: the TCP peer address.
	ClientIPHeader string `yaml:"client_ip_header"`
	// ResourcesPageSize is how many notes one resources/list page holds
	// (default 100, at most 200: brain_list's largest page).
	ResourcesPageSize int `yaml:"resources_page_size"`
}

// GrantsConfig, the grants section, bounds the grant cache. MaxEntries
// also sizes the per-email rate limiters, and IdleTTL also ends an idle
// MCP session of the session-based protocol (2025-06-18).
type GrantsConfig struct {
	MaxEntries int           `yaml:"max_entries"` // callers (email and group set) in the grant cache
	IdleTTL    time.Duration `yaml:"idle_ttl"`    // a caller's entry is dropped after this long unused
	// DenyTTL is how long a wing's "no access" answer is remembered.
	DenyTTL time.Duration `yaml:"deny_ttl"`
}

// LogConfig selects the log format.
type LogConfig struct {
	Format string `yaml:"format"` // json | text
	Level  string `yaml:"level"`  // debug | info | warn | error
}

// AuditConfig configures the audit log.
type AuditConfig struct {
	// LogArguments adds each call's raw arguments to its audit line. Off by
	// default: arguments carry note bodies.
	LogArguments bool `yaml:"log_arguments"`
}

// DefaultConfig returns the defaults every key starts from.
func DefaultConfig() Config {
	return Config{
		Listen:      ":8443",
		AdminListen: ":9090",
		OIDC:        sso.DefaultConfig(),
		Shards: ShardsConfig{
			CallTimeout:     30 * time.Second,
			MaxInFlight:     256,
			RefreshInterval: time.Minute,
			WatchInterval:   500 * time.Millisecond,
			RetryBase:       100 * time.Millisecond,
			KeepAlive:       proto.DefaultKeepAlive,
			IdleTimeout:     proto.DefaultIdleTimeout,
		},
		Limits: LimitsConfig{
			MaxBodyBytes:            1 << 20,
			CallsPerSecond:          20,
			Burst:                   40,
			FailedAuthPerMinute:     30,
			FanoutConcurrency:       8,
			FanoutTimeout:           2 * time.Second,
			HeaderTimeout:           10 * time.Second,
			BodyTimeout:             10 * time.Second,
			IdleConnTimeout:         90 * time.Second,
			MaxUnauthenticatedConns: 1024,
			ResourcesPageSize:       100,
		},
		Grants: GrantsConfig{
			MaxEntries: 100000,
			IdleTTL:    30 * time.Minute,
			DenyTTL:    5 * time.Second,
		},
		Log:          LogConfig{Format: "json", Level: "info"},
		DrainTimeout: 30 * time.Second,
		DrainGrace:   time.Second,
	}
}

// maxConfigBytes bounds the config file.
const maxConfigBytes = 1 << 20

// maxResourcesPageSize bounds limits.resources_page_size: brain_list's
// largest page, so one shard request fills at most one page.
const maxResourcesPageSize = 200

// ErrConfig wraps every configuration problem.
var ErrConfig = errors.New("gateway: invalid config")

// envOverrides are the environment variables LoadConfig honours (secrets and
// paths, so a Kubernetes Secret or mount can change them without editing the
// rendered config).
var envOverrides = []struct {
	name string
	set  func(*Config, string)
}{
	{"BRAINSTEM_PUBLIC_URL", func(c *Config, v string) { c.PublicURL = v }},
	{"BRAINSTEM_TLS_CERT_FILE", func(c *Config, v string) { c.TLS.CertFile = v }},
	{"BRAINSTEM_TLS_KEY_FILE", func(c *Config, v string) { c.TLS.KeyFile = v }},
	{"BRAINSTEM_SHARDS_TLS_CA_FILE", func(c *Config, v string) { c.Shards.TLS.CAFile = v }},
	{"BRAINSTEM_SHARDS_TLS_CERT_FILE", func(c *Config, v string) { c.Shards.TLS.CertFile = v }},
	{"BRAINSTEM_SHARDS_TLS_KEY_FILE", func(c *Config, v string) { c.Shards.TLS.KeyFile = v }},
	{"BRAINSTEM_OAUTH_SIGNING_KEY_FILE", func(c *Config, v string) { c.OAuth.SigningKeyFile = v }},
	{"BRAINSTEM_OAUTH_CLIENT_SECRET_FILE", func(c *Config, v string) { c.OAuth.Upstream.ClientSecretFile = v }},
}

// LoadConfig reads a YAML config file over DefaultConfig, rejecting unknown
// keys, then applies the BRAINSTEM_* environment overrides (non-empty
// values win; see envOverrides). It does not validate; call Validate.
func LoadConfig(path string) (Config, error) {
	return loadConfig(path, os.Getenv)
}

func loadConfig(path string, getenv func(string) string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("gateway: config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("gateway: config %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return Config{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrConfig, path, maxConfigBytes)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range envOverrides {
		if v := getenv(e.name); v != "" {
			e.set(&cfg, v)
		}
	}
	return cfg, nil
}

// ParseConfig decodes YAML config bytes over DefaultConfig, rejecting unknown
// keys and trailing documents. The grants section's former key, sessions,
// is read as grants (Deprecations says so); both at once are an error.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	legacy := cfg.Grants
	cfg.Sessions = &legacy // decoded over the defaults, as grants is
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("%w: the file is empty", ErrConfig)
		}
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%w: more than one YAML document", ErrConfig)
	}
	var given struct {
		Grants   *yaml.Node `yaml:"grants"`
		Sessions *yaml.Node `yaml:"sessions"`
	}
	_ = yaml.Unmarshal(data, &given) // decoded above: cannot fail
	if given.Sessions != nil {
		if given.Grants != nil {
			return Config{}, fmt.Errorf("%w: both grants and sessions (its former name) are given: keep grants only", ErrConfig)
		}
		cfg.Grants = *cfg.Sessions
		cfg.deprecated = append(cfg.deprecated, "the configuration key sessions is deprecated and will be refused in the next release: rename it grants")
	}
	cfg.Sessions = nil
	return cfg, nil
}

// Deprecations are the deprecated keys the configuration used, each said
// as the warning the gateway logs at start.
func (c Config) Deprecations() []string { return c.deprecated }

// CheckConfig is `brainstem gateway --check-config`: it loads and
// validates a config file and, with checkFiles, reads the files it names
// and judges them as the gateway's peers will, changing nothing:
// shards.tls must be a gateway-role certificate whose key matches, valid at
// now and chaining to shards.tls.ca_file for client use (a shard refuses
// every mint otherwise), and tls must be a certificate and key that belong
// together and are valid at now; each service account's credential file
// must hold a SHA-256 or a public key. Every problem is reported at once;
// warnings name certificates that expire within pki.ExpiryWarning.
func CheckConfig(path string, checkFiles bool, now time.Time) (warnings []string, err error) {
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	errs := []error{cfg.Validate()}
	warnings = cfg.Deprecations()
	if checkFiles {
		w, err := cfg.checkFiles(now)
		warnings, errs = append(warnings, w...), append(errs, err)
	}
	return warnings, errors.Join(errs...)
}

// checkFiles reads and checks the certificate files the config names, and
// the service accounts' credential files.
func (c Config) checkFiles(now time.Time) (warnings []string, err error) {
	var errs []error
	// A file not named is Validate's to report.
	if t := c.Shards.TLS; t.CAFile != "" && t.CertFile != "" && t.KeyFile != "" {
		id, err := pki.ReadFiles(t.ShardFiles())
		if err != nil {
			each := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				each = j.Unwrap() // one line per file
			}
			for _, e := range each {
				errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, e))
			}
		} else {
			w, err := id.Check(pki.RoleGateway, now)
			for _, s := range w {
				warnings = append(warnings, "shards.tls: "+s)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: shards.tls: %w", ErrConfig, err))
			}
		}
	}
	if c.OAuth.Enabled {
		if err := c.OAuth.CheckServiceAccounts(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
		}
	}
	if c.TLS.CertFile != "" && c.TLS.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: tls: %w", ErrConfig, err))
		default:
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%w: tls.cert_file: %w", ErrConfig, err))
			case now.Before(leaf.NotBefore):
				errs = append(errs, fmt.Errorf("%w: tls.cert_file: not valid before %s", ErrConfig, leaf.NotBefore.UTC().Format(time.RFC3339)))
			case !now.Before(leaf.NotAfter):
				errs = append(errs, fmt.Errorf("%w: tls.cert_file: expired on %s", ErrConfig, leaf.NotAfter.UTC().Format(time.RFC3339)))
			case leaf.NotAfter.Sub(now) < pki.ExpiryWarning:
				warnings = append(warnings, fmt.Sprintf("tls.cert_file: expires on %s; renew it soon", leaf.NotAfter.UTC().Format(time.RFC3339)))
			}
		}
	}
	return warnings, errors.Join(errs...)
}

// Validate reports every problem at once (errors.Join), each naming its key.
func (c Config) Validate() error { return c.ValidateWith(true) }

// ValidateWith is Validate with shards.tls required only when
// shardTLSFiles: a gateway given its shard TLS in code (dev, tests) names
// no files.
func (c Config) ValidateWith(shardTLSFiles bool) error {
	var p problems
	c.validateListeners(&p)
	if err := c.OIDC.Validate(); err != nil {
		p = append(p, fmt.Errorf("%w: oidc: %w", ErrConfig, err))
	}
	c.validateOAuth(&p)
	c.validatePeers(&p)
	c.Shards.validate(&p, shardTLSFiles)
	validateWings(&p, c.Wings, c.DefaultWing)
	c.Limits.validate(&p)
	c.Grants.validate(&p)
	c.Signins.validate(&p, c.AdminListen)
	switch c.Log.Format {
	case "json", "text":
	default:
		p.add("log.format", "%q must be json or text", c.Log.Format)
	}
	if _, err := logging.ParseLevel(c.Log.Level); err != nil {
		p.add("log.level", "%v", err)
	}
	positive(&p, "drain_timeout", c.DrainTimeout)
	if c.DrainGrace < 0 || c.DrainGrace > time.Minute {
		p.add("drain_grace", "must be in [0, 1m] (got %s)", c.DrainGrace)
	}
	return errors.Join(p...)
}

// problems collects every problem of a configuration, each naming its key.
type problems []error

func (p *problems) add(key, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%w: %s: %s", ErrConfig, key, fmt.Sprintf(format, args...)))
}

// positive adds key's problem when its value v is not above zero.
func positive[T float64 | time.Duration](p *problems, key string, v T) {
	if v <= 0 {
		p.add(key, "must be positive (got %v)", v)
	}
}

// atLeast adds key's problem when its value v is below lo.
func atLeast[T int | time.Duration](p *problems, key string, v, lo T) {
	if v < lo {
		p.add(key, "must be at least %v (got %v)", lo, v)
	}
}

// validateListeners checks public_url, listen, admin_listen, tls and
// allowed_origins.
func (c Config) validateListeners(p *problems) {
	if c.PublicURL == "" {
		p.add("public_url", "required (the URL agents connect to, e.g. https://brain.acme.com)")
	} else if u, err := url.Parse(c.PublicURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		p.add("public_url", "%q is not an absolute http(s) URL", c.PublicURL)
	} else {
		if u.Scheme == "http" && !loopback.Is(u.Hostname()) {
			p.add("public_url", "%q must use https unless its host is loopback", c.PublicURL)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			p.add("public_url", "%q must not carry a query, fragment or user info", c.PublicURL)
		}
		if strings.HasSuffix(u.Path, "/mcp") {
			p.add("public_url", "%q should be the base URL; the gateway appends /mcp itself", c.PublicURL)
		}
	}

	listenHost, _, listenErr := net.SplitHostPort(c.Listen)
	if listenErr != nil {
		p.add("listen", "%q is not host:port: %v", c.Listen, listenErr)
	}
	if _, _, err := net.SplitHostPort(c.AdminListen); err != nil {
		p.add("admin_listen", "%q is not host:port: %v", c.AdminListen, err)
	} else if c.AdminListen == c.Listen {
		p.add("admin_listen", "must differ from listen (%q)", c.Listen)
	}
	switch {
	case (c.TLS.CertFile == "") != (c.TLS.KeyFile == ""):
		p.add("tls", "cert_file and key_file must both be set or both be empty")
	case c.TLS.CertFile == "" && listenErr == nil && (listenHost == "" || !loopback.Is(listenHost)):
		p.add("tls", "cert_file and key_file are required unless listen is a loopback address (listen is %q)", c.Listen)
	}
	if c.TLS.CAFile != "" {
		p.add("tls.ca_file", "not used by the public listener; remove it")
	}
	for i, o := range c.AllowedOrigins {
		if _, err := ParseOrigin(o); err != nil {
			p.add(fmt.Sprintf("allowed_origins[%d]", i), "%v", err)
		}
	}
}

func (s ShardsConfig) validate(p *problems, requireTLS bool) {
	if requireTLS {
		if s.TLS.CAFile == "" {
			p.add("shards.tls.ca_file", "required (the internal CA that signed the shards' certificates)")
		}
		if s.TLS.CertFile == "" {
			p.add("shards.tls.cert_file", "required (the gateway's client certificate, role gateway)")
		}
		if s.TLS.KeyFile == "" {
			p.add("shards.tls.key_file", "required")
		}
	}
	positive(p, "shards.call_timeout", s.CallTimeout)
	atLeast(p, "shards.max_in_flight", s.MaxInFlight, 1)
	if s.WatchInterval < 50*time.Millisecond || s.WatchInterval > time.Minute {
		p.add("shards.watch_interval", "must be between 50ms and 1m (got %s)", s.WatchInterval)
	}
	atLeast(p, "shards.refresh_interval", s.RefreshInterval, time.Second)
	if s.RetryBase <= 0 || s.RetryBase > 10*time.Second {
		p.add("shards.retry_base", "must be in (0, 10s] (got %s)", s.RetryBase)
	}
	if s.IdleTimeout < 500*time.Millisecond || s.IdleTimeout > 5*time.Minute {
		p.add("shards.idle_timeout", "must be in [500ms, 5m] (got %s)", s.IdleTimeout)
	}
	if s.KeepAlive <= 0 || s.KeepAlive*2 > s.IdleTimeout {
		p.add("shards.keep_alive", "must be positive and at most half of shards.idle_timeout (got %s, idle_timeout %s)", s.KeepAlive, s.IdleTimeout)
	}
}

func validateWings(p *problems, wings []WingConfig, def string) {
	if len(wings) == 0 {
		p.add("wings", "at least one wing is required")
	}
	if def != "" && !slices.ContainsFunc(wings, func(w WingConfig) bool { return w.Name == def }) {
		p.add("default_wing", "%q is not one of wings", def)
	}
	seen := map[string]int{}
	for i, w := range wings {
		key := fmt.Sprintf("wings[%d]", i)
		if err := brain.ValidWing(w.Name); err != nil {
			p.add(key+".name", "%v", err)
		} else if j, dup := seen[w.Name]; dup {
			p.add(key+".name", "%q duplicates wings[%d]", w.Name, j)
		} else {
			seen[w.Name] = i
		}
		if host, port, err := net.SplitHostPort(w.Address); err != nil || host == "" {
			p.add(key+".address", "%q is not host:port", w.Address)
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			p.add(key+".address", "%q has no valid port", w.Address)
		}
	}
}

func (l LimitsConfig) validate(p *problems) {
	if l.MaxBodyBytes < 1024 || l.MaxBodyBytes > 64<<20 {
		p.add("limits.max_body_bytes", "must be between 1024 and %d (got %d)", 64<<20, l.MaxBodyBytes)
	}
	positive(p, "limits.calls_per_second", l.CallsPerSecond)
	atLeast(p, "limits.burst", l.Burst, 1)
	atLeast(p, "limits.failed_auth_per_minute", l.FailedAuthPerMinute, 1)
	atLeast(p, "limits.fanout_concurrency", l.FanoutConcurrency, 1)
	if l.ResourcesPageSize < 1 || l.ResourcesPageSize > maxResourcesPageSize {
		p.add("limits.resources_page_size", "must be between 1 and %d (got %d)", maxResourcesPageSize, l.ResourcesPageSize)
	}
	atLeast(p, "limits.fanout_timeout", l.FanoutTimeout, 100*time.Millisecond)
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"limits.header_timeout", l.HeaderTimeout}, {"limits.body_timeout", l.BodyTimeout}, {"limits.idle_conn_timeout", l.IdleConnTimeout}} {
		if d.v < 100*time.Millisecond || d.v > time.Hour {
			p.add(d.key, "must be in [100ms, 1h] (got %s)", d.v)
		}
	}
	atLeast(p, "limits.max_unauthenticated_conns", l.MaxUnauthenticatedConns, 1)
}

func (s GrantsConfig) validate(p *problems) {
	atLeast(p, "grants.max_entries", s.MaxEntries, 1)
	atLeast(p, "grants.idle_ttl", s.IdleTTL, time.Second)
	positive(p, "grants.deny_ttl", s.DenyTTL)
}

// validateOAuth checks the authorization server's section and how it fits
// the oidc section: the upstream IdP must be a trusted issuer whose
// audiences include the gateway's client there, so that its ID tokens pass
// the same rules as any SSO token.
func (c Config) validateOAuth(p *problems) {
	if !c.OAuth.Enabled {
		return
	}
	if err := c.OAuth.Validate(c.PublicURL); err != nil {
		*p = append(*p, fmt.Errorf("%w: %w", ErrConfig, err))
	}
	self := strings.TrimRight(c.PublicURL, "/")
	found := false
	for i, is := range c.OIDC.Issuers {
		if strings.TrimRight(is.URL, "/") == self {
			p.add(fmt.Sprintf("oidc.issuers[%d].url", i), "%q is the gateway's own authorization server, which is always trusted; remove it", is.URL)
		}
		if is.URL == c.OAuth.Upstream.Issuer && c.OAuth.Upstream.Issuer != "" {
			found = true
			if c.OAuth.Upstream.ClientID != "" && !slices.Contains(is.Audiences, c.OAuth.Upstream.ClientID) {
				p.add("oauth.upstream.client_id", "%q is not among oidc.issuers[%d].audiences, so the IdP's ID tokens for the gateway would be refused; add it", c.OAuth.Upstream.ClientID, i)
			}
		}
	}
	if !found && c.OAuth.Upstream.Issuer != "" {
		p.add("oauth.upstream.issuer", "%q is not one of oidc.issuers; add it there (with oauth.upstream.client_id among its audiences)", c.OAuth.Upstream.Issuer)
	}
}

// MCPURL returns PublicURL + "/mcp".
func (c Config) MCPURL() string { return strings.TrimRight(c.PublicURL, "/") + "/mcp" }

// TLSName returns the TLS name to verify for a wing's shard: ServerName,
// else the host of Address.
func (w WingConfig) TLSName() string {
	if w.ServerName != "" {
		return w.ServerName
	}
	host, _, err := net.SplitHostPort(w.Address)
	if err != nil {
		return w.Address
	}
	return host
}

// ParseOrigin checks an origin is scheme://host[:port] and returns it in
// canonical (lowercase) form.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port])", s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin: it has a path, query or user info", s)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// PeersConfig lets the replicas of one gateway reach each other on their
// admin listeners, so a device sign-in started at one replica completes
// through any other (gateway/oauth/device, peers.go). Off while DNS and
// Addresses are both empty: each device sign-in then stays on the replica
// that issued it.
type PeersConfig struct {
	// DNS is a name that resolves to the address of every replica (in
	// Kubernetes, the chart's headless Service of the gateway pods),
	// looked up whenever a replica asks its peers for a typed code.
	DNS string `yaml:"dns"`
	// Port is the replicas' admin port, where they answer their peers
	// (0: the port of admin_listen).
	Port int `yaml:"port"`
	// Addresses lists the replicas' admin host:port where there is no DNS
	// name (virtual machines, tests); with DNS it is not used.
	Addresses []string `yaml:"addresses"`
	// Advertise is this replica's admin host:port as the others reach it
	// ("": admin_listen's host if it names one, else this host's first
	// non-loopback address, with the admin port; in Kubernetes the pod's
	// IP). Set it where a host has several addresses.
	Advertise string `yaml:"advertise"`
}

// Enabled reports whether the replicas reach each other.
func (p PeersConfig) Enabled() bool { return p.DNS != "" || len(p.Addresses) > 0 }

// maxPeerAddresses bounds peers.addresses.
const maxPeerAddresses = oauthcfg.MaxPeers

func (c Config) validatePeers(p *problems) {
	pc := c.Peers
	if !pc.Enabled() {
		if pc.Advertise != "" || pc.Port != 0 {
			p.add("peers", "advertise and port need peers.dns or peers.addresses")
		}
		return
	}
	if !c.OAuth.Enabled {
		p.add("peers", "the replicas reach each other for the device flow of the gateway's authorization server; enable oauth or remove peers")
	}
	if pc.DNS != "" && !pki.ValidHostName(pc.DNS) {
		p.add("peers.dns", "%q is not a DNS name", pc.DNS)
	}
	if pc.Port < 0 || pc.Port > 65535 {
		p.add("peers.port", "%d is not a port", pc.Port)
	}
	if len(pc.Addresses) > maxPeerAddresses {
		p.add("peers.addresses", "%d addresses; at most %d", len(pc.Addresses), maxPeerAddresses)
	}
	for i, a := range pc.Addresses {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" || port == "0" {
			p.add(fmt.Sprintf("peers.addresses[%d]", i), "%q is not host:port", a)
		}
	}
	if pc.Advertise != "" {
		if host, port, err := net.SplitHostPort(pc.Advertise); err != nil || host == "" || port == "" || port == "0" {
			p.add("peers.advertise", "%q must be this replica's admin host:port as the other replicas reach it", pc.Advertise)
		}
	}
}

// SigninsConfig configures offboarding. Both are optional.
type SigninsConfig struct {
	// EndedFile is the ended sign-ins file (auth/offboard: `ended:` and a
	// list of {email, not_before, reason}), read at start (a missing or
	// bad file fails the start) and then every second: a change applies
	// within a second of reaching this replica's disk. A file that later
	// turns bad keeps the last good list (logged).
	EndedFile string `yaml:"ended_file"`
	// AdminTokenFile holds the operator's bearer token (at least 32
	// bytes) for the admin listener's /signins endpoints: GET lists a
	// person's sign-ins this replica saw, POST /signins/end ends them on
	// this replica at once. Without it those endpoints answer 404.
	AdminTokenFile string `yaml:"admin_token_file"`
}

func (s SigninsConfig) validate(p *problems, adminListen string) {
	if s.AdminTokenFile != "" && adminListen == "" {
		p.add("signins.admin_token_file", "the /signins endpoints are served on admin_listen, which is not set")
	}
	for _, f := range []struct{ key, v string }{{"signins.ended_file", s.EndedFile}, {"signins.admin_token_file", s.AdminTokenFile}} {
		if f.v != "" && strings.TrimSpace(f.v) != f.v {
			p.add(f.key, "%q has surrounding spaces", f.v)
		}
	}
}
