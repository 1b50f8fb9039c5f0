// Package devenv runs Brainstem on one machine for development: the embedded
// identity provider, one shard per wing and a gateway, all on loopback, over a
// working copy of a brain. It is what `brainstem dev` starts and what the
// end-to-end tests drive.
package devenv

import (
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

	"github.com/quic-go/quic-go"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/deploy/examples"
	"github.com/brainstem/brainstem/gateway"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
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

	TokenTTL time.Duration // lifetime of the demo tokens; default 8h
	Version  string
	Logger   *slog.Logger // everything the servers log
	AuditLog io.Writer    // the gateway's audit lines; nil discards them
	// Gateway, when set, adjusts the gateway's configuration before it
	// starts (benchmarks raise the per-user rate limit with it).
	Gateway func(*gateway.Config)
	// Shard, when set, adjusts each shard's configuration before it opens
	// (benchmarks raise the note size limit with it).
	Shard func(*shard.Config)
	// Progress is called while a wing's index builds.
	Progress func(wing string, done, total int)
	// PolicyPoll is how often a shard checks its policy file
	// (<data>/policies/<wing>.yaml) for edits: 0 → the shard default,
	// negative → only ReloadPolicy (tests).
	PolicyPoll time.Duration
}

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

// Env is a running development environment.
type Env struct {
	MCPURL    string   // the gateway's MCP endpoint
	IssuerURL string   // the identity provider
	AdminURL  string   // the gateway's metrics and probes
	BrainDir  string   // the brain being served
	DataDir   string   // state directory
	Wings     []string // sorted
	Notes     map[string]int64

	idp      *devidp.Provider
	stopIdP  func() error
	shardTLS *tls.Config       // the gateway's mTLS client identity
	addrs    map[string]string // wing → shard address
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
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if ip := net.ParseIP(cfg.Host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("devenv: host %q is not a loopback address; the development environment never listens elsewhere", cfg.Host)
	}
	if cfg.TokenTTL == 0 {
		cfg.TokenTTL = 8 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AuditLog == nil {
		cfg.AuditLog = io.Discard
	}
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
	wings, err := listWings(e.BrainDir)
	if err != nil {
		return nil, err
	}
	e.Wings = wings

	// Listeners first, so a busy port fails fast with the flag to change.
	idpLn, err := e.listenTCP(cfg.IdPPort, "identity provider", "--idp-port")
	if err != nil {
		return nil, err
	}
	pubLn, err := e.listenTCP(cfg.GatewayPort, "gateway", "--port")
	if err != nil {
		return nil, err
	}
	adminLn, err := e.listenTCP(cfg.AdminPort, "gateway admin endpoint", "--admin-port")
	if err != nil {
		return nil, err
	}
	shardConns := make([]net.PacketConn, len(wings))
	for i, w := range wings {
		port := 0
		if cfg.ShardBasePort != 0 {
			port = cfg.ShardBasePort + i
		}
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(port))
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, &PortError{What: "shard " + w, Flag: "--shard-port", Addr: addr, Err: err}
		}
		e.closers = append(e.closers, pc.Close)
		shardConns[i] = pc
	}

	// Identity provider.
	e.IssuerURL = "http://" + idpLn.Addr().String()
	// The gateway's authorization server is the dev IdP's one confidential
	// client, as it is a company IdP's in production.
	clientSecret := randomSecret()
	idp, err := devidp.New(devidp.Config{Issuer: e.IssuerURL, ClientID: ClientID, ClientSecret: clientSecret,
		TokenTTL: cfg.TokenTTL, Logger: cfg.Logger.With("component", "devidp")})
	if err != nil {
		return nil, fmt.Errorf("devenv: identity provider: %w", err)
	}
	e.idp = idp
	e.stopIdP = e.serveHTTP(runCtx, idpLn, idpMux(idp, cfg.TokenTTL))

	// Internal CA and certificates, in memory: nothing outlives the process.
	ca, err := pki.NewCA("brainstem dev CA", 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	names := []string{"localhost", cfg.Host}
	shardCert, shardKey, err := ca.Issue(pki.RoleShard, names, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	gwCert, gwKey, err := ca.Issue(pki.RoleGateway, []string{"gateway"}, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	shardTLS, err := pki.ServerTLS(ca.CertPEM(), shardCert, shardKey)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	gwTLS, err := pki.ClientTLS(ca.CertPEM(), gwCert, gwKey, "localhost")
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}
	resetSecret, err := pki.PrivateKeyDER(shardKey)
	if err != nil {
		return nil, fmt.Errorf("devenv: %w", err)
	}

	// Shards.
	e.shardTLS, e.addrs = gwTLS, map[string]string{}
	var gwWings []gateway.WingConfig
	for i, w := range wings {
		resetKey, err := proto.DeriveStatelessResetKey(resetSecret, "wing "+w)
		if err != nil {
			return nil, fmt.Errorf("devenv: %w", err)
		}
		addr, err := e.startShard(runCtx, w, shardConns[i], shardTLS, resetKey)
		if err != nil {
			return nil, err
		}
		e.addrs[w] = addr
		gwWings = append(gwWings, gateway.WingConfig{Name: w, Address: addr, ServerName: "localhost"})
	}

	// Gateway.
	e.MCPURL = "http://" + pubLn.Addr().String() + "/mcp"
	e.AdminURL = "http://" + adminLn.Addr().String()
	gcfg := gateway.DefaultConfig()
	gcfg.PublicURL = "http://" + pubLn.Addr().String()
	gcfg.Listen = pubLn.Addr().String()
	gcfg.AdminListen = adminLn.Addr().String()
	gcfg.OIDC.Issuers = []sso.IssuerConfig{{URL: e.IssuerURL, Audiences: []string{ClientID}, Algorithms: []string{"RS256"}}}
	gcfg.Wings = gwWings
	gcfg.OAuth = oauth.Config{
		Enabled:        true,
		SigningKeyFile: filepath.Join(e.DataDir, "keys", "oauth.pem"),
		Upstream:       oauth.UpstreamConfig{Issuer: e.IssuerURL, ClientID: ClientID, ClientSecret: clientSecret},
		// Client metadata documents served on this machine, for testing
		// the flow without a public host.
		ClientMetadata: oauth.ClientMetadataConfig{AllowLoopback: true},
	}
	if _, err := auth.LoadOrCreateKey(gcfg.OAuth.SigningKeyFile); err != nil {
		return nil, fmt.Errorf("devenv: the gateway's signing key: %w", err)
	}
	gcfg.DrainGrace = 0 // nothing balances load in front of a development gateway
	if cfg.Gateway != nil {
		cfg.Gateway(&gcfg)
	}
	gw, err := gateway.New(runCtx, gcfg, gateway.Options{Logger: cfg.Logger.With("component", "gateway"), AuditLog: cfg.AuditLog, ShardTLS: gwTLS})
	if err != nil {
		return nil, fmt.Errorf("devenv: gateway: %w", err)
	}
	e.closers = append(e.closers, gw.Close)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := gw.Serve(runCtx, pubLn, adminLn); err != nil && !errors.Is(err, context.Canceled) {
			e.errs <- fmt.Errorf("gateway: %w", err)
		}
	}()
	return e, nil
}

func (e *Env) startShard(ctx context.Context, wing string, pc net.PacketConn, tlsConf *tls.Config, resetKey *quic.StatelessResetKey) (string, error) {
	policy, policyFile, err := e.policy(wing)
	if err != nil {
		return "", err
	}
	key, err := auth.LoadOrCreateKey(filepath.Join(e.DataDir, "keys", wing+".pem"))
	if err != nil {
		return "", fmt.Errorf("devenv: shard key of %s: %w", wing, err)
	}
	var progress func(done, total int)
	if e.cfg.Progress != nil {
		progress = func(done, total int) { e.cfg.Progress(wing, done, total) }
	}
	// Shard state lives in the data directory, not in a brain served in
	// place: `brainstem shard --stdio` on the same checkout keeps its own.
	scfg := shard.Config{
		Brain: e.BrainDir, Wing: wing, Policy: policy, PolicyFile: policyFile, PolicyPoll: e.cfg.PolicyPoll,
		StateDir: filepath.Join(e.DataDir, "state", wing), Key: key, Version: e.cfg.Version,
		Logger: e.cfg.Logger.With("component", "shard"), Progress: progress, // the shard adds "wing"
	}
	if e.cfg.Shard != nil {
		e.cfg.Shard(&scfg)
	}
	svc, err := shard.Open(ctx, scfg)
	if err != nil {
		return "", fmt.Errorf("devenv: %w", err)
	}
	e.closers = append(e.closers, svc.Close)
	e.shards[wing] = svc
	if h, err := svc.Health(ctx); err == nil {
		e.Notes[wing] = h.Notes
	}
	srv := proto.NewServer(svc, proto.ServerConfig{TLS: tlsConf, StatelessResetKey: resetKey,
		Logger: e.cfg.Logger.With("component", "proto", "wing", wing)})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := srv.Serve(ctx, pc); err != nil && !errors.Is(err, context.Canceled) {
			e.errs <- fmt.Errorf("shard %s: %w", wing, err)
		}
	}()
	e.closers = append(e.closers, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return pc.LocalAddr().String(), nil
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

// idpMux serves the identity provider and POST /dev/token, which lets
// `brainstem dev token` (another process) get a token from it. It adds no
// power: the provider's login page already lets anyone on this machine sign
// in as anyone. Like the provider, it answers only requests addressed to a
// loopback name (devidp.LoopbackOnly).
func idpMux(idp *devidp.Provider, ttl time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", idp.Handler())
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
// brain's own wings) lets every signed-in developer curate it.
func (e *Env) policy(wing string) (auth.Policy, string, error) {
	p := e.PolicyPath(wing)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return auth.Policy{Curators: []string{"*"}}, "", nil
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
