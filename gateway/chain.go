package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
)

// The /mcp endpoint is a chain of small middlewares in front of the lean
// path and mcp-go, in the order docs/architecture.md gives ("Request
// path"). Each one either answers the request and stops, or hands it on.
// They are plain functions over one mcpCall, built into the chain once
// (mcpChain), so a request costs no closure, context or request copy per
// step: what a step learns (the identity, the parsed envelope) is in the
// mcpCall, and the call info goes into the request context once, at the
// end.

// mcpCall is one request to /mcp on its way through the chain.
type mcpCall struct {
	rec     statusRecorder // the response, remembering its status for the metrics
	r       *http.Request
	rc      *http.ResponseController
	hasBody bool
	now     time.Time   // when the request was authenticated (rate limits)
	ci      callInfo    // filled in step by step; handed to the tool handlers through ctx
	msg     rpc.Message // the JSON-RPC envelope of a POST body, parsed once
	lean    *rpc.Lean   // a plain tools/call body, walked once (envelope.go); nil otherwise
	ctx     context.Context
}

// mcpHandler is a step of the chain, or its end.
type mcpHandler func(*mcpCall)

// serveMCP serves /mcp: it runs the chain.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) {
	g.chain(&mcpCall{rec: statusRecorder{ResponseWriter: w}, r: r})
}

// mcpChain builds the chain: the middlewares, in order, then the lean path
// (unless a test switched it off) or mcp-go.
func (g *Gateway) mcpChain() mcpHandler {
	end := g.serveCall
	if g.test.noLeanPath {
		end = g.serveMCPGo
	}
	steps := []func(mcpHandler) mcpHandler{
		g.withRequestID,       // 1. X-Request-Id; the body's read deadline starts
		g.withOrigin,          // 2. Origin: 403 when present and not allowed; CORS
		g.withProtocolVersion, // 3. MCP-Protocol-Version: 400 when unknown
		g.withAuthentication,  // 4. bearer token: 401/400/403/503, or 429 over the failed-auth budget
		g.withBody,            // 5. the body within limits: 413/400; the envelope parsed once
		g.withRPCID,           // 6. JSON-RPC id a string or a number: else 400
		g.withSessionOwner,    // 7. Mcp-Session-Id issued to this caller: else 404
		g.withRateLimit,       // 8. per-email token bucket: else 429
		g.withCallInfo,        // 9. identity, request id and logger into the request context
	}
	h := end
	for i := len(steps) - 1; i >= 0; i-- {
		h = steps[i](h)
	}
	return h
}

// withRequestID keeps a sane X-Request-Id or makes one, counts the answer's
// status, and starts the body's read deadline (limits.body_timeout from
// the end of the headers; withBody clears it once the body is read).
func (g *Gateway) withRequestID(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		defer g.countRequest(q)
		q.ci.requestID = requestID(q.r.Header.Get("X-Request-Id"))
		q.rec.Header().Set("X-Request-Id", q.ci.requestID)
		if g.draining.Load() && q.r.ProtoMajor == 1 {
			q.rec.Header().Set("Connection", "close")
		}
		q.rc = http.NewResponseController(&q.rec)
		q.hasBody = q.r.ContentLength != 0 && q.r.Body != nil && q.r.Body != http.NoBody
		if q.hasBody {
			_ = q.rc.SetReadDeadline(time.Now().Add(g.cfg.Limits.BodyTimeout))
		}
		next(q)
	}
}

func (g *Gateway) countRequest(q *mcpCall) {
	st := q.rec.status
	if st == 0 {
		st = http.StatusOK
	}
	g.metrics.httpRequests.WithLabelValues(methodLabel(q.r.Method), strconv.Itoa(st)).Inc()
}

// refuseUnread answers a request refused before its body was read (see
// closeUnread).
func (q *mcpCall) refuseUnread(err error, message string) {
	closeUnread(&q.rec, q.r, q.hasBody)
	edge.Refuse(&q.rec, err, nil, message)
}

// withOrigin refuses a browser Origin that is not allowed, and answers the
// CORS preflight of one that is.
func (g *Gateway) withOrigin(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		origin := q.r.Header.Get("Origin")
		if origin == "" {
			next(q)
			return
		}
		if !g.originAllowed(origin) {
			q.refuseUnread(edge.ErrOriginNotAllowed, fmt.Sprintf("origin %q is not allowed; add it to allowed_origins", origin))
			return
		}
		h := q.rec.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Mcp-Session-Id, X-Request-Id, Retry-After")
		if q.r.Method != http.MethodOptions {
			next(q)
			return
		}
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, X-Request-Id")
		h.Set("Access-Control-Max-Age", "600")
		closeUnread(&q.rec, q.r, q.hasBody)
		q.rec.WriteHeader(http.StatusNoContent)
	}
}

// withProtocolVersion refuses an MCP revision the endpoint does not serve.
func (g *Gateway) withProtocolVersion(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		if v := q.r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(supportedProtocolVersions, v) {
			q.refuseUnread(edge.ErrProtocolVersion, fmt.Sprintf("unsupported MCP-Protocol-Version %q; supported: %s", v, strings.Join(supportedProtocolVersions, ", ")))
			return
		}
		next(q)
	}
}

// withAuthentication verifies the bearer token; a refusal is answered by
// refuseAuth (which spends the client IP's failed-authentication budget).
func (g *Gateway) withAuthentication(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		q.now = g.now()
		id, err := g.authenticate(q.r)
		if err != nil {
			closeUnread(&q.rec, q.r, q.hasBody)
			g.refuseAuth(q, err)
			return
		}
		markAuthenticated(q.r.Context())
		q.ci.id, q.ci.key, q.ci.base = id, route.KeyOf(id), g.log
		next(q)
	}
}

// authenticate returns the identity the request's bearer token proves.
// Whatever verifier vouched for it, the identity obeys the one email rule
// before it is used anywhere.
func (g *Gateway) authenticate(r *http.Request) (auth.Identity, error) {
	raw, err := sso.BearerToken(r.Header)
	if err != nil {
		return auth.Identity{}, err
	}
	id, err := g.verifier.Verify(r.Context(), raw)
	if err != nil {
		return auth.Identity{}, err
	}
	if id.Email, err = auth.CanonicalEmail(id.Email); err != nil {
		return auth.Identity{}, fmt.Errorf("gateway: the verifier returned an identity without an acceptable email: %w", err)
	}
	if err := g.checkEnded(id); err != nil {
		return auth.Identity{}, err
	}
	return id, nil
}

// withBody reads a POST body within limits.max_body_bytes and the read
// deadline, and parses its JSON-RPC envelope, once: every later step, the
// lean path and the tool handlers use that parse (mcp-go reads the body
// again from memory). It clears the read deadline.
func (g *Gateway) withBody(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		if q.r.Method == http.MethodPost {
			body, err := readBody(http.MaxBytesReader(&q.rec, q.r.Body, g.cfg.Limits.MaxBodyBytes), q.r.ContentLength)
			if err != nil {
				g.refuseBody(q, err)
				return
			}
			g.countParse()
			if lb, ok := rpc.ParseLean(body); ok {
				q.lean, q.msg, q.ci.method = &lb, lb.Msg, lb.Msg.Method
			} else if json.Unmarshal(body, &q.msg) == nil {
				q.ci.method = q.msg.Method
			} else {
				q.msg = rpc.Message{}
			}
			q.r.Body = io.NopCloser(bytes.NewReader(body))
			q.r.ContentLength = int64(len(body))
		}
		if q.hasBody {
			_ = q.rc.SetReadDeadline(time.Time{})
		}
		next(q)
	}
}

// refuseBody answers a body that could not be read: too large (413), or
// not received in time or broken (400, and the connection closed).
func (g *Gateway) refuseBody(q *mcpCall, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		edge.Refuse(&q.rec, edge.ErrBodyTooLarge, nil, fmt.Sprintf("request body exceeds %d bytes (limits.max_body_bytes)", g.cfg.Limits.MaxBodyBytes))
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("not received within limits.body_timeout (%s)", g.cfg.Limits.BodyTimeout)
	}
	closeUnread(&q.rec, q.r, true)
	edge.Refuse(&q.rec, edge.ErrBadBody, nil, "could not read the request body: "+err.Error())
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

// withRPCID refuses a JSON-RPC id that is neither a string nor a number.
func (g *Gateway) withRPCID(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		if q.r.Method == http.MethodPost && !validRequestID(q.msg.ID) {
			edge.Refuse(&q.rec, edge.ErrBadRequestID, nil, "invalid request: the JSON-RPC id must be a string or a number")
			return
		}
		next(q)
	}
}

// withSessionOwner answers 404 to a session-era request carrying an
// Mcp-Session-Id that was not issued to its caller (foreignSession).
func (g *Gateway) withSessionOwner(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		if foreignSession(q.r, &q.ci) {
			edge.Refuse(&q.rec, edge.ErrUnknownSession, q.msg.ID, "session not found: this Mcp-Session-Id was not issued to you or has ended; initialize a new session")
			return
		}
		next(q)
	}
}

// withRateLimit applies the caller's per-email token bucket.
func (g *Gateway) withRateLimit(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		email := q.ci.id.Email
		if lim := g.emailLimiter(email); !lim.AllowN(q.now, 1) {
			g.metrics.rateLimited.WithLabelValues("email").Inc()
			retry := retryAfter(lim, q.now)
			q.rec.Header().Set("Retry-After", strconv.Itoa(retry))
			edge.Refuse(&q.rec, edge.ErrRateLimited, q.msg.ID, fmt.Sprintf("rate limit of %v calls per second exceeded for %s; retry in %ds", g.cfg.Limits.CallsPerSecond, email, retry))
			return
		}
		next(q)
	}
}

// withCallInfo puts the call info in the request context: mcp-go builds a
// tool handler's context from it, so the identity, the request id and a
// logger carrying both reach the handlers.
func (g *Gateway) withCallInfo(next mcpHandler) mcpHandler {
	return func(q *mcpCall) {
		q.ctx = context.WithValue(q.r.Context(), callInfoKey{}, &q.ci)
		if g.tracer != nil {
			g.traced(q, next)
			return
		}
		next(q)
	}
}

// serveCall ends the chain: a stateless tools/call on the lean path, and
// everything else (or a call the lean path declines) through mcp-go.
func (g *Gateway) serveCall(q *mcpCall) {
	if q.ci.method == "tools/call" && g.serveStatelessCall(q) {
		return
	}
	g.serveMCPGo(q)
}

// serveMCPGo hands the request to mcp-go's Streamable HTTP server.
func (g *Gateway) serveMCPGo(q *mcpCall) {
	switch q.ci.method {
	case "tools/list":
		g.refresh.ensure(q.r.Context())
	case "resources/list", "resources/read":
		if !g.prepareResources(q) {
			return // answered an error
		}
	case "prompts/get":
		if !g.preparePrompt(q) {
			return // answered an error
		}
	}
	g.mcpHTTP.ServeHTTP(&q.rec, q.r.WithContext(q.ctx))
}
