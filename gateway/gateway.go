package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quic-go/quic-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/console"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/device"
	"github.com/brainstem/brainstem/gateway/oauth/idjag"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
	"github.com/brainstem/brainstem/gateway/surfaces"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/internal/workers"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/search"
)

// Version is reported in the MCP server info.
const Version = "0.1.0"

// serverName is the MCP server name.
const serverName = "brainstem"

// identityVerifier verifies an SSO bearer token; *sso.Verifier satisfies it.
type identityVerifier interface {
	Verify(ctx context.Context, raw string) (auth.Identity, error)
}

// Options are the gateway's runtime dependencies.
type Options struct {
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// AuditLog receives one JSON line per tool call; nil means os.Stdout
	// (the container log), so the audit trail is never silently dropped.
	AuditLog io.Writer
	// Now is the clock for token expiry and rate limits; nil means time.Now.
	Now func() time.Time
	// ShardTLS, when set, is the mTLS client configuration for every shard
	// (ServerName is set per wing) and overrides cfg.Shards.TLS files.
	ShardTLS *tls.Config
	// Registry receives the metrics; nil means a new private registry.
	Registry *prometheus.Registry
	// HTTPClient, when set, is used by the SSO verifier (discovery, JWKS).
	HTTPClient *http.Client
	// Tracing, when on, makes each /mcp request a server span and each
	// shard request a client span (traces.go); nil or off traces nothing.
	// Close flushes it and shuts it down.
	Tracing *tracing.Tracing
}

// Gateway is the public MCP endpoint in front of every wing.
type Gateway struct {
	cfg      config.Config
	log      *slog.Logger
	now      func() time.Time
	verifier identityVerifier // the bearer tokens /mcp accepts: the IdP's and the facade's
	facade   *oauth.Server    // the gateway's authorization server; nil when off
	console  *console.Console // the curators' console; nil when the facade is off
	wings    []*route.Wing
	byName   map[string]*route.Wing
	grants   *route.GrantCache
	shards   *route.Sender // sends to a wing with the caller's shard token (route.Sender.Do)
	cat      atomic.Pointer[route.Catalog]
	// replica holds each wing's statistics of recent search terms at the
	// wing's index generation, so a cross-wing search skips the statistics
	// round trip while a wing has not changed (search.Replica).
	replica    *search.Replica
	parses     atomic.Int64   // decodes of /mcp bodies, params and arguments (a test counts them)
	searchSpec *toolspec.Spec // the search tool's, to decode a cross-wing query once
	refresh    *refresher
	surfaces   *surfaces.Surfaces // resources, prompts, cross links (gateway/surfaces)
	watch      *surfaces.Watcher  // change notifications
	mcp        *server.MCPServer
	mcpHTTP    *server.StreamableHTTPServer
	metrics    *metrics
	registry   *prometheus.Registry
	// tracing is Options.Tracing, flushed and shut down by Close.
	tracing *tracing.Tracing
	// tracer starts the /mcp server spans; nil when tracing is off.
	tracer         trace.Tracer
	traceSensitive bool // identities and arguments may go into attributes
	audit          *auditLog

	edge    *edge.Edge // the /mcp edge: its checks, limiters and connections (gateway/edge)
	origins map[string]bool

	mcpPath      string
	metadataURL  string
	metadataJSON []byte
	public       http.Handler
	admin        http.Handler
	publicSrv    *http.Server

	leanPath      *rpc.LeanServer // tools/call without mcp-go's transport (gateway/rpc)
	fanoutWorkers *workers.Pool   // the goroutines of cross-wing steps, kept with their stacks
	test          testHooks       // set only by the ForTest methods (testhooks.go)

	ended        *offboard.List    // sign-ins an operator ended (offboarding.go)
	endedWatcher *offboard.Watcher // follows signins.ended_file; nil without one
	adminToken   []byte            // SHA-256 of the operator's token; nil: /signins off
	stopSignins  context.CancelFunc
	signinsDone  chan struct{}

	draining    atomic.Bool // Serve was told to stop; answers close their connections
	stopRefresh context.CancelFunc
	refreshDone chan struct{}
	watchDone   chan struct{}
	closeOnce   sync.Once
	closeErr    error
	served      atomic.Bool

	// peerHandler answers the other replicas' device sign-in steps
	// (gateway/oauth/device); nil when the authorization server is off.
	peerHandler http.Handler
}

// New builds a gateway: it verifies SSO tokens with cfg.OIDC, connects
// (lazily) to every wing's shard, fetches their tool descriptors (a shard
// that cannot be reached yet does not fail New; it is retried in the
// background and /readyz reports it), and registers the tools.
func New(ctx context.Context, cfg config.Config, opt Options) (*Gateway, error) {
	if err := cfg.ValidateWith(opt.ShardTLS == nil); err != nil {
		return nil, err
	}
	oidc := cfg.OIDC
	oidc.Now, oidc.Logger, oidc.HTTPClient = opt.Now, opt.Logger, cmp.Or(opt.HTTPClient, oidc.HTTPClient)
	v, err := sso.NewVerifier(ctx, oidc)
	if err != nil {
		return nil, fmt.Errorf("gateway: oidc: %w", err)
	}
	clients, base, err := dialShards(cfg, opt)
	if err != nil {
		return nil, err
	}
	g, err := newGateway(cfg, opt, v, clients)
	if err == nil {
		g.surfaces.Cursors, err = surfaces.NewCursorSigner(base, g.log)
	}
	if err == nil {
		err = g.loadSignins()
	}
	if err == nil && cfg.OAuth.Enabled {
		err = g.startFacade(ctx, v, opt)
	}
	if err != nil {
		for _, c := range clients {
			_ = c.Close()
		}
		return nil, err
	}
	g.checkOwnRole(base)
	g.start(ctx)
	return g, nil
}

// checkOwnRole makes a gateway whose mTLS certificate is not a gateway-role
// certificate unready at once, saying why: every shard would refuse its
// mints (and every user would see an empty brain).
func (g *Gateway) checkOwnRole(tc *tls.Config) {
	role := pki.Role("")
	if len(tc.Certificates) > 0 && len(tc.Certificates[0].Certificate) > 0 {
		if leaf, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0]); err == nil {
			role = pki.RoleOf(leaf)
		}
	}
	if role == pki.RoleGateway {
		return
	}
	msg := fmt.Sprintf("the gateway's client certificate has role %q, not %q: shards refuse its mints", role, pki.RoleGateway)
	for _, w := range g.wings {
		w.MintRefused.Store(&msg)
	}
	g.log.Error("misconfigured shards.tls: the gateway is not ready until it has a gateway-role certificate (brainstem ca issue --role gateway)",
		"role", string(role))
}

// dialShards creates one (lazy) proto client per wing; it also returns the
// mTLS client configuration they share.
func dialShards(cfg config.Config, opt Options) (map[string]route.ShardClient, *tls.Config, error) {
	base := opt.ShardTLS
	if base == nil {
		var err error
		if base, err = pki.LoadClientTLS(cfg.Shards.TLS.ShardFiles(), ""); err != nil {
			return nil, nil, fmt.Errorf("gateway: shards.tls: %w", err)
		}
	}
	clients := map[string]route.ShardClient{}
	for _, w := range cfg.Wings {
		tc := base.Clone()
		tc.ServerName = w.TLSName()
		clients[w.Name] = proto.NewClient(w.Address, proto.ClientConfig{
			TLS:         tc,
			MaxInFlight: cfg.Shards.MaxInFlight,
			DialTimeout: min(cfg.Shards.CallTimeout, 10*time.Second),
			Logger:      cmp.Or(opt.Logger, slog.New(slog.DiscardHandler)).With("wing", w.Name),
			QUIC:        &quic.Config{KeepAlivePeriod: cfg.Shards.KeepAlive, MaxIdleTimeout: cfg.Shards.IdleTimeout},
		})
	}
	return clients, base, nil
}

// replicaTerms bounds the terms the statistics replica holds per wing.
const replicaTerms = 1 << 14

// newGateway wires a gateway from already-built dependencies (New builds the
// real ones). It starts nothing.
func newGateway(cfg config.Config, opt Options, v identityVerifier, clients map[string]route.ShardClient) (*Gateway, error) {
	g := &Gateway{
		cfg:            cfg,
		log:            cmp.Or(opt.Logger, slog.New(slog.DiscardHandler)),
		now:            opt.Now,
		verifier:       v,
		byName:         map[string]*route.Wing{},
		fanoutWorkers:  workers.New(fanoutWorkers, workers.KeepIdle),
		registry:       cmp.Or(opt.Registry, prometheus.NewRegistry()),
		tracer:         opt.Tracing.RootTracer(),
		traceSensitive: opt.Tracing.IsSensitive(),
		origins:        map[string]bool{},
		ended:          offboard.NewList(),
	}
	if g.now == nil {
		g.now = time.Now
	}
	for _, d := range cfg.Deprecations() {
		g.log.Warn(d)
	}
	for i, wc := range cfg.Wings {
		c, ok := clients[wc.Name]
		if !ok {
			return nil, fmt.Errorf("gateway: no shard client for wing %q", wc.Name)
		}
		w := &route.Wing{Idx: i, Name: wc.Name, Client: c}
		g.wings = append(g.wings, w)
		g.byName[wc.Name] = w
	}
	g.replica = search.NewReplica(len(g.wings)*len(search.Scopes()), replicaTerms)
	g.searchSpec = search.Spec(search.NoLimits())
	if err := g.setURLs(); err != nil {
		return nil, err
	}
	if err := g.newState(opt); err != nil {
		return nil, err
	}
	g.surfaces = g.newSurfaces()
	g.watch = surfaces.NewWatcher(g.surfaces)
	g.newMCPServer()
	var err error
	if g.leanPath, err = rpc.NewLeanServer(rpc.LeanConfig{Tools: g.mcp.GetTool, Served: g.metrics.leanCalls.Inc, Parsed: g.countParse, Log: g.log,
		Info: mcp.Implementation{Name: serverName, Version: Version}, SessionIdleTTL: cfg.Grants.IdleTTL, Sessions: cfg.Grants.MaxEntries, Now: g.now}); err != nil {
		return nil, err
	}
	g.refresh = &refresher{g: g, kick: make(chan struct{}, 1)}
	g.refresh.register() // brain_wings, before any shard answers
	g.public = g.buildPublicHandler()
	g.publicSrv.Handler = g.public
	g.admin = g.buildAdminHandler()
	return g, nil
}

// setURLs derives the MCP path, the protected-resource metadata (its URL
// and document) and the allowed origins from the configuration.
func (g *Gateway) setURLs() error {
	cfg := g.cfg
	u, err := url.Parse(cfg.PublicURL)
	if err != nil {
		return fmt.Errorf("gateway: public_url: %w", err)
	}
	g.mcpPath = strings.TrimRight(u.Path, "/") + "/mcp"
	g.metadataURL = u.Scheme + "://" + u.Host + wellKnownPRM + g.mcpPath
	self, err := config.ParseOrigin(u.Scheme + "://" + u.Host)
	if err != nil {
		return fmt.Errorf("gateway: public_url: %w", err)
	}
	g.origins[self] = true
	for _, o := range cfg.AllowedOrigins {
		po, err := config.ParseOrigin(o)
		if err != nil {
			return fmt.Errorf("gateway: allowed_origins: %w", err)
		}
		g.origins[po] = true
	}
	issuers := make([]string, 0, len(cfg.OIDC.Issuers))
	for _, is := range cfg.OIDC.Issuers {
		issuers = append(issuers, is.URL)
	}
	g.metadataJSON = resourceMetadata(cfg.MCPURL(), issuers, nil)
	return nil
}

// resourceMetadata is the RFC 9728 document of the MCP endpoint at
// resource, naming its authorization servers and scopes.
func resourceMetadata(resource string, servers, scopes []string) []byte {
	b, _ := brain.Marshal(protectedResourceMetadata{ // strings only: cannot fail
		Resource:               resource,
		AuthorizationServers:   servers,
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Brainstem",
	})
	return b
}

// newState builds what the gateway keeps about its callers: the rate
// limiters, the failed-authentication budgets, the connection tracker, the
// audit log, the grant cache and the metrics.
func (g *Gateway) newState(opt Options) error {
	cfg := g.cfg
	g.audit = &auditLog{w: cmp.Or[io.Writer](opt.AuditLog, os.Stdout), logArgs: cfg.Audit.LogArguments,
		onError: func(err error) { g.log.Error("cannot write the audit log", "err", err) }}

	// The metrics read the cache only when scraped, so they are built first.
	var err error
	if g.metrics, err = newMetrics(g.registry, g); err != nil {
		return fmt.Errorf("gateway: metrics: %w", err)
	}
	g.grants = route.NewGrantCache(g.wings, cfg.Grants.MaxEntries, cfg.Grants.IdleTTL, cfg.Grants.DenyTTL, cfg.Shards.CallTimeout, g.now, g.metrics, g.log)
	g.shards = &route.Sender{Grants: g.grants, CallTimeout: cfg.Shards.CallTimeout, RetryBase: cfg.Shards.RetryBase,
		LostRetry: g.metrics.lostRetry, TokenRejected: g.metrics.tokenRejected}
	g.edge, err = g.newEdge()
	return err
}

// newMCPServer builds mcp-go's server and its Streamable HTTP transport on
// the public http.Server.
func (g *Gateway) newMCPServer() {
	cfg := g.cfg
	hooks := &server.Hooks{}
	surfaces.ResourceHooks(hooks)
	g.watch.Hooks(hooks)
	g.mcp = server.NewMCPServer(serverName, Version, server.WithToolCapabilities(true), server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true), server.WithPromptFilter(g.surfaces.FilterPrompts), server.WithHooks(hooks),
		server.WithToolFilter(g.filterTools), server.WithRecovery(),
		server.WithInstructions("Brainstem is the team brain: curated notes (wiki) and unreviewed notes (inbox) per wing. "+
			"Call brain_wings to see the wings you can reach, brain_query to search them all."))
	g.mcp.AddResourceTemplate(surfaces.NoteTemplate(), surfaces.ReadTemplate)
	// Every wait on a peer is bounded: headers (header_timeout), the body
	// (body_timeout, set per request by the /mcp chain), idle keep-alive
	// connections (idle_conn_timeout), and connections without an
	// authenticated request (max_unauthenticated_conns). No ReadTimeout or
	// WriteTimeout: they would cut the long-lived GET notification streams.
	g.publicSrv = &http.Server{ReadHeaderTimeout: cfg.Limits.HeaderTimeout, IdleTimeout: cfg.Limits.IdleConnTimeout,
		ConnContext: g.edge.Conns.ConnContext, ConnState: g.edge.Conns.ConnState, ErrorLog: log.New(slogWriter{g.log}, "", 0)}
	g.mcpHTTP = server.NewStreamableHTTPServer(g.mcp, server.WithStreamableHTTPServer(g.publicSrv),
		server.WithStreamableHTTPProtocolVersions(edge.ProtocolVersions...), server.WithStreamableHTTPLogger(g.log),
		server.WithSessionIdleTTL(cfg.Grants.IdleTTL),
		// Session ids are bound to the identity that created them, and
		// still need no sticky sessions (gateway/edge/sessionid.go).
		server.WithSessionIdManagerResolver(edge.SessionIDs{Email: requestEmail}), server.WithHeartbeatInterval(25*time.Second),
		// The gateway validates Origin itself and authenticates every
		// request, which is what the DNS-rebinding check guards; the check
		// would refuse a reverse proxy on the same host.
		server.WithDisableLocalhostProtection(true))
}

// startFacade builds the gateway's authorization server in front of the
// IdP whose ID tokens idp verifies, mounts its endpoints, names it in the
// protected-resource metadata, and accepts its access tokens at /mcp.
func (g *Gateway) startFacade(ctx context.Context, idp identityVerifier, opt Options) error {
	peers, err := peersOf(g.cfg, net.DefaultResolver, net.InterfaceAddrs)
	if err != nil {
		return err
	}
	f, err := oauth.New(ctx, g.cfg.OAuth, oauth.Options{
		Issuer: strings.TrimRight(g.cfg.PublicURL, "/"), Resource: g.cfg.MCPURL(), Verifier: idp,
		HTTPClient: opt.HTTPClient, Now: g.now, Logger: g.log.With("component", "oauth"),
		Registerer: g.registry, ClientIP: g.edge.ClientIP, Ended: g.ended})
	if err != nil {
		return fmt.Errorf("gateway: oauth: %w", err)
	}
	if g.peerHandler, err = addGrants(ctx, f, peers, idjag.Options{AllowedDomains: g.cfg.OIDC.AllowedDomains, GroupsClaim: g.cfg.OIDC.GroupsClaim}); err != nil {
		return fmt.Errorf("gateway: oauth: %w", err)
	}
	g.facade = f
	g.verifier = bearerVerifier{facade: f, idp: idp}
	if err := g.startConsole(); err != nil {
		return fmt.Errorf("gateway: console: %w", err)
	}
	g.metadataJSON = resourceMetadata(g.cfg.MCPURL(), []string{f.Issuer()}, f.Scopes())
	g.public = g.buildPublicHandler()
	g.publicSrv.Handler = g.public
	return nil
}

// addGrants adds the grants beside the authorization server's own: the
// device flow (with its peer channel, whose handler it returns), machine
// identities and identity assertions.
func addGrants(ctx context.Context, f *oauth.Server, peers *device.Peers, opt idjag.Options) (http.Handler, error) {
	dev, err := device.New(f, peers)
	if err != nil {
		return nil, err
	}
	machines, err := machine.New(f)
	if err != nil {
		return nil, err
	}
	assertions, err := idjag.New(ctx, f, machines, opt)
	if err != nil {
		return nil, err
	}
	return dev.PeerHandler(), f.Add(dev, machines, assertions)
}

// bearerVerifier accepts the facade's access tokens and the IdP's own.
type bearerVerifier struct {
	facade *oauth.Server
	idp    identityVerifier
}

// Verify hands a token to the facade when its key id is the facade's, and
// to the SSO verifier otherwise.
func (b bearerVerifier) Verify(ctx context.Context, raw string) (auth.Identity, error) {
	if b.facade.Handles(raw) {
		return b.facade.Verify(ctx, raw)
	}
	return b.idp.Verify(ctx, raw)
}

// start fetches the tools once (bounded by shards.call_timeout) and starts
// the background refresh, the change watcher and the ended sign-ins' watcher.
func (g *Gateway) start(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, g.cfg.Shards.CallTimeout)
	g.refresh.refresh(rctx)
	cancel()
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stopRefresh = stop
	g.refreshDone = goDone(func() { g.refresh.loop(lctx) })
	g.watchDone = goDone(func() { g.watch.Loop(lctx) })
	sctx, stopSignins := context.WithCancel(context.WithoutCancel(ctx))
	g.stopSignins = stopSignins
	g.signinsDone = goDone(func() { g.runSignins(sctx) })
}

// goDone runs fn on a goroutine and returns a channel closed when it returns.
func goDone(fn func()) chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	return done
}

// Handler serves the public endpoints: the MCP endpoint (public_url path +
// "/mcp") and the RFC 9728 metadata at
// /.well-known/oauth-protected-resource[/<path>/mcp].
func (g *Gateway) Handler() http.Handler { return g.public }

// readinessReport is the /readyz body.
type readinessReport struct {
	Ready bool `json:"ready"`
	// Unreached lists wings whose shard has never answered.
	Unreached []string `json:"unreached_wings"`
	// MintRefused lists wings whose shard refuses this gateway's mints
	// (its certificate's role), with the reason.
	MintRefused []wingProblem `json:"mint_refused_wings"`
	// Draining: the gateway was told to stop.
	Draining bool `json:"draining,omitempty"`
}

type wingProblem struct {
	Wing   string `json:"wing"`
	Reason string `json:"reason"`
}

// readiness: ready once every wing's shard has answered and none refuses
// this gateway's mints.
func (g *Gateway) readiness() readinessReport {
	rep := readinessReport{Unreached: []string{}, MintRefused: []wingProblem{}}
	for _, wg := range g.wings {
		if !wg.Reached.Load() {
			rep.Unreached = append(rep.Unreached, wg.Name)
		}
		if p := wg.MintRefused.Load(); p != nil {
			rep.MintRefused = append(rep.MintRefused, wingProblem{wg.Name, *p})
		}
	}
	rep.Draining = g.draining.Load()
	rep.Ready = len(rep.Unreached) == 0 && len(rep.MintRefused) == 0 && !rep.Draining
	return rep
}

func (g *Gateway) buildAdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g.registry, promhttp.HandlerOpts{Registry: g.registry}))
	if g.cfg.Peers.Enabled() {
		// The other replicas, for device sign-ins (gateway/oauth/device, peers.go).
		mux.HandleFunc("POST "+device.PathPeer, func(w http.ResponseWriter, r *http.Request) {
			if g.peerHandler == nil {
				http.NotFound(w, r)
				return
			}
			g.peerHandler.ServeHTTP(w, r)
		})
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /signins", g.serveSignins)
	mux.HandleFunc("POST /signins/end", g.serveSigninsEnd)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		body := g.readiness()
		w.Header().Set("Content-Type", "application/json")
		if !body.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
	return mux
}

// Serve serves the public endpoint on public (with TLS from cfg.tls when
// configured) and the admin endpoint on admin (may be nil) until ctx ends,
// then stops accepting, drains in-flight calls (at most drain_timeout) and
// returns. It may be called once.
func (g *Gateway) Serve(ctx context.Context, public, admin net.Listener) error {
	if !g.served.CompareAndSwap(false, true) {
		return errors.New("gateway: Serve called twice")
	}
	if public == nil {
		return errors.New("gateway: Serve needs a public listener")
	}
	if g.cfg.TLS.CertFile != "" {
		cr := &certReloader{certFile: g.cfg.TLS.CertFile, keyFile: g.cfg.TLS.KeyFile, log: g.log}
		if err := cr.load(time.Now()); err != nil {
			return err
		}
		public = tls.NewListener(public, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.get, NextProtos: []string{"h2", "http/1.1"}})
	}
	errc := make(chan error, 2)
	go func() { errc <- g.publicSrv.Serve(public) }()
	var adminSrv *http.Server
	if admin != nil {
		adminSrv = &http.Server{Handler: g.admin, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(slogWriter{g.log}, "", 0)}
		go func() { errc <- adminSrv.Serve(admin) }()
	}
	g.log.Info("gateway serving", "mcp", g.cfg.MCPURL(), "listen", public.Addr().String(), "wings", len(g.wings))
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	g.draining.Store(true)
	if grace := g.cfg.DrainGrace; grace > 0 && serveErr == nil {
		// Keep serving a moment, unready, closing each connection after its
		// answer: keep-alive connections end cleanly instead of being
		// closed under a request a client is sending.
		g.log.Info("gateway draining: not ready, closing connections after their answers", "grace_seconds", grace.Seconds())
		t := time.NewTimer(grace)
		select {
		case <-t.C:
		case serveErr = <-errc:
			t.Stop()
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), g.cfg.DrainTimeout)
	defer cancel()
	err := g.mcpHTTP.Shutdown(dctx) // stops accepting, ends SSE streams, waits for in-flight calls
	if adminSrv != nil {
		_ = adminSrv.Shutdown(dctx)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("gateway: serve: %w", serveErr)
	}
	if err != nil {
		return fmt.Errorf("gateway: drain: %w", err)
	}
	g.log.Info("gateway drained")
	return nil
}

// Close stops the background refresh and closes the shard connections.
// Call it after Serve returned.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		if g.stopRefresh != nil {
			g.stopRefresh()
			<-g.refreshDone
			<-g.watchDone
		}
		if g.stopSignins != nil {
			g.stopSignins()
			<-g.signinsDone
		}
		if !g.served.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = g.mcpHTTP.Shutdown(ctx) // stops mcp-go's session sweeper
			cancel()
		}
		g.fanoutWorkers.Close()
		var errs []error
		for _, w := range g.wings {
			if err := w.Client.Close(); err != nil {
				errs = append(errs, fmt.Errorf("wing %s: %w", w.Name, err))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		if err := g.tracing.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
		if len(errs) > 0 {
			g.closeErr = fmt.Errorf("gateway: close: %w", errors.Join(errs...))
		}
	})
	return g.closeErr
}

// slogWriter adapts net/http's error log to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(strings.TrimSpace(string(p)), "subsystem", "net/http")
	return len(p), nil
}

// certReloader serves the public certificate and re-reads the files when
// they change (checked at most every certCheckInterval), so a rotated
// Kubernetes secret is picked up without a restart.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	mu                sync.Mutex
	cert              *tls.Certificate
	modTime           time.Time
	checked           time.Time
}

const certCheckInterval = 30 * time.Second

func (cr *certReloader) load(now time.Time) error {
	st, err := os.Stat(cr.certFile)
	if err != nil {
		return fmt.Errorf("gateway: tls.cert_file: %w", err)
	}
	cr.checked = now
	if cr.cert != nil && st.ModTime().Equal(cr.modTime) {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(cr.certFile, cr.keyFile)
	if err != nil {
		return fmt.Errorf("gateway: tls: %w", err)
	}
	cr.cert, cr.modTime = &cert, st.ModTime()
	return nil
}

func (cr *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if now := time.Now(); now.Sub(cr.checked) >= certCheckInterval {
		if err := cr.load(now); err != nil {
			cr.log.Error("cannot reload the TLS certificate; serving the previous one", "err", err)
		}
	}
	return cr.cert, nil
}
