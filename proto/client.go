package proto

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
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
	// DialTimeout bounds one dial including the handshake; 0 means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger receives connection events; nil discards.
	Logger *slog.Logger
	// QUIC overrides the QUIC configuration; nil uses defaults (idle
	// timeout DefaultIdleTimeout, keep-alive DefaultKeepAlive).
	QUIC *quic.Config
}

// Client is a pooled brainstem/1 client of one shard address. It dials
// lazily on first use, multiplexes all requests as streams of one
// connection, and redials after the connection is lost. It is safe for
// concurrent use.
type Client struct {
	addr     string
	tls      *tls.Config
	quic     *quic.Config
	max      int
	dialTO   time.Duration
	log      *slog.Logger
	sem      chan struct{}
	bufs     bufferPool
	idPrefix string
	seq      atomic.Uint64

	closeCtx    context.Context
	closeCancel context.CancelFunc

	mu     sync.Mutex
	cur    *clientConn // the pooled connection, nil when none
	dial   *dialCall   // the dial in progress, shared by concurrent callers
	closed bool
}

// clientConn is one QUIC connection of a Client.
type clientConn struct {
	qc       *quic.Conn
	inflight int  // guarded by Client.mu
	goaway   bool // guarded by Client.mu: the server is draining; no new requests
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
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	max := cfg.MaxMessageBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	inflight := cfg.MaxInFlight
	if inflight <= 0 {
		inflight = DefaultMaxInFlight
	}
	dialTO := cfg.DialTimeout
	if dialTO <= 0 {
		dialTO = DefaultDialTimeout
	}
	tc := protocolTLS(cfg.TLS)
	qc := &quic.Config{}
	if cfg.QUIC != nil {
		qc = cfg.QUIC.Clone()
	}
	if qc.MaxIdleTimeout == 0 {
		qc.MaxIdleTimeout = DefaultIdleTimeout
	}
	if qc.KeepAlivePeriod == 0 {
		qc.KeepAlivePeriod = DefaultKeepAlive
	}
	if qc.HandshakeIdleTimeout == 0 || qc.HandshakeIdleTimeout > dialTO {
		qc.HandshakeIdleTimeout = dialTO
	}
	if qc.MaxIncomingStreams == 0 {
		qc.MaxIncomingStreams = -1 // servers never open bidirectional streams
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		addr: addr, tls: tc, quic: qc, max: max, dialTO: dialTO, log: log,
		sem:         make(chan struct{}, inflight),
		idPrefix:    hex.EncodeToString(rnd[:]) + "-",
		closeCtx:    ctx,
		closeCancel: cancel,
	}
}

// ListTools asks the shard for its tool descriptors. Retried once on a fresh
// connection if the connection dies before an answer.
func (c *Client) ListTools(ctx context.Context) (*ListToolsResponse, error) {
	p, err := c.do(ctx, MsgListTools, RequestIDFrom(ctx), nil, true)
	if err != nil {
		return nil, err
	}
	return decodeListToolsResponse(p)
}

// Call runs one tool on the shard. Never retried by the client.
func (c *Client) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("proto: call: %w: nil request", ErrMalformed)
	}
	p, err := c.do(ctx, MsgCall, req.RequestID, req, false)
	if err != nil {
		return nil, err
	}
	return decodeCallResponse(p)
}

// Mint asks the shard for a shard token. Only a client with a gateway
// certificate is allowed (else *Error CodeForbidden). Never retried.
func (c *Client) Mint(ctx context.Context, req *MintRequest) (*MintResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("proto: mint: %w: nil request", ErrMalformed)
	}
	p, err := c.do(ctx, MsgMint, req.RequestID, req, false)
	if err != nil {
		return nil, err
	}
	return decodeMintResponse(p)
}

// Stats asks for the corpus statistics of a query's terms. Retried once on a
// fresh connection if the connection dies before an answer.
func (c *Client) Stats(ctx context.Context, req *StatsRequest) (*CorpusStats, error) {
	if req == nil {
		return nil, fmt.Errorf("proto: stats: %w: nil request", ErrMalformed)
	}
	p, err := c.do(ctx, MsgStats, req.RequestID, req, true)
	if err != nil {
		return nil, err
	}
	return decodeStatsResponse(p)
}

// Health asks for the shard's state. Retried once on a fresh connection if
// the connection dies before an answer.
func (c *Client) Health(ctx context.Context) (*HealthResponse, error) {
	p, err := c.do(ctx, MsgHealth, RequestIDFrom(ctx), nil, true)
	if err != nil {
		return nil, err
	}
	return decodeHealthResponse(p)
}

// Addr returns the shard address the client dials.
func (c *Client) Addr() string { return c.addr }

// Connected reports whether the client holds a live connection that is not
// draining.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && !c.cur.goaway && c.cur.qc.Context().Err() == nil
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
	c.mu.Unlock()
	c.closeCancel()
	if cc != nil {
		cc.qc.CloseWithError(connCodeClosed, "client closed")
	}
	return nil
}

// newRequestID returns a request id unique to this client.
func (c *Client) newRequestID() string {
	return c.idPrefix + strconv.FormatUint(c.seq.Add(1), 10)
}

// do encodes the request, sends it over a pooled connection and returns the
// payload of the expected response frame. An error frame becomes *Error.
func (c *Client) do(ctx context.Context, t MsgType, id string, req any, idempotent bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("proto: %s: %w", t, err)
	}
	if id == "" {
		id = c.newRequestID()
	}
	dl, hasDeadline := ctx.Deadline()
	var timeout time.Duration
	if hasDeadline {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, fmt.Errorf("proto: %s: %w", t, context.DeadlineExceeded)
		}
	}
	// Encode now to refuse invalid or over-limit requests before waiting
	// or dialing; with a deadline the frame is encoded again just before
	// sending so the shard gets the time actually left.
	buf := c.bufs.get()
	frame, err := encodeRequest((*buf)[:0], t, reqHeader{Timeout: timeout, RequestID: id}, req)
	if err != nil {
		c.bufs.put(buf)
		return nil, fmt.Errorf("proto: %s: %w", t, err)
	}
	*buf = frame[:0]
	if n := len(frame) - HeaderSize; n > c.max {
		c.bufs.put(buf)
		return nil, fmt.Errorf("%w: %s request of %d bytes, limit %d", ErrTooLarge, t, n, c.max)
	}

	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		c.bufs.put(buf)
		return nil, fmt.Errorf("proto: %s: waiting for a request slot: %w", t, ctx.Err())
	}
	defer func() { <-c.sem }()

	for attempt := 0; ; attempt++ {
		cc, err := c.acquire(ctx)
		if err != nil {
			c.bufs.put(buf)
			return nil, fmt.Errorf("proto: %s: %w", t, err)
		}
		if hasDeadline {
			left := time.Until(dl)
			if left <= 0 {
				c.release(cc)
				c.bufs.put(buf)
				return nil, fmt.Errorf("proto: %s: %w", t, context.DeadlineExceeded)
			}
			if frame, err = encodeRequest(frame[:0], t, reqHeader{Timeout: left, RequestID: id}, req); err != nil {
				c.release(cc)
				c.bufs.put(buf)
				return nil, fmt.Errorf("proto: %s: %w", t, err)
			}
			*buf = frame[:0]
		}
		p, retry, sent, err := c.exchange(ctx, cc, t, frame)
		c.release(cc)
		if err == nil {
			c.bufs.put(buf)
			return p, nil
		}
		if retry && idempotent && attempt == 0 && ctx.Err() == nil {
			c.log.Debug("proto: retrying on a fresh connection", "addr", c.addr, "type", t.String(), "request_id", id, "err", err)
			if !sent {
				// quic-go may still reference the old buffer: leave it
				// to the GC and encode into a fresh one.
				buf = c.bufs.get()
				if frame, err = encodeRequest((*buf)[:0], t, reqHeader{Timeout: timeout, RequestID: id}, req); err != nil {
					return nil, fmt.Errorf("proto: %s: %w", t, err)
				}
				*buf = frame[:0]
			}
			continue
		}
		if sent {
			// Only recycle a buffer quic-go took completely: after a
			// failed Write it may still reference it.
			c.bufs.put(buf)
		}
		return nil, err
	}
}

// acquire returns the pooled connection, dialing (once, shared by concurrent
// callers) when there is none. It counts the caller as in flight on it.
func (c *Client) acquire(ctx context.Context) (*clientConn, error) {
	for tries := 0; ; tries++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, ErrClientClosed)
		}
		if cc := c.cur; cc != nil {
			if !cc.goaway && cc.qc.Context().Err() == nil {
				cc.inflight++
				c.mu.Unlock()
				return cc, nil
			}
			c.cur = nil
		}
		if tries >= 3 {
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %s: connections keep closing", ErrUnavailable, c.addr)
		}
		d := c.dial
		if d == nil {
			d = &dialCall{done: make(chan struct{})}
			c.dial = d
			go c.runDial(d)
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

func (c *Client) runDial(d *dialCall) {
	ctx, cancel := context.WithTimeout(c.closeCtx, c.dialTO)
	defer cancel()
	var qc *quic.Conn
	var err error
	if c.tls == nil {
		err = errors.New("proto: ClientConfig.TLS is required")
	} else {
		qc, err = quic.DialAddr(ctx, c.addr, c.tls, c.quic)
	}
	c.mu.Lock()
	c.dial = nil
	switch {
	case err != nil:
		d.err = fmt.Errorf("%w: dial %s: %w", ErrUnavailable, c.addr, err)
		c.log.Warn("proto: dial failed", "addr", c.addr, "err", err)
	case c.closed:
		d.err = fmt.Errorf("%w: %w", ErrUnavailable, ErrClientClosed)
		defer qc.CloseWithError(connCodeClosed, "client closed")
	default:
		cc := &clientConn{qc: qc}
		c.cur = cc
		go c.watch(cc)
		c.log.Debug("proto: connected", "addr", c.addr)
	}
	c.mu.Unlock()
	close(d.done)
}

// watch serves the server's unidirectional streams (GOAWAY) on cc and drops
// cc from the pool when it closes.
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
	c.log.Debug("proto: connection closed", "addr", c.addr, "cause", context.Cause(cc.qc.Context()))
	c.mu.Lock()
	if c.cur == cc {
		c.cur = nil
	}
	c.mu.Unlock()
}

// drop removes a failed connection from the pool so the next request
// dials (its context may be cancelled only a moment later).
func (c *Client) drop(cc *clientConn) {
	c.mu.Lock()
	if c.cur == cc {
		c.cur = nil
	}
	c.mu.Unlock()
}

// goAway marks cc as draining and closes it once idle.
func (c *Client) goAway(cc *clientConn) {
	c.mu.Lock()
	cc.goaway = true
	if c.cur == cc {
		c.cur = nil
	}
	idle := cc.inflight == 0
	c.mu.Unlock()
	c.log.Debug("proto: server is draining", "addr", c.addr)
	if idle {
		cc.qc.CloseWithError(connCodeNoError, "drained")
	}
}

func (c *Client) release(cc *clientConn) {
	c.mu.Lock()
	cc.inflight--
	idle := cc.goaway && cc.inflight == 0
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

// exchange runs one request on a new stream of cc. retry reports that the
// request may be retried on a fresh connection (the connection failed before
// any answer byte, or the server refused it unprocessed while draining);
// sent reports that the frame buffer was handed to quic-go completely.
func (c *Client) exchange(ctx context.Context, cc *clientConn, t MsgType, frame []byte) (payload []byte, retry, sent bool, err error) {
	st, err := cc.qc.OpenStreamSync(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, true, fmt.Errorf("proto: %s: %w", t, ctx.Err())
		}
		c.drop(cc)
		return nil, true, true, fmt.Errorf("%w: %s: open stream: %w", ErrUnavailable, t, err)
	}
	stop := context.AfterFunc(ctx, func() {
		st.CancelWrite(streamCodeCanceled)
		st.CancelRead(streamCodeCanceled)
	})
	defer stop()
	_, werr := st.Write(frame)
	if werr == nil {
		sent = true
		st.Close()
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
			return nil, false, sent, fmt.Errorf("proto: %s: %w", t, ctx.Err())
		}
		st.CancelRead(streamCodeRefused)
		st.CancelWrite(streamCodeRefused)
		switch {
		case errors.Is(rerr, ErrTooLarge), errors.Is(rerr, ErrMalformed), errors.Is(rerr, ErrVersion):
			return nil, false, sent, fmt.Errorf("proto: %s response: %w", t, rerr)
		}
		connDead := isConnError(rerr) || cc.qc.Context().Err() != nil
		if connDead {
			c.drop(cc)
			if cause := context.Cause(cc.qc.Context()); cause != nil {
				rerr = cause
			}
		}
		return nil, connDead && cr.n == 0, sent, fmt.Errorf("%w: %s: %w", ErrUnavailable, t, rerr)
	}
	if werr != nil && h.typ != MsgError {
		return nil, false, sent, fmt.Errorf("%w: %s: write: %w", ErrUnavailable, t, werr)
	}
	switch h.typ {
	case t | respBit:
		return p, false, sent, nil
	case MsgError:
		e, err := decodeError(p)
		if err != nil {
			return nil, false, sent, fmt.Errorf("proto: %s error response: %w", t, err)
		}
		refused := h.flags&flagRefused != 0
		if refused && e.Code == CodeUnavailable {
			c.goAway(cc)
		}
		if cerr := ctxErr(ctx); (e.Code == CodeDeadline || e.Code == CodeCanceled) && cerr != nil {
			// The shard's copy of our deadline fired before our own timer
			// was noticed here: report the caller's ctx error (and the
			// answer).
			return nil, false, sent, fmt.Errorf("proto: %s: %w (%w)", t, cerr, e)
		}
		return nil, refused, sent, e
	default:
		return nil, false, sent, fmt.Errorf("%w: %s answered with %s", ErrMalformed, t, h.typ)
	}
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
	var (
		app   *quic.ApplicationError
		trans *quic.TransportError
		idle  *quic.IdleTimeoutError
		reset *quic.StatelessResetError
		hs    *quic.HandshakeTimeoutError
	)
	return errors.As(err, &app) || errors.As(err, &trans) || errors.As(err, &idle) ||
		errors.As(err, &reset) || errors.As(err, &hs) || errors.Is(err, quic.ErrTransportClosed)
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
