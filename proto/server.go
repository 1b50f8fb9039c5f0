package proto

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/internal/workers"
	"github.com/brainstem/brainstem/proto/pki"
)

// Application error codes on QUIC streams and connections (not to be
// confused with Code, which travels inside error frames).
const (
	streamCodeCanceled quic.StreamErrorCode      = 0x10 // the client gave up (ctx done)
	streamCodeRefused  quic.StreamErrorCode      = 0x11 // the server stopped reading (bad/over-limit request)
	connCodeNoError    quic.ApplicationErrorCode = 0x00 // normal close (client idle close, drained)
	connCodeShutdown   quic.ApplicationErrorCode = 0x01 // the server stopped
	connCodeClosed     quic.ApplicationErrorCode = 0x02 // the client was closed
)

// Defaults of ServerConfig and ClientConfig.
const (
	DefaultMaxStreams  = 1024
	DefaultMaxInFlight = 256
	DefaultDialTimeout = 5 * time.Second
	// DefaultIdleTimeout: a peer silent this long is given up (its process
	// or host is gone). With keep-alives every DefaultKeepAlive a live peer
	// on a cluster network (sub-millisecond RTT, rare loss, lost packets
	// re-probed within tens of milliseconds) is never silent this long;
	// quic-go stretches it to 3 PTOs on slow paths. See docs/protocol.md.
	DefaultIdleTimeout = 2500 * time.Millisecond
	// DefaultKeepAlive is how often an otherwise quiet connection sends a
	// PING, so that silence means death (at most half the idle timeout).
	DefaultKeepAlive = time.Second
	// DefaultProbeTimeout bounds one background redial of a shard that is
	// down; DefaultRedialMin and DefaultRedialMax bound the pause between
	// them (doubling, jittered). A restarted shard is reached again within
	// about DefaultProbeTimeout + DefaultRedialMax of listening.
	DefaultProbeTimeout = time.Second
	DefaultRedialMin    = 50 * time.Millisecond
	DefaultRedialMax    = time.Second
	// DefaultReconnectTimeout bounds the redial made at once after a
	// connection is lost, which callers wait for: a live shard answers a
	// handshake in milliseconds on a cluster network, and a dead one must
	// not hold callers long (a read in flight on a connection that went
	// silent is answered within DefaultIdleTimeout + this).
	DefaultReconnectTimeout = 200 * time.Millisecond
	// DefaultRequestTimeout bounds receiving a whole request frame.
	DefaultRequestTimeout = 30 * time.Second
	DefaultCloseGrace     = 5 * time.Second
	// DefaultMaxInFlightBytes bounds the request payloads a server holds.
	DefaultMaxInFlightBytes = 256 << 20
)

// Peer is the authenticated client of a connection.
type Peer struct {
	Role       string // pki.RoleOf the verified client certificate: "gateway", "shard" or ""
	CommonName string // the client certificate's subject common name
}

// Handler serves brainstem/1 requests. A handler returns *Error to send a
// coded error; any other error is sent as CodeInternal with a generic message
// (the detail is logged), except context.DeadlineExceeded and
// context.Canceled, sent as CodeDeadline and CodeCanceled. Handlers run
// concurrently. ctx carries the caller's deadline and request id
// (RequestIDFrom) and is cancelled when the caller resets the stream or the
// server stops.
type Handler interface {
	ListTools(ctx context.Context) (*ListToolsResponse, error)
	Call(ctx context.Context, req *CallRequest) (*CallResponse, error)
	Mint(ctx context.Context, peer Peer, req *MintRequest) (*MintResponse, error)
	Stats(ctx context.Context, req *StatsRequest) (*StatsResponse, error)
	Rank(ctx context.Context, req *RankRequest) (*RankResponse, error)
	Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error)
	Health(ctx context.Context) (*HealthResponse, error)
}

// ServerConfig configures a Server.
type ServerConfig struct {
	// TLS is the server's TLS configuration, typically pki.ServerTLS. Its
	// NextProtos is forced to [ALPN]. Client certificates should be required
	// (pki.ServerTLS does): without one a peer has Role "" and cannot mint.
	TLS *tls.Config
	// MaxMessageBytes bounds the payload of a request and of a response;
	// 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxStreams is the number of concurrent requests per connection
	// (QUIC MaxIncomingStreams); 0 means DefaultMaxStreams.
	MaxStreams int
	// RequestTimeout bounds the time to receive a request frame; 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxInFlightBytes bounds the request payload bytes held at once by
	// all requests being read or handled, over all connections; a request
	// waits (within RequestTimeout) for room before its payload is read.
	// 0 means DefaultMaxInFlightBytes; it is raised to MaxMessageBytes if
	// lower.
	MaxInFlightBytes int64
	// CloseGrace is how long Shutdown lets clients close drained
	// connections themselves before closing them; 0 means DefaultCloseGrace.
	CloseGrace time.Duration
	// Logger receives one line per failed request and connection events;
	// nil discards.
	Logger *slog.Logger
	// QUIC overrides the QUIC configuration; nil uses defaults (idle
	// timeout DefaultIdleTimeout, keep-alive DefaultKeepAlive). Its
	// MaxIncomingStreams is set from MaxStreams when zero.
	QUIC *quic.Config
	// StatelessResetKey, if set, lets the server answer packets of
	// connections it does not know with a stateless reset, so clients of a
	// crashed and restarted shard (same address) fail over at once instead
	// of after the idle timeout. Derive it from a secret that survives
	// restarts (e.g. an HKDF of the shard's private key); never share it
	// between shards.
	StatelessResetKey *quic.StatelessResetKey
	// Tracer, when set, starts a server span per request, a child of the
	// caller's span that the request's trace trailer carries; the handler's
	// ctx holds it. nil (the default) traces nothing.
	Tracer trace.Tracer
}

// Server serves one Handler over QUIC. Create it with NewServer, run it with
// Serve, stop it with Shutdown (graceful) or by cancelling
// Serve's context (immediate).
type Server struct {
	h        Handler
	tracer   trace.Tracer        // nil: no server spans (the trailer is still read)
	mem      *semaphore.Weighted // request payload bytes in flight
	resetKey *quic.StatelessResetKey
	tls      *tls.Config
	quic     *quic.Config
	max      int
	reqTO    time.Duration
	grace    time.Duration
	log      *slog.Logger
	ready    chan struct{}
	stopped  chan struct{} // closed when Serve returns
	draining atomic.Bool
	handlers *counter // in-flight streams
	bufs     bufferPool
	streams  *workers.Pool // the goroutines that serve streams, kept with their stacks

	mu         sync.Mutex
	started    bool
	ln         *quic.Listener
	tr         *quic.Transport
	addr       net.Addr
	conns      map[*quic.Conn]struct{}
	baseCancel context.CancelCauseFunc // cancels every handler ctx
	stopServe  context.CancelFunc      // ends the accept loop
	shutdown   chan struct{}           // closed when Shutdown starts
	shutOnce   sync.Once
}

// ErrServerStarted is returned when Serve is called twice.
var ErrServerStarted = errors.New("proto: server already started")

// errServerStopping is the cause of handler contexts cancelled by a stop.
var errServerStopping = errors.New("proto: server stopping")

// errStreamEnded is the cause of a handler context cancelled because its
// stream ended: the caller gave up (STOP_SENDING) or the connection closed.
// The stream's own cause is wrapped too.
var errStreamEnded = errors.New("proto: the request's stream ended")

// protocolTLS returns a copy of c that negotiates brainstem/1 over TLS 1.3
// or later (nil stays nil).
func protocolTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	tc := c.Clone()
	tc.NextProtos = []string{ALPN}
	tc.MinVersion = max(tc.MinVersion, tls.VersionTLS13)
	return tc
}

// quicConfig returns a copy of c (or of the zero config) with the idle
// timeout and keep-alive period the package defaults where c leaves them.
func quicConfig(c *quic.Config) *quic.Config {
	qc := &quic.Config{}
	if c != nil {
		qc = c.Clone()
	}
	qc.MaxIdleTimeout = cmp.Or(qc.MaxIdleTimeout, DefaultIdleTimeout)
	qc.KeepAlivePeriod = cmp.Or(qc.KeepAlivePeriod, DefaultKeepAlive)
	return qc
}

// orDefault is a ClientConfig or ServerConfig setting: v, or def where v
// is zero or negative.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// NewServer returns a server for h. Nothing listens until Serve.
func NewServer(h Handler, cfg ServerConfig) *Server {
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	maxMsg := orDefault(cfg.MaxMessageBytes, DefaultMaxMessageBytes)
	tc := protocolTLS(cfg.TLS)
	qc := quicConfig(cfg.QUIC)
	qc.MaxIncomingStreams = cmp.Or(qc.MaxIncomingStreams, int64(orDefault(cfg.MaxStreams, DefaultMaxStreams)))
	qc.MaxIncomingUniStreams = cmp.Or(qc.MaxIncomingUniStreams, -1) // clients never open unidirectional streams
	reqTO := orDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	grace := orDefault(cfg.CloseGrace, DefaultCloseGrace)
	memLimit := max(orDefault(cfg.MaxInFlightBytes, DefaultMaxInFlightBytes), int64(maxMsg))
	return &Server{
		h: h, tracer: cfg.Tracer, mem: semaphore.NewWeighted(memLimit), resetKey: cfg.StatelessResetKey, tls: tc, quic: qc, max: maxMsg, reqTO: reqTO, grace: grace, log: log,
		ready: make(chan struct{}), stopped: make(chan struct{}), conns: make(map[*quic.Conn]struct{}), shutdown: make(chan struct{}),
		handlers: newCounter(), streams: workers.New(streamWorkers, workers.KeepIdle),
	}
}

// streamWorkers is how many goroutines that served a stream the server
// keeps waiting for the next one (internal/workers): about as many as
// the requests a loaded shard has in flight.
const streamWorkers = 64

// Serve serves on pc until ctx is cancelled (immediate stop: handler
// contexts are cancelled and connections closed) or Shutdown completes
// (graceful). It returns nil after either, or the error that prevented
// serving. pc is not closed by Serve.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn) error {
	if s.tls == nil {
		return errors.New("proto: ServerConfig.TLS is required")
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return ErrServerStarted
	}
	s.started = true
	tr := &quic.Transport{Conn: pc, StatelessResetKey: s.resetKey}
	ln, err := tr.Listen(s.tls, s.quic)
	if err != nil {
		s.mu.Unlock()
		close(s.stopped)
		return fmt.Errorf("proto: listen: %w", err)
	}
	base, baseCancel := context.WithCancelCause(context.Background())
	acceptCtx, stopServe := context.WithCancel(ctx)
	s.ln, s.tr, s.addr = ln, tr, ln.Addr()
	s.baseCancel, s.stopServe = baseCancel, stopServe
	s.mu.Unlock()
	close(s.ready)
	s.log.Info("proto: serving", "addr", s.addr.String())

	defer close(s.stopped)
	var connWG sync.WaitGroup
	for {
		conn, err := ln.Accept(acceptCtx)
		if err != nil {
			break
		}
		if !s.track(conn) {
			conn.CloseWithError(connCodeShutdown, "server shutting down")
			continue
		}
		connWG.Add(1)
		go func() {
			defer connWG.Done()
			s.serveConn(base, conn)
		}()
	}
	ln.Close()
	select {
	case <-s.shutdown:
		// Graceful: Shutdown drains handlers and closes connections; wait
		// for it to finish with them.
	default:
		// Immediate: ctx was cancelled. Close connections first so that
		// handlers cancelled next cannot answer: clients see the
		// connection loss (ErrUnavailable), not a cancellation.
		s.draining.Store(true)
		s.closeAll(connCodeShutdown, "server stopped")
		baseCancel(errServerStopping)
	}
	connWG.Wait()
	<-s.handlers.zero()
	s.streams.Close()
	baseCancel(errServerStopping)
	tr.Close()
	s.log.Info("proto: stopped", "addr", s.addr.String())
	return nil
}

// Ready is closed once the server listens (Addr is then valid). If Serve
// fails before listening it is never closed: wait for Serve's return too.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Shutdown stops accepting connections and requests (new requests on open
// connections are answered CodeUnavailable and clients are told to go away),
// waits for in-flight handlers, gives clients CloseGrace to close their
// connections, closes the rest and returns once Serve has returned. If ctx
// ends first, in-flight handlers are cancelled and connections closed at
// once; Shutdown then returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	started := s.started && s.ln != nil
	s.mu.Unlock()
	if !started {
		return nil
	}
	s.draining.Store(true)
	s.shutOnce.Do(func() { close(s.shutdown) })
	s.mu.Lock()
	s.stopServe()
	conns := slices.Collect(maps.Keys(s.conns))
	s.mu.Unlock()
	for _, c := range conns {
		sendGoAway(c)
	}

	var ctxErr error
	select {
	case <-s.handlers.zero():
		// Let clients close their drained connections themselves (they
		// do once their last response is read), within CloseGrace.
		grace := time.NewTimer(s.grace)
		defer grace.Stop()
	wait:
		for _, c := range conns {
			select {
			case <-c.Context().Done():
			case <-grace.C:
				break wait
			case <-ctx.Done():
				ctxErr = ctx.Err()
				break wait
			}
		}
		s.closeAll(connCodeShutdown, "server shut down")
	case <-ctx.Done():
		// Out of time: close connections first so that the handlers
		// cancelled next cannot answer (callers see ErrUnavailable).
		ctxErr = ctx.Err()
		s.closeAll(connCodeShutdown, "server shut down")
		s.baseCancel(errServerStopping)
	}
	select {
	case <-s.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	return ctxErr
}

func sendGoAway(c *quic.Conn) {
	st, err := c.OpenUniStream()
	if err != nil {
		return
	}
	st.Write(finishFrame(beginFrame(nil, MsgGoAway), 0))
	st.Close()
}

func (s *Server) track(c *quic.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *quic.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) closeAll(code quic.ApplicationErrorCode, msg string) {
	s.mu.Lock()
	conns := slices.Collect(maps.Keys(s.conns))
	s.mu.Unlock()
	for _, c := range conns {
		c.CloseWithError(code, msg)
	}
}

// peerOf returns the authenticated peer of a connection.
func peerOf(c *quic.Conn) Peer {
	certs := c.ConnectionState().TLS.PeerCertificates
	if len(certs) == 0 {
		return Peer{}
	}
	// The handshake verified the chain when the TLS config requires and
	// verifies client certificates; only then is a role trusted.
	if len(c.ConnectionState().TLS.VerifiedChains) == 0 {
		return Peer{CommonName: certs[0].Subject.CommonName}
	}
	return Peer{Role: string(pki.RoleOf(certs[0])), CommonName: certs[0].Subject.CommonName}
}

func (s *Server) serveConn(base context.Context, c *quic.Conn) {
	defer s.untrack(c)
	peer := peerOf(c)
	remote := c.RemoteAddr().String()
	s.log.Debug("proto: connection", "remote", remote, "role", peer.Role, "cn", peer.CommonName)
	if s.draining.Load() {
		sendGoAway(c)
	}
	for {
		st, err := c.AcceptStream(c.Context())
		if err != nil {
			s.log.Debug("proto: connection closed", "remote", remote, "cause", context.Cause(c.Context()))
			return
		}
		s.handlers.add()
		s.streams.Go(func() {
			defer s.handlers.done()
			s.serveStream(base, peer, st)
		})
	}
}

// serveStream reads one request, runs the handler and writes one response.
func (s *Server) serveStream(base context.Context, peer Peer, st *quic.Stream) {
	deadline := time.Now().Add(s.reqTO)
	st.SetReadDeadline(deadline)
	var h header
	var payload []byte
	err := s.readRequest(st, deadline, &h, &payload)
	if payload != nil {
		defer s.mem.Release(int64(len(payload)))
	}
	if err == nil {
		// The client FINs after its one frame: read the FIN (so the stream's
		// receive side completes and its slot is freed) and refuse trailing
		// bytes.
		var one [1]byte
		n, rerr := st.Read(one[:])
		switch {
		case n > 0:
			err = fmt.Errorf("%w: bytes after the request frame", ErrMalformed)
		case rerr != nil && !errors.Is(rerr, io.EOF):
			err = rerr
		}
	}
	if err != nil {
		s.refuseRead(st, h, err)
		return
	}
	st.SetReadDeadline(time.Time{})
	if s.draining.Load() {
		s.writeErrorFlags(st, &Error{Code: CodeUnavailable, Message: "shard is shutting down"}, flagRefused)
		return
	}

	base, p, span, err := s.startSpan(base, h, payload)
	defer span.End()
	if err != nil {
		s.writeError(st, &Error{Code: CodeBadRequest, Message: trimPrefix(err.Error())})
		return
	}
	resp, rh, err := s.dispatch(base, peer, st, h.typ, p)
	if err != nil {
		e := s.toError(rh, h.typ, err)
		spanEnding(span, rh, e, 0)
		s.writeError(st, e)
		return
	}
	buf := s.bufs.get()
	defer s.bufs.put(buf)
	out, err := encodeResponse((*buf)[:0], resp)
	*buf = out[:0]
	if err != nil {
		s.log.Error("proto: encoding response", "request_id", rh.RequestID, "type", h.typ.String(), "err", err)
		s.writeError(st, &Error{Code: CodeInternal, Message: "internal error: response not encodable"})
		return
	}
	if len(out)-HeaderSize > s.max {
		s.log.Warn("proto: response too large", "request_id", rh.RequestID, "type", h.typ.String(), "bytes", len(out)-HeaderSize, "limit", s.max)
		s.writeError(st, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("response of %d bytes exceeds the shard's limit of %d", len(out)-HeaderSize, s.max)})
		return
	}
	spanEnding(span, rh, nil, len(out)-HeaderSize)
	if _, err := st.Write(out); err != nil {
		st.CancelWrite(streamCodeRefused)
		return
	}
	st.Close()
}

// startSpan cuts the trace trailer off a request payload that has one and
// puts the caller's span context into ctx, then, when the server traces,
// starts the request's server span below it. Untraced, the span is the
// context's non-recording one and nothing is allocated.
func (s *Server) startSpan(ctx context.Context, h header, p []byte) (context.Context, []byte, trace.Span, error) {
	if h.flags&flagTrace != 0 {
		var sc trace.SpanContext
		var err error
		if p, sc, err = cutTraceTrailer(p); err != nil {
			return ctx, p, trace.SpanFromContext(ctx), err
		}
		if sc.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	if s.tracer == nil {
		return ctx, p, trace.SpanFromContext(ctx), nil
	}
	ctx, span := s.tracer.Start(ctx, "brainstem/1 "+h.typ.String(), trace.WithSpanKind(trace.SpanKindServer))
	return ctx, p, span, nil
}

// spanEnding records a request's outcome on its server span: the request
// id, the error code or the response's size.
func spanEnding(span trace.Span, rh reqHeader, e *Error, size int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.KeyRequestID.String(rh.RequestID))
	if e != nil {
		span.SetAttributes(tracing.KeyCode.String(e.Code.String()))
		span.SetStatus(codes.Error, "")
		return
	}
	span.SetAttributes(tracing.KeyBytes.Int(size))
}

// refuseRead answers a request that could not be read: with an error
// frame, or, when the stream itself died, with nothing.
func (s *Server) refuseRead(st *quic.Stream, h header, err error) {
	var code Code
	switch {
	case errors.Is(err, errBusy):
		code = CodeUnavailable
	case errors.Is(err, ErrTooLarge):
		code = CodeTooLarge
	case errors.Is(err, ErrVersion):
		code = CodeVersion
	case errors.Is(err, ErrMalformed):
		code = CodeBadRequest
	default: // the stream died (reset, deadline, connection closed): nobody to answer
		s.log.Debug("proto: reading request", "err", err)
		st.CancelRead(streamCodeRefused)
		st.CancelWrite(streamCodeRefused)
		return
	}
	st.CancelRead(streamCodeRefused)
	s.log.Warn("proto: refused request", "type", h.typ.String(), "code", code.String(), "err", err)
	s.writeError(st, &Error{Code: code, Message: trimPrefix(err.Error())})
}

// errBusy is returned when a request's payload cannot be admitted under
// MaxInFlightBytes in time.
var errBusy = errors.New("proto: shard busy: too many request bytes in flight")

// readRequest reads a request frame like readFrame, but reserves the
// payload's size under MaxInFlightBytes (waiting until deadline) before
// allocating it. On return *payload is non-nil exactly when its bytes are
// reserved; the caller releases them.
func (s *Server) readRequest(st *quic.Stream, deadline time.Time, h *header, payload *[]byte) error {
	var err error
	*h, _, err = readFrameAlloc(st, s.max, func(n uint32) ([]byte, error) {
		if !s.mem.TryAcquire(int64(n)) {
			ctx, cancel := context.WithDeadline(st.Context(), deadline)
			err := s.mem.Acquire(ctx, int64(n))
			cancel()
			if err != nil {
				return nil, fmt.Errorf("%w (%d bytes wanted)", errBusy, n)
			}
		}
		*payload = make([]byte, n)
		return *payload, nil
	})
	return err
}

// dispatch decodes the payload and calls the handler with a context carrying
// the caller's deadline and request id, cancelled when the caller resets
// the stream or the server stops. Handler panics become errors.
func (s *Server) dispatch(base context.Context, peer Peer, st *quic.Stream, t MsgType, p []byte) (resp any, rh reqHeader, err error) {
	var (
		call  *CallRequest
		mint  *MintRequest
		stats *StatsRequest
		rank  *RankRequest
		fetch *FetchRequest
	)
	switch t {
	case MsgListTools, MsgHealth:
		rh, err = decodeEmptyRequest(p)
	case MsgCall:
		rh, call, err = decodeCallRequest(p)
	case MsgMint:
		rh, mint, err = decodeMintRequest(p)
	case MsgStats:
		rh, stats, err = decodeStatsRequest(p)
	case MsgRank:
		rh, rank, err = decodeRankRequest(p)
	case MsgFetch:
		rh, fetch, err = decodeFetchRequest(p)
	default:
		return nil, rh, &Error{Code: CodeUnknownMethod, Message: fmt.Sprintf("unknown request type 0x%02x", byte(t))}
	}
	if err != nil {
		return nil, rh, &Error{Code: CodeBadRequest, Message: trimPrefix(err.Error())}
	}
	if t == MsgMint && peer.Role != string(pki.RoleGateway) {
		s.log.Warn("proto: mint refused", "reason", "only gateways may mint", "peer_role", peer.Role, "peer_cn", peer.CommonName,
			"request_id", rh.RequestID, "email", mint.Email)
		return nil, rh, &Error{Code: CodeWrongRole, Message: fmt.Sprintf("only gateways may mint; this client's certificate has role %q", peer.Role)}
	}

	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	stop := context.AfterFunc(st.Context(), func() {
		cancel(fmt.Errorf("%w: %w", errStreamEnded, context.Cause(st.Context())))
	})
	defer stop()
	if rh.Timeout > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, rh.Timeout)
		defer c2()
	}
	ctx = WithRequestID(ctx, rh.RequestID)

	defer func() {
		if r := recover(); r != nil {
			s.log.Error("proto: handler panic", "request_id", rh.RequestID, "type", t.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp, err = nil, &Error{Code: CodeInternal, Message: "internal error"}
		}
	}()
	switch t {
	case MsgListTools:
		resp, err = nilIfErr(s.h.ListTools(ctx))
	case MsgHealth:
		resp, err = nilIfErr(s.h.Health(ctx))
	case MsgCall:
		resp, err = nilIfErr(s.h.Call(ctx, call))
	case MsgMint:
		resp, err = nilIfErr(s.h.Mint(ctx, peer, mint))
	case MsgStats:
		resp, err = nilIfErr(s.h.Stats(ctx, stats))
	case MsgRank:
		resp, err = nilIfErr(s.h.Rank(ctx, rank))
	case MsgFetch:
		resp, err = nilIfErr(s.h.Fetch(ctx, fetch))
	}
	if err == nil && resp == nil {
		err = fmt.Errorf("proto: handler returned neither a response nor an error for %s", t)
	}
	return resp, rh, err
}

// nilIfErr turns a typed nil pointer into an untyped nil so a handler
// returning (nil, nil) is detected.
func nilIfErr[T any](v *T, err error) (any, error) {
	if v == nil {
		return nil, err
	}
	return v, err
}

// toError maps a handler error to the error frame sent to the client.
func (s *Server) toError(rh reqHeader, t MsgType, err error) *Error {
	var pe *Error
	switch {
	case errors.As(err, &pe):
		if pe.Code == 0 {
			s.log.Error("proto: handler returned an *Error without a code", "request_id", rh.RequestID, "type", t.String(), "err", err)
			return &Error{Code: CodeInternal, Message: pe.Message}
		}
		return pe
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeDeadline, Message: "deadline exceeded"}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCanceled, Message: "canceled"}
	}
	s.log.Error("proto: handler failed", "request_id", rh.RequestID, "type", t.String(), "err", err)
	return &Error{Code: CodeInternal, Message: "internal error"}
}

func (s *Server) writeError(st *quic.Stream, e *Error) { s.writeErrorFlags(st, e, 0) }

func (s *Server) writeErrorFlags(st *quic.Stream, e *Error, flags byte) {
	var b [HeaderSize + 2 + 4 + 256]byte
	out, _ := encodeResponse(b[:0], e)
	out[3] = flags
	if _, err := st.Write(out); err != nil {
		st.CancelWrite(streamCodeRefused)
		return
	}
	st.Close()
}

// trimPrefix drops the "proto: " prefix of an error text sent to the peer
// (the peer's *Error adds its own).
func trimPrefix(s string) string {
	const p = "proto: "
	for len(s) >= len(p) && s[:len(p)] == p {
		s = s[len(p):]
	}
	return s
}

// bufferPool recycles frame buffers to keep the hot path allocation-light.
type bufferPool struct{ p sync.Pool }

func (bp *bufferPool) get() *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (bp *bufferPool) put(b *[]byte) {
	if cap(*b) > 64<<10 {
		return // do not keep big buffers alive
	}
	*b = (*b)[:0]
	bp.p.Put(b)
}

// counter counts in-flight work and tells when it reaches zero. Unlike
// sync.WaitGroup it allows adding while someone waits.
type counter struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func newCounter() *counter {
	c := &counter{idle: make(chan struct{})}
	close(c.idle)
	return c
}

func (c *counter) add() {
	c.mu.Lock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
	c.mu.Unlock()
}

func (c *counter) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 {
		close(c.idle)
	}
	c.mu.Unlock()
}

// zero returns a channel closed once the count is (or drops to) zero.
func (c *counter) zero() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle
}
