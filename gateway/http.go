package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
)

// supportedProtocolVersions are the MCP revisions the endpoint serves.
var supportedProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}

// callInfo is what the HTTP layer learns about a request and hands to the
// tool handlers through the request context.
type callInfo struct {
	id        auth.Identity
	key       sessionKey // the session cache key of id: email and group set
	requestID string
	method    string // JSON-RPC method of a POST ("" otherwise)
	base      *slog.Logger
}

// logger is the gateway's logger with the call's email and request id.
// Built on use: most calls log nothing, and a JSON handler's With formats
// its attributes eagerly.
func (ci *callInfo) logger() *slog.Logger {
	return ci.base.With("email", ci.id.Email, "request_id", ci.requestID)
}

type callInfoKey struct{}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

// IdentityFrom returns the verified identity the gateway put in a request
// context, if any.
func IdentityFrom(ctx context.Context) (auth.Identity, bool) {
	ci := callInfoFrom(ctx)
	if ci == nil {
		return auth.Identity{}, false
	}
	return ci.id, true
}

// maxRequestIDLen bounds an accepted X-Request-Id.
const maxRequestIDLen = 128

// requestID returns a sane client-supplied X-Request-Id or a new random one.
func requestID(h string) string {
	if h != "" && len(h) <= maxRequestIDLen {
		ok := true
		for i := 0; i < len(h); i++ {
			c := h[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
				ok = false
				break
			}
		}
		if ok {
			return h
		}
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusRecorder remembers the status for the http_requests_total metric.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// serveMCP is the middleware in front of mcp-go: request id, Origin,
// protocol version, failed-auth limit per IP, authentication, body limit,
// per-email rate limit. Only then does mcp-go see the request.
func (g *Gateway) serveMCP(rw http.ResponseWriter, r *http.Request) {
	w := &statusRecorder{ResponseWriter: rw}
	defer func() {
		st := w.status
		if st == 0 {
			st = http.StatusOK
		}
		g.metrics.httpRequests.WithLabelValues(methodLabel(r.Method), strconv.Itoa(st)).Inc()
	}()
	rid := requestID(r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Request-Id", rid)
	if g.draining.Load() && r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}

	// The body must arrive within body_timeout; it is cleared once read
	// (a GET's notification stream has no body and may last).
	rc := http.NewResponseController(w)
	hasBody := r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
	if hasBody {
		_ = rc.SetReadDeadline(time.Now().Add(g.cfg.Limits.BodyTimeout))
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !g.originAllowed(origin) {
			closeUnread(w, r, hasBody)
			refuse(w, ErrOriginNotAllowed, nil, fmt.Sprintf("origin %q is not allowed; add it to allowed_origins", origin))
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
		w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate, Mcp-Session-Id, X-Request-Id, Retry-After")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, X-Request-Id")
			w.Header().Set("Access-Control-Max-Age", "600")
			closeUnread(w, r, hasBody)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(supportedProtocolVersions, v) {
		closeUnread(w, r, hasBody)
		refuse(w, ErrProtocolVersion, nil, fmt.Sprintf("unsupported MCP-Protocol-Version %q; supported: %s", v, strings.Join(supportedProtocolVersions, ", ")))
		return
	}

	now := g.now()
	raw, err := sso.BearerToken(r.Header)
	var id auth.Identity
	if err == nil {
		id, err = g.verifier.Verify(r.Context(), raw)
		if err == nil {
			// Whatever verifier vouched for it, the identity obeys the one
			// email rule before it is used anywhere.
			var email string
			if email, err = auth.CanonicalEmail(id.Email); err != nil {
				err = fmt.Errorf("gateway: the verifier returned an identity without an acceptable email: %w", err)
			}
			id.Email = email
		}
	}
	if err != nil {
		closeUnread(w, r, hasBody)
		g.refuseAuth(w, r, rid, now, err)
		return
	}
	markAuthenticated(r.Context())

	ci := &callInfo{id: id, key: keyOf(id), requestID: rid, base: g.log}
	var msg rpcMessage
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.Limits.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				refuse(w, ErrBodyTooLarge, nil, fmt.Sprintf("request body exceeds %d bytes (limits.max_body_bytes)", g.cfg.Limits.MaxBodyBytes))
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("not received within limits.body_timeout (%s)", g.cfg.Limits.BodyTimeout)
			}
			closeUnread(w, r, true)
			refuse(w, ErrBadBody, nil, "could not read the request body: "+err.Error())
			return
		}
		if json.Unmarshal(body, &msg) == nil {
			ci.method = msg.Method
		} else {
			msg = rpcMessage{}
		}
		if !validRequestID(msg.ID) {
			refuse(w, ErrBadRequestID, nil, "invalid request: the JSON-RPC id must be a string or a number")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	if foreignSession(r, ci) {
		refuse(w, ErrUnknownSession, msg.ID, "session not found: this Mcp-Session-Id was not issued to you or has ended; initialize a new session")
		return
	}

	if hasBody {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if lim := g.emailLimiter(id.Email); !lim.AllowN(now, 1) {
		g.metrics.rateLimited.WithLabelValues("email").Inc()
		retry := retryAfter(lim, now)
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		refuse(w, ErrRateLimited, msg.ID, fmt.Sprintf("rate limit of %v calls per second exceeded for %s; retry in %ds", g.cfg.Limits.CallsPerSecond, id.Email, retry))
		return
	}
	ctx := context.WithValue(r.Context(), callInfoKey{}, ci)
	switch ci.method {
	case "tools/list":
		g.refresh.ensure(r.Context())
	case "tools/call":
		if g.serveStatelessCall(ctx, w, r, &msg) {
			return
		}
	}
	g.mcpHTTP.ServeHTTP(w, r.WithContext(ctx))
}

// validRequestID reports whether a JSON-RPC id is absent (a notification)
// or, as MCP requires, a string or a number. null, booleans, objects and
// arrays are refused on every path: mcp-go would echo them back (and take
// an id of null for a notification).
func validRequestID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	c := id[0]
	return c == '"' || c == '-' || '0' <= c && c <= '9'
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead:
		return m
	}
	return "other"
}

// retryAfter is the whole seconds until lim grants one token.
func retryAfter(lim *rate.Limiter, now time.Time) int {
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 || lim.Limit() <= 0 {
		return 1
	}
	return max(1, int(math.Ceil(missing/float64(lim.Limit()))))
}

// challenge renders WWW-Authenticate (RFC 6750 §3, RFC 9728 §5.1).
func (g *Gateway) challenge(code, description string) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	if code != "" {
		fmt.Fprintf(&b, "error=%s, ", quoteParam(code))
		if description != "" {
			fmt.Fprintf(&b, "error_description=%s, ", quoteParam(description))
		}
	}
	fmt.Fprintf(&b, "resource_metadata=%s", quoteParam(g.metadataURL))
	if g.facade != nil {
		fmt.Fprintf(&b, ", scope=%s", quoteParam(strings.Join(g.facade.Scopes(), " ")))
	}
	return b.String()
}

// quoteParam quotes an auth-param value; RFC 6750 limits error_description
// to %x20-21 / %x23-5B / %x5D-7E, so others are replaced.
func quoteParam(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\'')
		case r < 0x20 || r > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body := struct {
		Error       string `json:"error,omitempty"`
		Description string `json:"error_description"`
	}{code, description}
	b, _ := brain.Marshal(body)
	_, _ = w.Write(b)
}

// originAllowed reports whether a browser Origin may use the endpoint.
func (g *Gateway) originAllowed(origin string) bool {
	o, err := parseOrigin(origin)
	return err == nil && g.origins[o]
}

// clientIP is the TCP peer, or the right-most address of the configured
// trusted-proxy header.
func (g *Gateway) clientIP(r *http.Request) string {
	if h := g.cfg.Limits.ClientIPHeader; h != "" {
		if v := r.Header.Values(h); len(v) > 0 {
			parts := strings.Split(v[len(v)-1], ",")
			if ip := net.ParseIP(strings.TrimSpace(parts[len(parts)-1])); ip != nil {
				return ip.String()
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (g *Gateway) emailLimiter(email string) *rate.Limiter {
	if l, ok := g.emailLimits.Get(email); ok {
		return l
	}
	l := newEmailLimiter(g.cfg.Limits.CallsPerSecond, g.cfg.Limits.Burst)
	if prev, ok, _ := g.emailLimits.PeekOrAdd(email, l); ok {
		return prev
	}
	return l
}

// newLimiterCache is a bounded LRU of per-key token buckets.
func newLimiterCache(size int) (*lru.Cache[string, *rate.Limiter], error) {
	return lru.New[string, *rate.Limiter](size)
}

func newEmailLimiter(perSecond float64, burst int) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(perSecond), burst)
}

// protectedResourceMetadata is the RFC 9728 document.
type protectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

func (g *Gateway) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(g.metadataJSON)
}

func (g *Gateway) buildPublicHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(g.mcpPath, g.serveMCP)
	mux.HandleFunc(wellKnownPRM+g.mcpPath, g.serveMetadata)
	mux.HandleFunc(wellKnownPRM, g.serveMetadata)
	if g.facade != nil {
		g.facade.Register(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		b, _ := brain.Marshal(map[string]string{"error": "not_found", "error_description": "the MCP endpoint is " + g.cfg.mcpURL()})
		_, _ = w.Write(b)
	})
	return mux
}

const wellKnownPRM = "/.well-known/oauth-protected-resource"
