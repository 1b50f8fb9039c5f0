package edge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
)

// The /mcp endpoint is a chain of small checks in front of the lean path
// and mcp-go, in the order docs/architecture.md gives ("Request path").
// Admit runs the edge's checks, in order; each one either refuses the
// request and stops, or hands it on. They are plain methods over one
// Request, so a request costs no closure, context or request copy per
// step: what a step learns (the identity, the JSON-RPC method and id) is
// in the Request. The gateway then puts its call info into the request
// context and serves the call.

// Request is one request to /mcp on its way through the edge.
type Request struct {
	Rec       StatusRecorder // the response, remembering its status for the metrics
	R         *http.Request
	rc        *http.ResponseController
	hasBody   bool
	Now       time.Time // when the request was authenticated (rate limits)
	RequestID string
	Identity  *auth.Identity // where the verified caller goes, once authenticated (the caller sets it)
	Method    string         // JSON-RPC method of a POST ("" otherwise)
}

// Envelope is the JSON-RPC envelope of a POST body, which the gateway
// parses once, for the edge and for itself.
type Envelope interface {
	// Envelope parses body's envelope and returns its method.
	Envelope(body []byte) (method string)
	// RPCID is the JSON-RPC id of the envelope parsed (nil for none).
	RPCID() []byte
}

// Config is what the edge enforces.
type Config struct {
	BodyTimeout             time.Duration
	MaxBodyBytes            int64
	CallsPerSecond          float64
	Burst                   int
	FailedAuthPerMinute     int
	ClientIPHeader          string
	MaxUnauthenticatedConns int
	Callers                 int    // bound on the per-email rate limiters kept
	MetadataURL             string // the protected-resource metadata, named in challenges
}

// Deps are what the edge asks of the gateway.
type Deps struct {
	Log *slog.Logger
	Now func() time.Time
	// Authenticate returns the identity a request's bearer token proves.
	Authenticate func(*http.Request) (auth.Identity, error)
	// Scopes are the authorization server's scopes, named in challenges;
	// ok is false without one.
	Scopes func() (scopes []string, ok bool)
	// Parsed counts a decode of a request's JSON (a body).
	Parsed func()
	// OriginAllowed reports whether a browser Origin may use the endpoint.
	OriginAllowed func(origin string) bool
	Draining      *atomic.Bool // the gateway was told to stop
	// The metrics: http_requests_total, auth_failures_total, rate_limited_total.
	HTTPRequests, AuthFailures, RateLimited *prometheus.CounterVec
}

// Edge is the HTTP edge of /mcp: its checks, its limiters and budgets, and
// the connections it tracks.
type Edge struct {
	Deps
	cfg         Config
	Conns       *ConnTracker
	emailLimits *lru.Cache[string, *rate.Limiter]
	ipBudgets   *lru.Cache[string, *authBudget]
}

// New builds the edge.
func New(cfg Config, d Deps) (*Edge, error) {
	e := &Edge{Deps: d, cfg: cfg, Conns: &ConnTracker{max: cfg.MaxUnauthenticatedConns, marks: map[net.Conn]*connMark{}}}
	var err error
	if e.emailLimits, err = lru.New[string, *rate.Limiter](cfg.Callers); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if e.ipBudgets, err = lru.New[string, *authBudget](max(cfg.Callers/10, 1024)); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return e, nil
}

// Count counts the answer's status (http_requests_total); defer it.
func (e *Edge) Count(q *Request) {
	e.HTTPRequests.WithLabelValues(methodLabel(q.R.Method), strconv.Itoa(q.Rec.Status())).Inc()
}

// Admit runs the edge's checks in order and reports whether the request
// passed them all; a refused request has been answered.
func (e *Edge) Admit(q *Request, env Envelope) bool {
	// 1. X-Request-Id; the body's read deadline starts (begin)
	// 2. Origin: 403 when present and not allowed; CORS
	// 3. MCP-Protocol-Version: 400 when unknown
	// 4. bearer token: 401/400/403/503, or 429 over the failed-auth budget
	// 5. the body within limits: 413/400; the envelope parsed once
	// 6. JSON-RPC id a string or a number: else 400
	// 7. Mcp-Session-Id issued to this caller: else 404
	// 8. per-email token bucket: else 429
	e.begin(q)
	return e.origin(q) && e.protocolVersion(q) && e.authenticate(q) && e.body(q, env) &&
		e.rpcID(q, env) && e.sessionOwner(q, env) && e.rateLimit(q, env)
}

// begin keeps a sane X-Request-Id or makes one and starts the body's read
// deadline (limits.body_timeout from the end of the headers; body clears
// it once the body is read).
func (e *Edge) begin(q *Request) {
	q.RequestID = RequestID(q.R.Header.Get("X-Request-Id"))
	q.Rec.Header().Set("X-Request-Id", q.RequestID)
	if e.Draining.Load() && q.R.ProtoMajor == 1 {
		q.Rec.Header().Set("Connection", "close")
	}
	q.rc = http.NewResponseController(&q.Rec)
	q.hasBody = q.R.ContentLength != 0 && q.R.Body != nil && q.R.Body != http.NoBody
	if q.hasBody {
		_ = q.rc.SetReadDeadline(time.Now().Add(e.cfg.BodyTimeout))
	}
}

// refuseUnread answers a request refused before its body was read (see
// CloseUnread).
func (q *Request) refuseUnread(err error, message string) {
	CloseUnread(&q.Rec, q.R, q.hasBody)
	Refuse(&q.Rec, err, nil, message)
}

// origin refuses a browser Origin that is not allowed, and answers the
// CORS preflight of one that is.
func (e *Edge) origin(q *Request) bool {
	origin := q.R.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if !e.OriginAllowed(origin) {
		q.refuseUnread(ErrOriginNotAllowed, fmt.Sprintf("origin %q is not allowed; add it to allowed_origins", origin))
		return false
	}
	h := q.Rec.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Mcp-Session-Id, X-Request-Id, Retry-After")
	if q.R.Method != http.MethodOptions {
		return true
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, X-Request-Id")
	h.Set("Access-Control-Max-Age", "600")
	CloseUnread(&q.Rec, q.R, q.hasBody)
	q.Rec.WriteHeader(http.StatusNoContent)
	return false
}

// protocolVersion refuses an MCP revision the endpoint does not serve.
func (e *Edge) protocolVersion(q *Request) bool {
	if v := q.R.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(ProtocolVersions, v) {
		q.refuseUnread(ErrProtocolVersion, fmt.Sprintf("unsupported MCP-Protocol-Version %q; supported: %s", v, strings.Join(ProtocolVersions, ", ")))
		return false
	}
	return true
}

// authenticate verifies the bearer token; a refusal is answered by
// refuseAuth (which spends the client IP's failed-authentication budget).
func (e *Edge) authenticate(q *Request) bool {
	q.Now = e.Now()
	id, err := e.Authenticate(q.R)
	if err != nil {
		CloseUnread(&q.Rec, q.R, q.hasBody)
		e.refuseAuth(q, err)
		return false
	}
	MarkAuthenticated(q.R.Context())
	*q.Identity = id
	return true
}

// body reads a POST body within limits.max_body_bytes and the read
// deadline, and has env parse its JSON-RPC envelope, once: every later
// step, the lean path and the tool handlers use that parse (mcp-go reads
// the body again from memory). It clears the read deadline.
func (e *Edge) body(q *Request, env Envelope) bool {
	if q.R.Method == http.MethodPost {
		body, err := readBody(http.MaxBytesReader(&q.Rec, q.R.Body, e.cfg.MaxBodyBytes), q.R.ContentLength)
		if err != nil {
			e.refuseBody(q, err)
			return false
		}
		e.Parsed()
		q.Method = env.Envelope(body)
		q.R.Body = io.NopCloser(bytes.NewReader(body))
		q.R.ContentLength = int64(len(body))
	}
	if q.hasBody {
		_ = q.rc.SetReadDeadline(time.Time{})
	}
	return true
}

// refuseBody answers a body that could not be read: too large (413), or
// not received in time or broken (400, and the connection closed).
func (e *Edge) refuseBody(q *Request, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		Refuse(&q.Rec, ErrBodyTooLarge, nil, fmt.Sprintf("request body exceeds %d bytes (limits.max_body_bytes)", e.cfg.MaxBodyBytes))
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("not received within limits.body_timeout (%s)", e.cfg.BodyTimeout)
	}
	CloseUnread(&q.Rec, q.R, true)
	Refuse(&q.Rec, ErrBadBody, nil, "could not read the request body: "+err.Error())
}

// readBody reads r to its end, sized by the request's Content-Length when
// it gives one (io.ReadAll would grow its buffer from 512 bytes).
func readBody(r io.Reader, contentLength int64) ([]byte, error) {
	n := 512
	if contentLength > 0 && contentLength < 64<<20 {
		n = int(contentLength) + 1 // room to see the end without growing
	}
	b := make([]byte, 0, n)
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// rpcID refuses a JSON-RPC id that is neither a string nor a number.
func (e *Edge) rpcID(q *Request, env Envelope) bool {
	if q.R.Method == http.MethodPost && !validRequestID(env.RPCID()) {
		Refuse(&q.Rec, ErrBadRequestID, nil, "invalid request: the JSON-RPC id must be a string or a number")
		return false
	}
	return true
}

// sessionOwner answers 404 to a session-era request carrying an
// Mcp-Session-Id that was not issued to its caller (foreignSession).
func (e *Edge) sessionOwner(q *Request, env Envelope) bool {
	if foreignSession(q.R, q.Method, q.Identity.Email) {
		Refuse(&q.Rec, ErrUnknownSession, env.RPCID(), "session not found: this Mcp-Session-Id was not issued to you or has ended; initialize a new session")
		return false
	}
	return true
}

// rateLimit applies the caller's per-email token bucket.
func (e *Edge) rateLimit(q *Request, env Envelope) bool {
	email := q.Identity.Email
	if lim := e.EmailLimiter(email); !lim.AllowN(q.Now, 1) {
		e.RateLimited.WithLabelValues("email").Inc()
		retry := RetryAfter(lim, q.Now)
		q.Rec.Header().Set("Retry-After", strconv.Itoa(retry))
		Refuse(&q.Rec, ErrRateLimited, env.RPCID(), fmt.Sprintf("rate limit of %v calls per second exceeded for %s; retry in %ds", e.cfg.CallsPerSecond, email, retry))
		return false
	}
	return true
}
