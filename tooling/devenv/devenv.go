// Package devenv runs Brainstem on one machine for development: the embedded
// identity provider, one shard per wing and a gateway, all on loopback, over a
// working copy of a brain. It is what `brainstem dev` starts and what the
// end-to-end tests drive.
package devenv

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/deploy/examples"
	"github.com/brainstem/brainstem/gateway"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/oauth"
	oauthconfig "github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shardserver"
	"github.com/brainstem/brainstem/tooling/gitserver"
)

// ClientID is the audience of the development identity provider's tokens.
const ClientID = "brainstem"

// Config says where the development environment listens and what it serves.
// Port 0 picks a free port (the tests do that); the CLI uses fixed defaults.
type Config struct {
	Brain string // serve this existing brain in place; "" → a copy of the sample brain
	Data  string // keep state (brain copy, shard keys, policies) here; "" → a temp dir removed on Close

	Host          string // loopback address to listen on; default 127.0.0.1
	GatewayPort   int
	AdminPort     int
	IdPPort       int
	ShardBasePort int // wing i listens on ShardBasePort+i (UDP); 0 → free ports

	// TokenTTL is the lifetime of the demo tokens (the banner's, `brainstem
	// dev token`'s, the identity provider's) and, up to their defaults (1h
	// and 10m), of the gateway's access tokens and service accounts'
	// tokens; default 8h. At least a minute (the gateway's shortest).
	TokenTTL time.Duration
	// AllowPurge lets curators purge content from history for good
	// (brain_purge) in every wing: each shard's History.AllowPurge.
	AllowPurge bool
	// DefaultWing is the gateway's default_wing: the wing of the calls
	// in the predecessor's shape that name none ("" refuses them).
	DefaultWing string
	Version     string
	Logger      *slog.Logger // everything the servers log
	AuditLog    io.Writer    // the gateway's audit lines; nil discards them
	// CallsPerSecond, when positive, is the gateway's per-user rate limit
	// (burst: twice as many); `brainstem load` needs more than the default.
	CallsPerSecond float64
	// Gateway, when set, adjusts the gateway's configuration before it
	// starts (benchmarks raise the per-user rate limit with it).
	Gateway func(*config.Config)
	// Shard, when set, adjusts each shard's configuration before it opens
	// (benchmarks raise the note size limit with it).
	Shard func(*shard.Config)
	// Progress is called while a wing's index builds.
	Progress func(wing string, done, total int)
	// Status, when set, is told what Start does between the index builds
	// and the end ("platform: opening history…", "gateway: starting…"),
	// for a person watching a large brain open.
	Status func(msg string)
	// PolicyPoll is how often a shard checks its policy file
	// (<data>/policies/<wing>.yaml) for edits: 0 → the shard default,
	// negative → only ReloadPolicy (tests).
	PolicyPoll time.Duration
	// Tracing, when set, gives the gateway (service "brainstem-gateway")
	// and each shard ("brainstem-shard-<wing>") their tracing; each server
	// flushes and shuts down its own at Close. nil traces nothing.
	Tracing func(service string) (*tracing.Tracing, error)
	// GitRemote, when set, is a git remote every wing syncs with (`brainstem
	// dev --git-remote`): a bare repository's path (created when missing)
	// or a URL that needs no credentials. The wings share the brain
	// directory's repository, so one syncer (the first wing's shard's)
	// integrates all of them; it pulls every DevPullInterval.
	GitRemote string
}

// The dev stack's git remote timing: short, so that a push from a clone
// shows at once.
const (
	DevPullInterval = time.Second
	DevPushDelay    = 500 * time.Millisecond
)

// PortError says which listener could not bind, naming the flag to change.
type PortError struct {
	What string // "gateway", "admin", "identity provider", "shard payments"
	Flag string // the CLI flag that sets it
	Addr string
	Err  error
}

func (e *PortError) Error() string {
	return fmt.Sprintf("devenv: cannot listen for the %s on %s (%v); choose another port with %s", e.What, e.Addr, e.Err, e.Flag)
}
func (e *PortError) Unwrap() error { return e.Err }

// PortsError lists every listener that could not bind: Start tries each
// port before it starts anything, so one run names every busy port and the
// flag that moves it. It is an ErrUsage.
type PortsError struct{ Ports []*PortError }

func (e *PortsError) Error() string {
	var b strings.Builder
	if len(e.Ports) == 1 {
		b.WriteString("devenv: a port is taken; stop what holds it or choose another with its flag:")
	} else {
		fmt.Fprintf(&b, "devenv: %d ports are taken; stop what holds them or choose others with their flags:", len(e.Ports))
	}
	for _, p := range e.Ports {
		why := p.Err
		var op *net.OpError
		if errors.As(why, &op) {
			why = op.Err // "bind: address already in use", without the address again
		}
		fmt.Fprintf(&b, "\n  %-21s the %s (%s): %v", p.Addr, p.What, p.Flag, why)
	}
	return b.String()
}

// Is makes a PortsError an ErrUsage.
func (e *PortsError) Is(target error) bool { return target == ErrUsage }

// Unwrap returns the PortErrors.
func (e *PortsError) Unwrap() []error {
	out := make([]error, len(e.Ports))
	for i, p := range e.Ports {
		out[i] = p
	}
	return out
}

// Env is a running development environment.
type Env struct {
	MCPURL     string   // the gateway's MCP endpoint
	ConsoleURL string   // the curators' console on the gateway's origin
	IssuerURL  string   // the identity provider
	AdminURL   string   // the gateway's metrics and probes
	BrainDir   string   // the brain being served
	DataDir    string   // state directory
	Wings      []string // sorted
	Notes      map[string]int64
	// AdminTokenFile holds the operator token of the gateway's /signins
	// endpoints (its signins.admin_token_file): `brainstem signins
	// list|end --admin <AdminURL> --token-file <it>`.
	AdminTokenFile string
	// ServiceAccountSecretFile holds the client secret of the demo service
	// account ServiceAccountID (client_credentials at the gateway's /token).
	ServiceAccountSecretFile string
	// AccessTokenTTL and ServiceAccountTokenTTL are the lifetimes of the
	// gateway's access tokens and of its service accounts' tokens.
	AccessTokenTTL, ServiceAccountTokenTTL time.Duration

	idp      *devidp.Provider
	stopIdP  func() error
	shardTLS *tls.Config       // the gateway's mTLS client identity
	addrs    map[string]string // wing → shard address
	remote   *remote.Config    // Config.GitRemote's, nil without one
	cfg      Config
	tempData bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errs     chan error
	closers  []func() error
	shards   map[string]*shard.Service
}

// Start brings everything up and returns once the gateway is serving.
func Start(ctx context.Context, cfg Config) (_ *Env, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &Env{cfg: cfg, cancel: cancel, errs: make(chan error, 16), Notes: map[string]int64{}, shards: map[string]*shard.Service{}}
	defer func() {
		if err != nil {
			_ = e.Close()
		}
	}()
	if err := e.prepareDirs(); err != nil {
		return nil, err
	}
	if e.Wings, err = listWings(e.BrainDir); err != nil {
		return nil, err
	}
	ls, err := e.listen()
	if err != nil {
		return nil, err
	}
	// The gateway's authorization server is the dev IdP's one confidential
	// client, as it is a company IdP's in production.
	clientSecret := randomSecret()
	if err := e.startIdP(runCtx, ls.idp, clientSecret); err != nil {
		return nil, err
	}
	if e.remote, err = e.gitRemote(); err != nil {
		return nil, err
	}
	ids, err := newIdentities(cfg.Host)
	if err != nil {
		return nil, err
	}
	e.shardTLS, e.addrs = ids.gateway, map[string]string{}
	var gwWings []config.WingConfig
	for i, w := range e.Wings {
		addr, err := e.startShard(runCtx, w, ls.shards[i], ids.shard)
		if err != nil {
			return nil, err
		}
		e.addrs[w] = addr
		gwWings = append(gwWings, config.WingConfig{Name: w, Address: addr, ServerName: "localhost"})
	}
	if err := e.startGateway(runCtx, ls, gwWings, clientSecret); err != nil {
		return nil, err
	}
	return e, nil
}

// DefaultTokenTTL is the lifetime of the demo tokens when Config.TokenTTL
// is 0.
const DefaultTokenTTL = 8 * time.Hour

// ErrUsage marks the errors of a bad command line: an invalid Config, a
// busy port (`brainstem dev` exits 2 on them).
var ErrUsage = errors.New("devenv: bad command line")

// usageError is an error of the command line (errors.Is ErrUsage).
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// Validate reports a Config the environment cannot run: a host that is
// not a loopback address, a negative port, a token lifetime under a
// minute. Its errors are ErrUsage's.
func (cfg Config) Validate() error {
	var errs []error
	if ip := net.ParseIP(cmp.Or(cfg.Host, "127.0.0.1")); ip == nil || !ip.IsLoopback() {
		errs = append(errs, usageError{fmt.Sprintf("devenv: --host %q is not a loopback address; the development environment never listens elsewhere", cfg.Host)})
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--port", cfg.GatewayPort}, {"--admin-port", cfg.AdminPort}, {"--idp-port", cfg.IdPPort}, {"--shard-port", cfg.ShardBasePort}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, usageError{fmt.Sprintf("devenv: %s %d is not a port (0 to 65535; 0 picks a free one)", p.flag, p.port)})
		}
	}
	if cfg.TokenTTL < 0 || cfg.TokenTTL > 0 && cfg.TokenTTL < time.Minute {
		errs = append(errs, usageError{fmt.Sprintf("devenv: --token-ttl %s: want at least 1m (the gateway's access tokens live at least a minute)", cfg.TokenTTL)})
	}
	return errors.Join(errs...)
}

// withDefaults fills the defaults of a valid Config.
func (cfg Config) withDefaults() Config {
	cfg.Host = cmp.Or(cfg.Host, "127.0.0.1")
	cfg.TokenTTL = cmp.Or(cfg.TokenTTL, DefaultTokenTTL)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AuditLog == nil {
		cfg.AuditLog = io.Discard
	}
	if cfg.Status == nil {
		cfg.Status = func(string) {}
	}
	return cfg
}

// listeners are the sockets of the environment, opened before anything
// starts so that a busy port fails fast with the flag to change.
type listeners struct {
	idp, public, admin net.Listener
	shards             []net.PacketConn // one per wing, in e.Wings order
}

func (e *Env) listen() (*listeners, error) {
	var ls listeners
	var busy []*PortError
	tcp := func(port int, what, flag string) net.Listener {
		ln, err := e.listenTCP(port, what, flag)
		var pe *PortError
		if errors.As(err, &pe) {
			busy = append(busy, pe)
		}
		return ln
	}
	ls.idp = tcp(e.cfg.IdPPort, "identity provider", "--idp-port")
	ls.public = tcp(e.cfg.GatewayPort, "gateway", "--port")
	ls.admin = tcp(e.cfg.AdminPort, "gateway admin endpoint", "--admin-port")
	for i, w := range e.Wings {
		port := 0
		if e.cfg.ShardBasePort != 0 {
			port = e.cfg.ShardBasePort + i
		}
		addr := net.JoinHostPort(e.cfg.Host, strconv.Itoa(port))
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			flag := "--shard-port"
			if i > 0 {
				flag = fmt.Sprintf("--shard-port, +%d", i)
			}
			busy = append(busy, &PortError{What: "shard of " + w + ", UDP", Flag: flag, Addr: addr, Err: err})
			continue
		}
		e.closers = append(e.closers, pc.Close)
		ls.shards = append(ls.shards, pc)
	}
	if len(busy) > 0 {
		return nil, &PortsError{Ports: busy}
	}
	return &ls, nil
}

// startIdP serves the development identity provider on ln.
func (e *Env) startIdP(ctx context.Context, ln net.Listener, clientSecret string) error {
	e.IssuerURL = "http://" + ln.Addr().String()
	idp, err := devidp.New(devidp.Config{Issuer: e.IssuerURL, ClientID: ClientID, ClientSecret: clientSecret,
		TokenTTL: e.cfg.TokenTTL, Logger: componentLogger(e.cfg.Logger, "devidp")})
	if err != nil {
		return fmt.Errorf("devenv: identity provider: %w", err)
	}
	e.idp = idp
	e.stopIdP = e.serveHTTP(ctx, ln, idpMux(idp, e.cfg.TokenTTL))
	return nil
}

// identities are the mTLS identities of the environment, from an internal
// CA in memory: nothing outlives the process.
type identities struct {
	shard   pki.Identity // every shard's
	gateway *tls.Config  // the gateway's client configuration
}

func newIdentities(host string) (*identities, error) {
	ca, err := pki.NewCA("brainstem dev CA", 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	shardCert, shardKey, err := ca.Issue(pki.RoleShard, []string{"localhost", host}, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	gwCert, gwKey, err := ca.Issue(pki.RoleGateway, []string{"gateway"}, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	gwTLS, err := pki.Identity{CA: ca.CertPEM(), Cert: gwCert, Key: gwKey}.ClientTLS("localhost")
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	return &identities{shard: pki.Identity{CA: ca.CertPEM(), Cert: shardCert, Key: shardKey}, gateway: gwTLS}, nil
}

// startGateway starts the gateway, with its authorization server in front
// of the development IdP, over the shards of wings.
func (e *Env) startGateway(ctx context.Context, ls *listeners, wings []config.WingConfig, clientSecret string) error {
	e.MCPURL = "http://" + ls.public.Addr().String() + "/mcp"
	e.AdminURL = "http://" + ls.admin.Addr().String()
	gcfg := config.DefaultConfig()
	gcfg.PublicURL = "http://" + ls.public.Addr().String()
	gcfg.Listen = ls.public.Addr().String()
	gcfg.AdminListen = ls.admin.Addr().String()
	gcfg.OIDC.Issuers = []sso.IssuerConfig{{URL: e.IssuerURL, Audiences: []string{ClientID}, Algorithms: []string{"RS256"}}}
	gcfg.Wings = wings
	gcfg.DefaultWing = e.cfg.DefaultWing
	gcfg.OAuth = oauth.Config{
		Enabled:        true,
		SigningKeyFile: filepath.Join(e.DataDir, "keys", "oauth.pem"),
		Upstream:       oauth.UpstreamConfig{Issuer: e.IssuerURL, ClientID: ClientID, ClientSecret: clientSecret},
		// Client metadata documents served on this machine, for testing
		// the flow without a public host.
		ClientMetadata: oauth.ClientMetadataConfig{AllowLoopback: true},
		// The development IdP vouches for its managed client with ID-JAGs
		// (its token exchange, or POST /dev/id-jag).
		Enterprise: oauth.EnterpriseConfig{IdPs: []oauth.EnterpriseIdP{{
			Issuer: e.IssuerURL, Clients: []string{devidp.DefaultAssertionClientID},
		}}},
	}
	if _, err := auth.LoadOrCreateKey(gcfg.OAuth.SigningKeyFile); err != nil {
		return fmt.Errorf("devenv: the gateway's signing key: %w", err)
	}
	// Short tokens (--token-ttl) for the gateway's own too, up to their
	// defaults.
	e.AccessTokenTTL = min(e.cfg.TokenTTL, oauthconfig.DefaultAccessTokenTTL)
	e.ServiceAccountTokenTTL = min(e.cfg.TokenTTL, oauthconfig.DefaultServiceAccountTokenTTL)
	gcfg.OAuth.AccessTokenTTL, gcfg.OAuth.ServiceAccountTokenTTL = e.AccessTokenTTL, e.ServiceAccountTokenTTL
	if err := e.credentials(&gcfg); err != nil {
		return err
	}
	gcfg.DrainGrace = 0 // nothing balances load in front of a development gateway
	if r := e.cfg.CallsPerSecond; r > 0 {
		gcfg.Limits.CallsPerSecond, gcfg.Limits.Burst = r, int(r)*2
	}
	if e.cfg.Gateway != nil {
		e.cfg.Gateway(&gcfg)
	}
	tr, err := e.tracing("brainstem-gateway")
	if err != nil {
		return err
	}
	e.cfg.Status("gateway: starting…")
	gw, err := gateway.New(ctx, gcfg, gateway.Options{Logger: componentLogger(e.cfg.Logger, "gateway"), AuditLog: e.cfg.AuditLog, ShardTLS: e.shardTLS,
		Tracing: tr})
	if err != nil {
		return fmt.Errorf("devenv: gateway: %w", err)
	}
	e.closers = append(e.closers, gw.Close)
	e.ConsoleURL = gw.ConsoleURL()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := gw.Serve(ctx, ls.public, ls.admin); err != nil && !errors.Is(err, context.Canceled) {
			e.errs <- fmt.Errorf("gateway: %w", err)
		}
	}()
	return nil
}

// startShard serves wing on pc with the shard identity id (a shard server
// without an admin endpoint) and returns its address.
func (e *Env) startShard(ctx context.Context, wing string, pc net.PacketConn, id pki.Identity) (string, error) {
	policy, policyFile, err := e.policy(wing)
	if err != nil {
		return "", err
	}
	start := time.Now()
	e.cfg.Status(wing + ": loading notes…")
	var loaded sync.Once
	progress := func(done, total int) {
		if e.cfg.Progress != nil {
			e.cfg.Progress(wing, done, total)
		}
		if done == total { // the store opens the wing's history next
			loaded.Do(func() { e.cfg.Status(wing + ": opening history…") })
		}
	}
	// Shard state lives in the data directory, not in a brain served in
	// place: `brainstem shard --stdio` on the same checkout keeps its own.
	scfg := shard.Config{
		Brain: e.BrainDir, Wing: wing, Policy: policy, PolicyFile: policyFile, PolicyPoll: e.cfg.PolicyPoll,
		StateDir: filepath.Join(e.DataDir, "state", wing), Version: e.cfg.Version,
		Logger: componentLogger(e.cfg.Logger, "shard"), Progress: progress, // the shard adds "wing"
	}
	scfg.History.AllowPurge = e.cfg.AllowPurge
	if e.remote != nil && wing == e.Wings[0] {
		scfg.Remote = e.remote
	}
	if e.cfg.Shard != nil {
		e.cfg.Shard(&scfg)
	}
	tr, err := e.tracing("brainstem-shard-" + wing)
	if err != nil {
		return "", err
	}
	srv, err := shardserver.New(ctx, shardserver.Config{Shard: scfg, KeyFile: filepath.Join(e.DataDir, "keys", wing+".pem"),
		Identity: id, DrainTimeout: 5 * time.Second, Tracing: tr})
	if err != nil {
		return "", fmt.Errorf("devenv: %w", err)
	}
	e.closers = append(e.closers, srv.Close)
	e.shards[wing] = srv.Service()
	if h, err := srv.Service().Health(ctx); err == nil {
		e.Notes[wing] = h.Notes
	}
	e.cfg.Status(fmt.Sprintf("%s: ready (%d notes, %s)", wing, e.Notes[wing], time.Since(start).Round(time.Millisecond)))
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := srv.Serve(ctx, pc, nil); err != nil {
			e.errs <- fmt.Errorf("shard %s: %w", wing, err)
		}
	}()
	return pc.LocalAddr().String(), nil
}

// gitRemote is the remote of Config.GitRemote (nil without one): a
// path is made absolute, and a bare repository with branch main is
// created there when nothing is.
func (e *Env) gitRemote() (*remote.Config, error) {
	url := e.cfg.GitRemote
	if url == "" || len(e.Wings) == 0 {
		return nil, nil
	}
	if !strings.Contains(url, "://") && !strings.Contains(url, "@") {
		abs, err := filepath.Abs(url)
		if err != nil {
			return nil, fmt.Errorf("devenv: --git-remote: %w", err)
		}
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			if _, err := gitserver.InitBare(filepath.Dir(abs), filepath.Base(abs)); err != nil {
				return nil, fmt.Errorf("devenv: --git-remote: create a bare repository at %s: %w", abs, err)
			}
		}
		url = abs
	}
	rc := &remote.Config{URL: url, Wing: e.Wings[0], SharedWings: e.Wings[1:], PushDelay: DevPushDelay, PullInterval: DevPullInterval}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("devenv: --git-remote: %w", err)
	}
	return rc, nil
}

// tracing is the tracing of one server (Config.Tracing), nil when off.
func (e *Env) tracing(service string) (*tracing.Tracing, error) {
	if e.cfg.Tracing == nil {
		return nil, nil
	}
	tr, err := e.cfg.Tracing(service)
	if err != nil {
		return nil, fmt.Errorf("devenv: tracing of %s: %w", service, err)
	}
	return tr, nil
}

// DialShard returns a brainstem/1 client for wing's shard holding the
// gateway's certificate, for diagnostics and for benchmarks that compare the
// gateway with a direct call. Close it when done.
func (e *Env) DialShard(wing string) (*proto.Client, error) {
	addr, ok := e.addrs[wing]
	if !ok {
		return nil, fmt.Errorf("devenv: no wing %q (have %v)", wing, e.Wings)
	}
	return proto.NewClient(addr, proto.ClientConfig{TLS: e.shardTLS.Clone(), Logger: e.cfg.Logger}), nil
}

// Token mints a development SSO token for email (groups optional).
func (e *Env) Token(email string, groups []string) (string, time.Time, error) {
	return e.idp.Mint(email, groups, e.cfg.TokenTTL)
}

// IDJAG is an identity assertion (ID-JAG) of the development IdP for email,
// addressed to the gateway's authorization server and its MCP endpoint,
// for the client devidp.DefaultAssertionClientID: what a company IdP's
// token exchange gives a client it manages (enterprise-managed
// authorization). The gateway trusts the development IdP for these
// (oauth.enterprise).
func (e *Env) IDJAG(email string) (string, time.Time, error) {
	return e.idp.MintIDJAG(devidp.IDJAGClaims{Email: email, Audience: strings.TrimSuffix(e.MCPURL, "/mcp"), Resource: e.MCPURL, Scope: oauth.Scope})
}

// idpMux serves the identity provider and POST /dev/token, which lets
// `brainstem dev token` (another process) get a token from it. It adds no
// power: the provider's login page already lets anyone on this machine sign
// in as anyone. Like the provider, it answers only requests addressed to a
// loopback name (devidp.LoopbackOnly).
func idpMux(idp *devidp.Provider, ttl time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", idp.Handler())
	// The issuer URL itself, as the banner prints it, answers with the
	// discovery document rather than a 404.
	mux.Handle("GET /{$}", devidp.LoopbackOnly(http.RedirectHandler("/.well-known/openid-configuration", http.StatusFound)))
	mux.Handle("POST /dev/token", devidp.LoopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, devidp.MaxFormBytes)
		email, err := auth.CanonicalEmail(r.FormValue("email"))
		if err != nil {
			http.Error(w, "email is required, e.g. email=bob@example.com: "+err.Error(), http.StatusBadRequest)
			return
		}
		var groups []string
		for _, g := range strings.Split(r.FormValue("groups"), ",") {
			if g = strings.TrimSpace(g); g != "" {
				groups = append(groups, g)
			}
		}
		tok, exp, err := idp.Mint(email, groups, ttl)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"token\":%q,\"expires_at\":%q}\n", tok, exp.UTC().Format(time.RFC3339))
	})))
	// POST /dev/id-jag is the token exchange without the client's secret
	// and ID token: an ID-JAG for email, audience and resource. No more
	// power than /dev/token: the ID token it would exchange is one away.
	mux.Handle("POST /dev/id-jag", devidp.LoopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, devidp.MaxFormBytes)
		var (
			tok string
			exp time.Time
			err = errors.New("audience is required: the gateway's URL")
		)
		if r.FormValue("audience") != "" {
			tok, exp, err = idp.MintIDJAG(devidp.IDJAGClaims{Email: r.FormValue("email"), Audience: r.FormValue("audience"),
				Resource: r.FormValue("resource"), Scope: r.FormValue("scope")})
		}
		if err != nil {
			http.Error(w, "want email=, audience= (the gateway's URL) and optionally resource= and scope=: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"id_jag\":%q,\"expires_at\":%q}\n", tok, exp.UTC().Format(time.RFC3339))
	})))
	return mux
}

// ServeIdP serves the development identity provider alone on ln (a
// loopback listener), with POST /dev/token, until ctx ends; it returns the
// issuer URL at once and reports on done when the server has stopped. Each
// call makes a new signing key, so a restarted process is an identity
// provider that rolled its key (what `brainstem dev idp` runs, and what the
// fault suite restarts).
func ServeIdP(ctx context.Context, ln net.Listener, ttl time.Duration, logger *slog.Logger) (issuer string, done <-chan error, err error) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return "", nil, fmt.Errorf("%w (listener %s)", devidp.ErrNotLoopback, ln.Addr())
	}
	if ttl <= 0 {
		ttl = 8 * time.Hour
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	issuer = "http://" + addr.String()
	idp, err := devidp.New(devidp.Config{Issuer: issuer, ClientID: ClientID, TokenTTL: ttl, Logger: logger})
	if err != nil {
		return "", nil, fmt.Errorf("devenv: identity provider: %w", err)
	}
	srv := &http.Server{Handler: idpMux(idp, ttl), ReadHeaderTimeout: 10 * time.Second}
	ch := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		ch <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return issuer, ch, nil
}

func randomSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// IdP returns the development identity provider (tests disable accounts
// with it).
func (e *Env) IdP() *devidp.Provider { return e.idp }

// StopIdP stops the identity provider's HTTP server, as an outage of the
// company IdP would: its port then refuses connections. The gateway's
// sign-in fails from then on (unless it already discovered the IdP, in
// which case the code exchange fails); tokens already issued keep working
// until they expire. `brainstem doctor` tests use it.
func (e *Env) StopIdP() error { return e.stopIdP() }

// Err reports the first failure of a background server, if any.
func (e *Env) Err() <-chan error { return e.errs }

// Close stops every server and removes a temporary data directory.
func (e *Env) Close() error {
	e.cancel()
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		if err := e.closers[i](); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	e.closers = nil
	e.wg.Wait()
	if e.tempData && e.DataDir != "" {
		errs = append(errs, os.RemoveAll(e.DataDir))
	}
	return errors.Join(errs...)
}

// serveHTTP serves h on ln until Close; the returned function stops it
// earlier (once; later calls and Close do nothing more).
func (e *Env) serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) func() error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stop := sync.OnceValue(func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	e.closers = append(e.closers, stop)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.errs <- err
		}
	}()
	return stop
}

func (e *Env) listenTCP(port int, what, flag string) (net.Listener, error) {
	addr := net.JoinHostPort(e.cfg.Host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &PortError{What: what, Flag: flag, Addr: addr, Err: err}
	}
	e.closers = append(e.closers, func() error { _ = ln.Close(); return nil })
	return ln, nil
}

// prepareDirs settles the data directory, the brain and the policies.
func (e *Env) prepareDirs() error {
	if e.cfg.Data != "" {
		if err := os.MkdirAll(e.cfg.Data, 0o700); err != nil {
			return fmt.Errorf("devenv: data dir: %w", err)
		}
		e.DataDir = e.cfg.Data
	} else {
		d, err := os.MkdirTemp("", "brainstem-dev-")
		if err != nil {
			return fmt.Errorf("devenv: %w", err)
		}
		e.DataDir, e.tempData = d, true
	}
	if e.cfg.Brain != "" {
		abs, err := filepath.Abs(e.cfg.Brain)
		if err != nil {
			return fmt.Errorf("devenv: brain: %w", err)
		}
		if st, err := os.Stat(filepath.Join(abs, "wiki")); err != nil || !st.IsDir() {
			return fmt.Errorf("devenv: %s is not a brain: it has no wiki/ directory", abs)
		}
		e.BrainDir = abs
	} else {
		e.BrainDir = filepath.Join(e.DataDir, "brain")
		if _, err := os.Stat(e.BrainDir); errors.Is(err, fs.ErrNotExist) {
			if err := os.CopyFS(e.BrainDir, examples.Brain()); err != nil {
				return fmt.Errorf("devenv: copying the sample brain: %w", err)
			}
		}
	}
	pol := filepath.Join(e.DataDir, "policies")
	if _, err := os.Stat(pol); errors.Is(err, fs.ErrNotExist) {
		if err := os.CopyFS(pol, examples.Policies()); err != nil {
			return fmt.Errorf("devenv: copying the dev policies: %w", err)
		}
	}
	return nil
}

// policy returns the policy file <data>/policies/<wing>.yaml, which the
// shard reads and follows as it is edited; a wing without one (an existing
// brain's own wings) lets every signed-in developer curate it, and the
// demo service account write it.
func (e *Env) policy(wing string) (auth.Policy, string, error) {
	p := e.PolicyPath(wing)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return auth.Policy{Curators: []string{"*"}, Writers: []string{"client:" + ServiceAccountID}}, "", nil
	}
	if _, err := auth.LoadPolicy(p); err != nil {
		return auth.Policy{}, "", fmt.Errorf("devenv: %w", err)
	}
	return auth.Policy{}, p, nil
}

// PolicyPath is the policy file of a wing: edit it and the wing's shard
// enforces the new policy from its next check (or ReloadPolicy).
func (e *Env) PolicyPath(wing string) string {
	return filepath.Join(e.DataDir, "policies", wing+".yaml")
}

// ReloadPolicy makes wing's shard check its policy file now (what it does
// on its own every few seconds, and on SIGHUP in production).
func (e *Env) ReloadPolicy(wing string) (bool, error) {
	svc, ok := e.shards[wing]
	if !ok {
		return false, fmt.Errorf("devenv: no wing %q (have %v)", wing, e.Wings)
	}
	return svc.ReloadPolicy(false)
}

func listWings(brain string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(brain, "wiki"))
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	var wings []string
	for _, d := range ents {
		if d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			wings = append(wings, d.Name())
		}
	}
	if len(wings) == 0 {
		return nil, fmt.Errorf("devenv: %s has no wings (no directories under wiki/)", brain)
	}
	sort.Strings(wings)
	return wings, nil
}
