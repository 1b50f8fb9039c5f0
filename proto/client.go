package proto

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"go.opentelemetry.io/otel/trace"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// TLS is the client's TLS configuration, typically pki.ClientTLS. Its
	// NextProtos is forced to [ALPN].
	TLS *tls.Config
	// MaxInFlight bounds concurrent requests to this shard; callers beyond
	// it wait (respecting their ctx). 0 means DefaultMaxInFlight.
	MaxInFlight int
	// MaxMessageBytes bounds the payload of a request (checked before
	// sending) and of a response; 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// DialTimeout bounds a dial a caller waits for (the first one, and the
	// first after a connection was reset or closed), handshake included;
	// 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// ProbeTimeout bounds each background redial while the shard is down;
	// 0 means DefaultProbeTimeout. It is never longer than DialTimeout.
	ProbeTimeout time.Duration
	// ReconnectTimeout bounds the redial made at once when a connection is
	// lost (callers wait for it); 0 means DefaultReconnectTimeout. It is
	// never longer than ProbeTimeout.
	ReconnectTimeout time.Duration
	// RedialMin and RedialMax bound the pause between background redials
	// while the shard is down: it starts at RedialMin and doubles up to
	// RedialMax, each pause drawn at random from its upper half (jitter).
	// 0 means DefaultRedialMin and DefaultRedialMax.
	RedialMin, RedialMax time.Duration
	// Logger receives connection events: connected, lost (with the cause),
	// unreachable, recovered. Nil discards.
	Logger *slog.Logger
	// QUIC overrides the QUIC configuration; nil uses defaults (idle
	// timeout DefaultIdleTimeout, keep-alive DefaultKeepAlive).
	QUIC *quic.Config
}

// Client is a pooled brainstem/1 client of one shard address. It dials
// lazily on first use and multiplexes all requests as streams of one
// connection. When the connection is lost it redials at once in the
// background; if that fails the shard is "down": requests fail fast with
// ErrUnavailable (no dial timeout to wait for) while background redials
// continue with capped, jittered exponential backoff until one succeeds.
// It is safe for concurrent use.
type Client struct {
	addr     string
	tls      *tls.Config
	quic     *quic.Config
	max      int
	dialTO   time.Duration
	probeTO  time.Duration
	reconnTO time.Duration
	redialLo time.Duration
	redialHi time.Duration
	log      *slog.Logger
	sem      chan struct{}
	bufs     bufferPool
	idPrefix string
	seq      atomic.Uint64

	dials, dialFailures, losses atomic.Int64

	closeCtx    context.Context
	closeCancel context.CancelFunc

	mu      sync.Mutex
	cur     *clientConn // the pooled connection, nil when none
	dial    *dialCall   // the dial in progress, shared by concurrent callers
	down    *downState  // set while the shard is known to be unreachable
	looping bool        // the background redial loop runs
	changed chan struct{}
	closed  bool
}

// downState is why and since when a shard is known to be unreachable.
type downState struct {
	since time.Time
	err   error
}

// clientConn is one QUIC connection of a Client.
type clientConn struct {
	qc       *quic.Conn
	inflight int  // guarded by Client.mu
	goaway   bool // guarded by Client.mu: the server is draining; no new requests
	closing  bool // guarded by Client.mu: the client closed it itself
	ended    bool // guarded by Client.mu: its end was handled
}

type dialCall struct {
	done chan struct{}
	err  error
}

// ErrClientClosed is returned (wrapped together with ErrUnavailable) by
// requests on a closed Client.
var ErrClientClosed = errors.New("proto: client closed")

// NewClient returns a client for the shard at addr (host:port). It does not
// dial until the first request.
func NewClient(addr string, cfg ClientConfig) *Client {
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	dialTO := orDefault(cfg.DialTimeout, DefaultDialTimeout)
	probeTO := min(orDefault(cfg.ProbeTimeout, DefaultProbeTimeout), dialTO)
	reconnTO := min(orDefault(cfg.ReconnectTimeout, DefaultReconnectTimeout), probeTO)
	lo := orDefault(cfg.RedialMin, DefaultRedialMin)
	hi := max(orDefault(cfg.RedialMax, DefaultRedialMax), lo)
	tc := protocolTLS(cfg.TLS)
	qc := quicConfig(cfg.QUIC)
	if qc.HandshakeIdleTimeout == 0 || qc.HandshakeIdleTimeout > dialTO {
		qc.HandshakeIdleTimeout = dialTO
	}
	qc.MaxIncomingStreams = cmp.Or(qc.MaxIncomingStreams, -1) // servers never open bidirectional streams
	var rnd [6]byte
	rand.Read(rnd[:])
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		addr: addr, tls: tc, quic: qc, max: orDefault(cfg.MaxMessageBytes, DefaultMaxMessageBytes), dialTO: dialTO, probeTO: probeTO, reconnTO: reconnTO, redialLo: lo, redialHi: hi, log: log,
		sem: make(chan struct{}, orDefault(cfg.MaxInFlight, DefaultMaxInFlight)), idPrefix: hex.EncodeToString(rnd[:]) + "-", closeCtx: ctx, closeCancel: cancel, changed: make(chan struct{}),
	}
}

// ListTools asks the shard for its tool descriptors. Retried once on a fresh
// connection if the connection dies before an answer.
func (c *Client) ListTools(ctx context.Context) (*ListToolsResponse, error) {
	return exchange(ctx, c, MsgListTools, RequestIDFrom(ctx), nil, true, decodeListToolsResponse)
}

// Call runs one tool on the shard. It is sent again (once, on a fresh
// connection) only when the shard cannot have run it: it never left, or a
// draining shard refused it unprocessed. When it left but the answer was
// lost the error wraps ErrConnectionLost: the caller decides.
func (c *Client) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	if req == nil {
		return nil, errNilRequest(MsgCall)
	}
	return exchange(ctx, c, MsgCall, req.RequestID, req, false, decodeCallResponse)
}

// Mint asks the shard for a shard token. Only a client with a gateway
// certificate is allowed (else *Error CodeWrongRole). Retried like Call.
func (c *Client) Mint(ctx context.Context, req *MintRequest) (*MintResponse, error) {
	if req == nil {
		return nil, errNilRequest(MsgMint)
	}
	return exchange(ctx, c, MsgMint, req.RequestID, req, false, decodeMintResponse)
}

// Stats asks for the corpus statistics of a query's terms. Retried once on a
// fresh connection if the connection dies before an answer.
func (c *Client) Stats(ctx context.Context, req *StatsRequest) (*StatsResponse, error) {
	if req == nil {
		return nil, errNilRequest(MsgStats)
	}
	return exchange(ctx, c, MsgStats, req.RequestID, req, true, decodeStatsResponse)
}

// Rank asks for a wing's ranking of a query (search.RankRequest). It reads
// only: retried once on a fresh connection if the connection dies.
func (c *Client) Rank(ctx context.Context, req *RankRequest) (*RankResponse, error) {
	if req == nil {
		return nil, errNilRequest(MsgRank)
	}
	return exchange(ctx, c, MsgRank, req.RequestID, req, true, decodeRankResponse)
}

// Fetch asks for a wing's rendered hits of some keys (search.FetchRequest).
// It reads only: retried once on a fresh connection if the connection dies.
func (c *Client) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	if req == nil {
		return nil, errNilRequest(MsgFetch)
	}
	return exchange(ctx, c, MsgFetch, req.RequestID, req, true, decodeFetchResponse)
}

// Health asks for the shard's state. Retried once on a fresh connection if
// the connection dies before an answer.
func (c *Client) Health(ctx context.Context) (*HealthResponse, error) {
	return exchange(ctx, c, MsgHealth, RequestIDFrom(ctx), nil, true, decodeHealthResponse)
}

// exchange sends one request of type t (req nil for ListTools and Health)
// and decodes its answer; do says when it is sent again.
func exchange[R any](ctx context.Context, c *Client, t MsgType, id string, req any, idempotent bool, decode func([]byte) (*R, error)) (*R, error) {
	p, err := c.do(ctx, t, id, req, idempotent)
	if err != nil {
		return nil, err
	}
	return decode(p)
}

func errNilRequest(t MsgType) error {
	return fmt.Errorf("proto: %s: %w: nil request", t, ErrMalformed)
}

// Addr returns the shard address the client dials.
func (c *Client) Addr() string { return c.addr }

// Connected reports whether the client holds a live connection that is not
// draining.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && c.cur.live()
}

// State is a snapshot of a client's connection.
type State struct {
	// Connected: a live connection that is not draining.
	Connected bool
	// Down: the last dial failed (or the connection went silent) and no
	// connection has been made since; requests fail fast with
	// ErrUnavailable while background redials continue.
	Down bool
	// DownSince is when the shard was found unreachable (zero unless Down).
	DownSince time.Time
	// Err is why it is down (nil unless Down).
	Err error
	// Dials, DialFailures and Losses count dial attempts, failed dials and
	// connections lost other than by the client's own close or a drain.
	Dials, DialFailures, Losses int64
}

// State returns the client's connection state.
func (c *Client) State() State {
	c.mu.Lock()
	s := State{Connected: c.cur != nil && c.cur.live()}
	if c.down != nil {
		s.Down, s.DownSince, s.Err = true, c.down.since, c.down.err
	}
	c.mu.Unlock()
	s.Dials, s.DialFailures, s.Losses = c.dials.Load(), c.dialFailures.Load(), c.losses.Load()
	return s
}

// WaitConnected returns nil once the client holds a live connection, dialing
// if none is being made, or ctx's error. Unlike a request it does not fail
// fast while the shard is down: it waits for a background redial.
func (c *Client) WaitConnected(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return fmt.Errorf("%w: %w", ErrUnavailable, ErrClientClosed)
		}
		if c.cur != nil && c.cur.live() {
			c.mu.Unlock()
			return nil
		}
		if c.dial == nil && !c.looping {
			c.startDialLocked(c.dialTO)
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notifyLocked wakes WaitConnected callers after a state change.
func (c *Client) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Close closes the connection and makes every later request fail with
// ErrClientClosed (wrapping ErrUnavailable). Requests in flight fail.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cc := c.cur
	c.cur = nil
	if cc != nil {
		cc.closing = true
	}
	c.notifyLocked()
	c.mu.Unlock()
	c.closeCancel()
	if cc != nil {
		cc.qc.CloseWithError(connCodeClosed, "client closed")
	}
	return nil
}

// retryKind says whether a failed request may be sent again on a fresh
// connection.
type retryKind uint8

const (
	noRetry         retryKind = iota
	retryAny                  // the shard cannot have run it: never left, or refused unprocessed
	retryIdempotent           // the connection died before any answer byte: only for idempotent requests
)

// do encodes the request, sends it over a pooled connection and returns the
// payload of the expected response frame. An error frame becomes *Error.
func (c *Client) do(ctx context.Context, t MsgType, id string, req any, idempotent bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("proto: %s: %w", t, err)
	}
	if id == "" {
		id = c.idPrefix + strconv.FormatUint(c.seq.Add(1), 10) // unique to this client
	}
	dl, hasDeadline := ctx.Deadline()
	var timeout time.Duration
	if hasDeadline {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, fmt.Errorf("proto: %s: %w", t, context.DeadlineExceeded)
		}
	}
	// Encode now, once, to refuse invalid or over-limit requests before
	// waiting or dialing. Each send writes only the headers again in front
	// of the body, so the shard gets the time actually left.
	f, err := c.encode(t, id, req, timeout, trace.SpanContextFromContext(ctx))
	if err != nil {
		return nil, err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		f.free(&c.bufs)
		return nil, fmt.Errorf("proto: %s: waiting for a request slot: %w", t, ctx.Err())
	}
	defer func() { <-c.sem }()
	return c.send(ctx, &f, dl, hasDeadline, idempotent)
}

// outFrame is a request encoded once: its body sits at the end of *buf,
// after room for the frame and request headers, which prefixRequest writes
// in front of it for each send.
type outFrame struct {
	buf   *[]byte
	body  int // offset of the body in *buf
	t     MsgType
	flags byte // flagTrace when the body ends with the trace trailer
	id    string
}

// encode encodes a request's body into a pooled buffer, followed by the
// trace trailer when sc is valid (the caller's span), and checks the frame
// (with timeout) against the size limit.
func (c *Client) encode(t MsgType, id string, req any, timeout time.Duration, sc trace.SpanContext) (outFrame, error) {
	if err := checkLen("request id", len(id), MaxRequestIDBytes); err != nil {
		return outFrame{}, fmt.Errorf("proto: %s: %w", t, err)
	}
	buf := c.bufs.get()
	room := requestPrefixRoom(len(id))
	b, err := appendRequestBody(append((*buf)[:0], make([]byte, room)...), t, req)
	if err != nil {
		c.bufs.put(buf)
		return outFrame{}, fmt.Errorf("proto: %s: %w", t, err)
	}
	var flags byte
	if sc.IsValid() {
		b, flags = appendTraceTrailer(completeBody(b, req), sc), flagTrace
	}
	*buf = b
	f := outFrame{buf: buf, body: room, t: t, flags: flags, id: id}
	if n := len(f.frame(timeout)) - HeaderSize; n > c.max {
		c.bufs.put(buf)
		return outFrame{}, fmt.Errorf("%w: %s request of %d bytes, limit %d", ErrTooLarge, t, n, c.max)
	}
	return f, nil
}

// frame writes the headers with the time left and returns the whole frame.
func (f *outFrame) frame(timeout time.Duration) []byte {
	return prefixRequest(*f.buf, f.body, f.t, f.flags, reqHeader{Timeout: timeout, RequestID: f.id})
}

func (f *outFrame) free(bp *bufferPool) { bp.put(f.buf) }

// detach moves the frame to a fresh buffer and leaves the old one to the
// GC: after a failed write quic-go may still reference it.
func (f *outFrame) detach(bp *bufferPool) {
	buf := bp.get()
	*buf = append((*buf)[:0], *f.buf...)
	f.buf = buf
}

// send sends the frame over the pooled connection, once more on a fresh
// connection when the first attempt cannot have run (or, for an idempotent
// request, cannot have been answered).
func (c *Client) send(ctx context.Context, f *outFrame, dl time.Time, hasDeadline, idempotent bool) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		cc, err := c.acquire(ctx)
		if err != nil {
			f.free(&c.bufs)
			return nil, fmt.Errorf("proto: %s: %w", f.t, err)
		}
		var left time.Duration
		if hasDeadline {
			if left = time.Until(dl); left <= 0 {
				c.release(cc)
				f.free(&c.bufs)
				return nil, fmt.Errorf("proto: %s: %w", f.t, context.DeadlineExceeded)
			}
		}
		p, retry, sent, err := c.exchange(ctx, cc, f.t, f.frame(left))
		c.release(cc)
		if err == nil {
			f.free(&c.bufs)
			return p, nil
		}
		if attempt == 0 && ctx.Err() == nil && (retry == retryAny || retry == retryIdempotent && idempotent) {
			c.log.Debug("proto: retrying on a fresh connection", "addr", c.addr, "type", f.t.String(), "request_id", f.id, "err", err)
			if !sent {
				f.detach(&c.bufs)
			}
			continue
		}
		if sent {
			// Only recycle a buffer quic-go took completely: after a
			// failed Write it may still reference it.
			f.free(&c.bufs)
		}
		return nil, err
	}
}

// live reports whether cc can take a new request. Caller holds c.mu.
func (cc *clientConn) live() bool {
	return !cc.goaway && !cc.closing && cc.qc.Context().Err() == nil
}

// acquire returns the pooled connection, dialing (once, shared by concurrent
// callers) when there is none. While the shard is down it fails at once
// with ErrUnavailable. It counts the caller as in flight on the connection.
func (c *Client) acquire(ctx context.Context) (*clientConn, error) {
	for tries := 0; ; tries++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, ErrClientClosed)
		}
		if cc := c.cur; cc != nil {
			if cc.live() {
				cc.inflight++
				c.mu.Unlock()
				return cc, nil
			}
			c.cur = nil
		}
		if d := c.down; d != nil {
			since, derr := d.since, d.err
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %s has been unreachable for %.1fs (%w); redialing in the background",
				ErrUnavailable, c.addr, time.Since(since).Seconds(), derr)
		}
		if tries >= 3 {
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %s: connections keep closing", ErrUnavailable, c.addr)
		}
		d := c.dial
		if d == nil {
			d = c.startDialLocked(c.dialTO)
		}
		c.mu.Unlock()
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: waiting for a connection to %s: %w", ErrUnavailable, c.addr, ctx.Err())
		}
		if d.err != nil {
			return nil, d.err
		}
	}
}

// startDialLocked starts a dial bounded by timeout that concurrent callers
// share. Caller holds c.mu and there is no dial in progress.
func (c *Client) startDialLocked(timeout time.Duration) *dialCall {
	d := &dialCall{done: make(chan struct{})}
	c.dial = d
	go c.runDial(d, timeout)
	return d
}

// runDial dials once. On success the connection joins the pool; on failure
// the shard is marked down and the background redial loop started.
func (c *Client) runDial(d *dialCall, timeout time.Duration) {
	c.dials.Add(1)
	ctx, cancel := context.WithTimeout(c.closeCtx, timeout)
	defer cancel()
	var qc *quic.Conn
	var err error
	if c.tls == nil {
		err = errors.New("proto: ClientConfig.TLS is required")
	} else {
		qc, err = quic.DialAddr(ctx, c.addr, c.tls, c.quicFor(timeout))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(d.done)
	c.dial = nil
	switch {
	case c.closed:
		d.err = fmt.Errorf("%w: %w", ErrUnavailable, ErrClientClosed)
		if qc != nil {
			qc.CloseWithError(connCodeClosed, "client closed")
		}
	case err != nil:
		c.dialFailures.Add(1)
		d.err = fmt.Errorf("%w: dial %s: %w", ErrUnavailable, c.addr, err)
		c.markDownLocked(err, "dial failed")
	default:
		cc := &clientConn{qc: qc}
		c.cur = cc
		if c.down != nil {
			c.log.Info("proto: connected; the shard is reachable again", "addr", c.addr,
				"down_seconds", time.Since(c.down.since).Seconds())
			c.down = nil
		} else {
			c.log.Info("proto: connected", "addr", c.addr)
		}
		c.notifyLocked()
		go c.watch(cc)
	}
}

// quicFor is the QUIC config of a dial bounded by timeout.
func (c *Client) quicFor(timeout time.Duration) *quic.Config {
	if c.quic.HandshakeIdleTimeout <= timeout {
		return c.quic
	}
	qc := c.quic.Clone()
	qc.HandshakeIdleTimeout = timeout
	return qc
}

// markDownLocked records that the shard cannot be reached (logging the
// transition once) and makes sure the redial loop runs. Caller holds c.mu.
func (c *Client) markDownLocked(err error, what string) {
	if c.down == nil {
		c.down = &downState{since: time.Now(), err: err}
		lvl := slog.LevelWarn
		if errors.Is(err, errDraining) {
			lvl = slog.LevelInfo
		}
		c.log.Log(context.Background(), lvl, "proto: shard unreachable; requests fail fast while redialing in the background",
			"addr", c.addr, "reason", what, "err", err)
		c.notifyLocked()
	} else {
		c.down.err = err
		c.log.Debug("proto: redial failed", "addr", c.addr, "err", err)
	}
	c.startLoopLocked()
}

// startLoopLocked starts the background redial loop unless it runs.
// Caller holds c.mu.
func (c *Client) startLoopLocked() {
	if c.looping || c.closed {
		return
	}
	c.looping = true
	go c.redialLoop()
}

// redialLoop dials until a connection is up or the client closes: at once
// (bounded by ReconnectTimeout; callers wait for it) while the shard is not
// known down, else after a pause that starts at RedialMin and doubles up to
// RedialMax, drawn from its upper half, each attempt bounded by
// ProbeTimeout.
func (c *Client) redialLoop() {
	pause := c.redialLo
	for {
		c.mu.Lock()
		if c.closed || (c.cur != nil && c.cur.live()) {
			c.looping = false
			c.mu.Unlock()
			return
		}
		wait := c.down != nil
		c.mu.Unlock()
		if wait {
			j := pause/2 + time.Duration(mrand.Int64N(int64(pause/2)+1))
			t := time.NewTimer(j)
			select {
			case <-t.C:
			case <-c.closeCtx.Done():
				t.Stop()
			}
			pause = min(pause*2, c.redialHi)
		}
		c.mu.Lock()
		if c.closed || (c.cur != nil && c.cur.live()) {
			c.looping = false
			c.mu.Unlock()
			return
		}
		d := c.dial
		if d == nil {
			to := c.probeTO
			if !wait {
				to = c.reconnTO
			}
			d = c.startDialLocked(to)
		}
		c.mu.Unlock()
		<-d.done
	}
}

// watch serves the server's unidirectional streams (GOAWAY) on cc, and when
// cc closes drops it from the pool, logs why, and starts redialing (unless
// the client closed it).
func (c *Client) watch(cc *clientConn) {
	for {
		st, err := cc.qc.AcceptUniStream(cc.qc.Context())
		if err != nil {
			break
		}
		st.SetReadDeadline(time.Now().Add(c.dialTO))
		h, _, err := readFrame(st, 0)
		st.CancelRead(0)
		if err == nil && h.typ == MsgGoAway {
			c.goAway(cc)
		}
	}
	c.mu.Lock()
	c.connEndedLocked(cc, context.Cause(cc.qc.Context()))
	c.mu.Unlock()
}

// connEndedLocked handles the end of cc once (watch and a request that saw
// the connection die may both report it): it drops cc from the pool, logs
// why, and either marks the shard down (it said it stopped, or refused the
// handshake) or redials at once, with callers waiting for that one short
// dial: after a stateless reset the successor already listens, and a
// connection that went silent may have been a stall of this process or the
// shard's rather than a death (if the shard is gone the dial fails within
// ReconnectTimeout and it is down). Caller holds c.mu.
func (c *Client) connEndedLocked(cc *clientConn, cause error) {
	if c.cur == cc {
		c.cur = nil
	}
	if cc.ended || c.closed {
		return
	}
	cc.ended = true
	c.notifyLocked()
	if cc.closing || cc.goaway {
		c.log.Debug("proto: drained connection closed", "addr", c.addr, "cause", cause)
		c.startLoopLocked() // the server is draining; reach its successor
		return
	}
	c.losses.Add(1)
	c.log.Warn("proto: connection lost", "addr", c.addr, "cause", cause, "in_flight", cc.inflight)
	var app *quic.ApplicationError
	switch {
	case handshakeRefused(cause):
		c.markDownLocked(cause, "the shard refused the TLS handshake")
	case errors.As(cause, &app) && app.Remote && app.ErrorCode == connCodeShutdown:
		c.markDownLocked(cause, "the shard stopped")
	default:
		if c.dial == nil {
			c.startDialLocked(c.reconnTO) // before any caller can start a longer one
		}
		c.startLoopLocked()
	}
}

// drop handles a connection a request found dead: cause is the
// connection's own cause when it has one.
func (c *Client) drop(cc *clientConn, err error) {
	if cause := context.Cause(cc.qc.Context()); cause != nil {
		err = cause
	}
	c.mu.Lock()
	c.connEndedLocked(cc, err)
	c.mu.Unlock()
}

// errDraining is why a shard that sent GOAWAY is down: it is shutting down
// and its successor (if any) cannot listen on its address before it exits.
var errDraining = errors.New("proto: the shard is shutting down (GOAWAY)")

// goAway marks cc as draining and closes it once idle. The shard is down
// from now on: new requests fail fast (requests in flight on cc finish)
// while the background loop redials its successor.
func (c *Client) goAway(cc *clientConn) {
	c.mu.Lock()
	// Only the pooled connection's drain says the shard is going away (an
	// older connection draining after a reconnect does not).
	first := !cc.goaway && (c.cur == cc || c.cur == nil)
	cc.goaway = true
	if c.cur == cc {
		c.cur = nil
	}
	idle := cc.inflight == 0
	if idle {
		cc.closing = true
	}
	if first && !c.closed {
		c.markDownLocked(errDraining, "the shard is draining")
	}
	c.mu.Unlock()
	if idle {
		cc.qc.CloseWithError(connCodeNoError, "drained")
	}
}

func (c *Client) release(cc *clientConn) {
	c.mu.Lock()
	cc.inflight--
	idle := cc.goaway && cc.inflight == 0 && !cc.closing
	if idle {
		cc.closing = true
	}
	c.mu.Unlock()
	if idle {
		cc.qc.CloseWithError(connCodeNoError, "drained")
	}
}

// countingReader counts bytes read, to tell whether any answer arrived.
type countingReader struct {
	r io.Reader
	n int
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += n
	return n, err
}

// exchange runs one request on a new stream of cc. retry says whether the
// request may be sent again on a fresh connection; sent reports that the
// frame buffer was handed to quic-go completely. A request that left but
// whose answer did not arrive whole fails with ErrConnectionLost; one that
// never left with ErrUnavailable.
func (c *Client) exchange(ctx context.Context, cc *clientConn, t MsgType, frame []byte) (payload []byte, retry retryKind, sent bool, err error) {
	st, err := cc.qc.OpenStreamSync(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, noRetry, true, fmt.Errorf("proto: %s: %w", t, ctx.Err())
		}
		c.drop(cc, err)
		return nil, retryAny, true, fmt.Errorf("%w: %s: open stream: %w", ErrUnavailable, t, err)
	}
	stop := context.AfterFunc(ctx, func() {
		st.CancelWrite(streamCodeCanceled)
		st.CancelRead(streamCodeCanceled)
	})
	defer stop()
	_, werr := st.Write(frame)
	if werr == nil {
		sent = true
		werr = st.Close()
	}
	// Read even after a failed write: a server that refused the request
	// (e.g. too large) still answers with an error frame.
	cr := countingReader{r: st}
	h, p, rerr := readFrame(&cr, c.max)
	if rerr == nil {
		var one [1]byte
		if n, err := st.Read(one[:]); n > 0 {
			rerr = fmt.Errorf("%w: bytes after the response frame", ErrMalformed)
		} else if err != nil && !errors.Is(err, io.EOF) {
			rerr = err
		}
	}
	if rerr != nil {
		if ctx.Err() != nil {
			return nil, noRetry, sent, fmt.Errorf("proto: %s: %w", t, ctx.Err())
		}
		st.CancelRead(streamCodeRefused)
		st.CancelWrite(streamCodeRefused)
		retry, err := c.readFailed(cc, t, rerr, werr, cr.n)
		return nil, retry, sent, err
	}
	if werr != nil && h.typ != MsgError {
		return nil, noRetry, sent, fmt.Errorf("%w: %s: write: %w", ErrConnectionLost, t, werr)
	}
	payload, retry, err = c.response(ctx, cc, t, h, p)
	return payload, retry, sent, err
}

// readFailed classifies a request whose answer could not be read (rerr;
// werr when the request did not leave whole either; read answer bytes
// came back before the failure): whether the shard can have run it, and
// so whether it may be sent again on a fresh connection.
func (c *Client) readFailed(cc *clientConn, t MsgType, rerr, werr error, read int) (retryKind, error) {
	switch {
	case errors.Is(rerr, ErrTooLarge), errors.Is(rerr, ErrMalformed), errors.Is(rerr, ErrVersion):
		return noRetry, fmt.Errorf("proto: %s response: %w", t, rerr)
	}
	connDead := isConnError(rerr) || cc.qc.Context().Err() != nil
	if connDead {
		if cause := context.Cause(cc.qc.Context()); cause != nil {
			rerr = cause
		}
		c.drop(cc, rerr)
	}
	if connDead && handshakeRefused(rerr) {
		// The shard refused the TLS handshake (e.g. our certificate):
		// it never accepted the connection, so never ran the request.
		return noRetry, fmt.Errorf("%w: %s to %s: the shard refused the connection: %w", ErrUnavailable, t, c.addr, rerr)
	}
	if werr != nil {
		// The request (or its end) never left: the shard cannot
		// have run it.
		r := noRetry
		if connDead {
			r = retryAny
		}
		return r, fmt.Errorf("%w: %s to %s: %w", ErrUnavailable, t, c.addr, rerr)
	}
	r := noRetry
	if connDead && read == 0 {
		r = retryIdempotent
	}
	return r, fmt.Errorf("%w: %s to %s: %w", ErrConnectionLost, t, c.addr, rerr)
}

// response reads the response frame of a t request: its payload, or the
// shard's error (*Error).
func (c *Client) response(ctx context.Context, cc *clientConn, t MsgType, h header, p []byte) ([]byte, retryKind, error) {
	switch h.typ {
	case t | respBit:
		return p, noRetry, nil
	case MsgError:
		e, err := decodeError(p)
		if err != nil {
			return nil, noRetry, fmt.Errorf("proto: %s error response: %w", t, err)
		}
		refused := h.flags&flagRefused != 0
		if refused && e.Code == CodeUnavailable {
			c.goAway(cc)
		}
		if cerr := ctxErr(ctx); (e.Code == CodeDeadline || e.Code == CodeCanceled) && cerr != nil {
			// The shard's copy of our deadline fired before our own timer
			// was noticed here: report the caller's ctx error (and the
			// answer).
			return nil, noRetry, fmt.Errorf("proto: %s: %w (%w)", t, cerr, e)
		}
		if refused {
			// Refused unprocessed: safe to send again, whatever it is.
			return nil, retryAny, e
		}
		return nil, noRetry, e
	}
	return nil, noRetry, fmt.Errorf("%w: %s answered with %s", ErrMalformed, t, h.typ)
}

// requestIDKey is the context key of the request id.
type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id. Client.ListTools and
// Client.Health send it (other requests carry their own RequestID field,
// which, when empty, the client fills with a generated id); the server puts
// every request's id into its handler's ctx.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id in ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// isConnError reports whether err means the whole connection is gone (as
// opposed to one stream): streams fail with the connection's error before
// its context is cancelled.
func isConnError(err error) bool {
	return isType[*quic.ApplicationError](err) || isType[*quic.TransportError](err) || isType[*quic.IdleTimeoutError](err) ||
		isType[*quic.StatelessResetError](err) || isType[*quic.HandshakeTimeoutError](err) || errors.Is(err, quic.ErrTransportClosed)
}

// isType reports whether err's tree holds an error of type E.
func isType[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// handshakeRefused reports whether err is a TLS alert from the handshake
// (a QUIC CRYPTO_ERROR): the peer never accepted the connection.
func handshakeRefused(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.ErrorCode >= 0x100 && te.ErrorCode <= 0x1ff
}

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline has
// passed even if its timer has not fired yet (it can lag on a busy machine).
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
