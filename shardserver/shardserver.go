// Package shardserver runs one wing the way `brainstem shard` does: the
// wing's shard.Service served over brainstem/1 (QUIC, mutual TLS) with its
// admin endpoint (/healthz, /readyz, /metrics with the Go and process
// collectors and the shard's own series), policy reloads on request, and a
// drain on shutdown. It is the shard's counterpart of gateway.Serve, and it
// lives outside shard/ so that the shard packages never import net/http.
package shardserver

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quic-go/quic-go"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/stdio"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
)

// DefaultDrainTimeout bounds the wait for calls in flight at shutdown.
const DefaultDrainTimeout = 20 * time.Second

// Config is a shard server: the wing and what serving it over QUIC needs.
type Config struct {
	// Shard is the wing served. Its Metrics is set by New; its Key, when
	// empty, comes from KeyFile.
	Shard shard.Config
	// KeyFile is the PEM file of the shard-token signing key, created if
	// missing; "" makes a new key each start (the gateway then re-mints).
	KeyFile string
	// TLS names the shard's mTLS identity: a shard-role certificate, its
	// key and the internal CA that signs gateway certificates. The
	// stateless-reset key is derived from the key, so it survives restarts
	// and differs per wing.
	TLS pki.Files
	// Identity, when its Cert is set, is the identity in memory, used
	// instead of TLS (brainstem dev holds its certificates in memory).
	Identity pki.Identity
	// DrainTimeout bounds the wait for calls in flight at shutdown;
	// 0 → DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Reload, when set, makes the shard re-read its policy file on every
	// value (brainstem shard sends SIGHUP there).
	Reload <-chan os.Signal
	// Tracing, when on, makes each brainstem/1 request a server span below
	// the gateway's (the request's trace trailer) and the store and index
	// work child spans; nil or off traces nothing. Close flushes it and
	// shuts it down.
	Tracing *tracing.Tracing
}

// ErrConfig wraps every problem Validate reports.
var ErrConfig = errors.New("shardserver: invalid configuration")

// Validate reports every problem of the configuration at once: the brain,
// the wing, the policy file and the TLS files are required, and the policy
// must load.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if c.Shard.Brain == "" || c.Shard.Wing == "" {
		bad("--brain and --wing are required")
	}
	var missing []string
	if len(c.Identity.Cert) == 0 {
		for _, f := range []struct{ flag, path string }{{"--tls-ca", c.TLS.CA}, {"--tls-cert", c.TLS.Cert}, {"--tls-key", c.TLS.Key}} {
			if f.path == "" {
				missing = append(missing, f.flag)
			}
		}
	}
	if p := c.Shard.Policy; c.Shard.PolicyFile == "" && len(p.Readers)+len(p.Writers)+len(p.Curators) == 0 {
		missing = append(missing, "--policy")
	}
	if len(missing) > 0 {
		bad("%v required to serve over QUIC (or use --stdio)", missing)
	}
	if c.Shard.HitCacheBytes < -1 {
		bad("--hit-cache-bytes %d: a bound in bytes, 0 for the default or -1 for no cache", c.Shard.HitCacheBytes)
	}
	if c.Shard.PolicyFile != "" {
		if _, err := auth.LoadPolicy(c.Shard.PolicyFile); err != nil {
			bad("%v", err)
		}
	}
	return errors.Join(errs...)
}

// Server is one wing served over QUIC with its admin endpoint.
type Server struct {
	cfg      Config
	svc      *shard.Service
	quic     *proto.Server
	admin    http.Handler
	log      *slog.Logger
	draining atomic.Bool
	served   atomic.Bool
	stop     context.CancelFunc // ends Serve; set by Serve
	done     chan struct{}      // closed when Serve returns
	mu       sync.Mutex
	closed   bool
}

// New loads the TLS identity and the signing key, opens the wing (building
// or restoring its index) and prepares the servers. Nothing listens until
// Serve.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	log := cmp.Or(cfg.Shard.Logger, slog.New(slog.DiscardHandler))
	tlsConf, resetKey, err := serverTLS(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Shard.Key.Private == nil {
		if cfg.Shard.Key, err = auth.LoadOrCreateKey(cfg.KeyFile); err != nil {
			return nil, err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.Shard.Metrics = reg
	svc, err := shard.Open(ctx, cfg.Shard)
	if err != nil {
		return nil, err
	}
	reg.MustRegister(skippedFiles(cfg.Shard.Wing, svc)...)
	reg.MustRegister(writesStopped(cfg.Shard.Wing, svc))
	s := &Server{cfg: cfg, svc: svc, log: log, done: make(chan struct{})}
	s.quic = proto.NewServer(svc, proto.ServerConfig{TLS: tlsConf, Logger: log, StatelessResetKey: resetKey, Tracer: cfg.Tracing.RootTracer()})
	s.admin = s.adminHandler(reg)
	return s, nil
}

// serverTLS loads the shard's identity and derives its stateless-reset key
// from the identity's private key.
func serverTLS(cfg Config) (*tls.Config, *quic.StatelessResetKey, error) {
	id := cfg.Identity
	if len(id.Cert) == 0 {
		var err error
		if id, err = pki.ReadFiles(cfg.TLS); err != nil {
			return nil, nil, fmt.Errorf("shardserver: reading TLS material: %w", err)
		}
	}
	tc, err := id.ServerTLS()
	if err != nil {
		return nil, nil, fmt.Errorf("shardserver: %w", err)
	}
	secret, err := pki.PrivateKeyDER(id.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("shardserver: %w", err)
	}
	rk, err := proto.DeriveStatelessResetKey(secret, "wing "+cfg.Shard.Wing)
	if err != nil {
		return nil, nil, fmt.Errorf("shardserver: %w", err)
	}
	return tc, rk, nil
}

// Service is the wing served.
func (s *Server) Service() *shard.Service { return s.svc }

// Serve serves brainstem/1 on pc and the admin endpoint on admin (nil: none)
// until ctx ends or Close is called, then drains: /readyz answers 503,
// new requests are refused and clients told to go away, calls in flight
// finish (at most DrainTimeout), and the admin server stops. It may be
// called once.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, admin net.Listener) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("shardserver: Serve called twice")
	}
	defer close(s.done)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("shardserver: Serve after Close")
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.mu.Unlock()
	errc := make(chan error, 2)
	// The QUIC server stops by Shutdown (graceful) below, never by
	// cancellation (immediate), which would cut the calls in flight.
	go func() { errc <- s.quic.Serve(context.WithoutCancel(ctx), pc) }()
	var adminSrv *http.Server
	if admin != nil {
		adminSrv = &http.Server{Handler: s.admin, ReadHeaderTimeout: 5 * time.Second}
		go func() { errc <- adminSrv.Serve(admin) }()
	}
	go s.watchReloads(ctx)
	var serveErr error
	select {
	case <-s.quic.Ready():
		attrs := []any{"wing", s.cfg.Shard.Wing, "listen", pc.LocalAddr().String(), "version", s.cfg.Shard.Version}
		if admin != nil {
			attrs = append(attrs, "admin", admin.Addr().String())
		}
		s.log.Info("shard serving", attrs...)
		select {
		case <-ctx.Done():
		case serveErr = <-errc:
		}
	case serveErr = <-errc:
	}
	return s.drain(serveErr, adminSrv)
}

// ListenAndServe listens for QUIC on the UDP address addr and, unless
// adminAddr is "", for the admin endpoint on the TCP address adminAddr,
// then serves them (Serve). A listen error names the flag to change.
func (s *Server) ListenAndServe(ctx context.Context, addr, adminAddr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("shard: listen %s: %w (change --listen)", addr, err)
	}
	defer pc.Close()
	var admin net.Listener
	if adminAddr != "" {
		if admin, err = net.Listen("tcp", adminAddr); err != nil {
			return fmt.Errorf("shard: admin listener %s: %w (change --admin-listen)", adminAddr, err)
		}
	}
	return s.Serve(ctx, pc, admin)
}

// drain stops the QUIC server gracefully (at most DrainTimeout) and the
// admin server, after a failure of either (serveErr) or at the end.
func (s *Server) drain(serveErr error, adminSrv *http.Server) error {
	s.draining.Store(true)
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	err := s.quic.Shutdown(dctx)
	if adminSrv != nil {
		_ = adminSrv.Shutdown(dctx)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, context.Canceled) {
		return fmt.Errorf("shardserver: serve: %w", serveErr)
	}
	if err != nil {
		return fmt.Errorf("shardserver: drain: %w", err)
	}
	s.log.Info("shard drained", "wing", s.cfg.Shard.Wing)
	return nil
}

// watchReloads re-reads the policy file on every value of cfg.Reload.
func (s *Server) watchReloads(ctx context.Context) {
	if s.cfg.Reload == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-s.cfg.Reload:
			s.log.Info("re-reading the policy file", "signal", fmt.Sprint(sig), "path", s.cfg.Shard.PolicyFile)
			_, _ = s.svc.ReloadPolicy(true) // the outcome is logged
		}
	}
}

// Close ends Serve if it is running, waits for it to drain, then closes the
// wing (bringing _index.md up to date and saving the index snapshot).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-s.done
	}
	err := s.svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	return errors.Join(err, s.cfg.Tracing.Shutdown(ctx))
}

// traceFlushTimeout bounds Close's export of the spans not yet sent.
const traceFlushTimeout = 5 * time.Second

// adminHandler answers the probes from the wing's health (/readyz also
// says 503 while draining) and /metrics from reg.
func (s *Server) adminHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	probe := func(w http.ResponseWriter, r *http.Request) {
		h, err := s.svc.Health(r.Context())
		switch {
		case err != nil || !h.Ready:
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		case r.URL.Path == "/readyz" && s.draining.Load():
			http.Error(w, "draining", http.StatusServiceUnavailable)
		default:
			stopped := s.svc.WritesStopped()
			switch {
			case stopped == "":
				fmt.Fprintf(w, "ok %s %d notes\n", h.Wing, h.Notes)
			case r.URL.Path == "/readyz" && r.URL.Query().Has("writes"):
				http.Error(w, "not ready for writes: "+stopped, http.StatusServiceUnavailable)
			default: // reads go on: the pod stays in its Service
				fmt.Fprintf(w, "ok %s %d notes; not ready for writes: %s\n", h.Wing, h.Notes, stopped)
			}
		}
	}
	mux.HandleFunc("GET /healthz", probe)
	mux.HandleFunc("GET /readyz", probe)
	mux.HandleFunc("POST /remote/webhook", s.webhook)
	return mux
}

// writesStopped exports whether the wing refuses writes (its history's
// committer stopped: /readyz says why).
func writesStopped(wing string, svc *shard.Service) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "brainstem_shard_writes_stopped", ConstLabels: prometheus.Labels{"wing": wing},
		Help: "1 while the wing refuses writes because its history's committer stopped on a change it can never commit (/readyz and `brainstem check` give the path and the fix), else 0."}, func() float64 {
		if svc.WritesStopped() != "" {
			return 1
		}
		return 0
	})
}

// skippedFiles exports the wing's files that are not loaded, by kind.
func skippedFiles(wing string, svc *shard.Service) []prometheus.Collector {
	var out []prometheus.Collector
	for _, kind := range store.SkipKinds() {
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "brainstem_shard_skipped_files", ConstLabels: prometheus.Labels{"wing": wing, "kind": kind},
			Help: "Files of the wing's wiki directory the shard does not load (see its warning logs and `brainstem check`), by kind: name, place, type, size, read."},
			func() float64 { return float64(svc.SkippedFiles(kind)) }))
	}
	return out
}

// ServeStdio serves the wing of cfg over MCP on in and out for one
// developer (`brainstem shard --stdio`): every capability, writes authored
// as email, or git's user.email when email is "" (stdio.DefaultEmail). The
// signing key is a new one (no gateway ever sees its tokens). An email the
// email rule refuses is an ErrConfig.
func ServeStdio(ctx context.Context, cfg shard.Config, email string, in io.Reader, out io.Writer) error {
	author, err := email, error(nil)
	if cfg.Brain == "" || cfg.Wing == "" {
		return fmt.Errorf("%w: --brain and --wing are required", ErrConfig)
	}
	if email == "" {
		if author, err = stdio.DefaultEmail(ctx); err != nil {
			return fmt.Errorf("%w: shard --stdio: no --email and %v", ErrConfig, err)
		}
	} else if author, err = auth.CanonicalEmail(email); err != nil {
		return fmt.Errorf("%w: shard --stdio: --email %q: %v", ErrConfig, email, err)
	}
	if cfg.Key, err = auth.GenerateKey(); err != nil {
		return err
	}
	svc, err := shard.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.Close()
	caller := tools.Caller{Email: author, Caps: stdio.AllCaps}
	return stdio.Serve(ctx, svc.Tools(), caller, in, out, cfg.Logger)
}
