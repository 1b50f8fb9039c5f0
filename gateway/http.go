package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
)

// supportedProtocolVersions are the MCP revisions the endpoint serves:
// every one mcp-go's initialize accepts (its ValidProtocolVersions), and
// so the list server/discover names and the MCP-Protocol-Version header
// may carry (TestProtocolVersions).
var supportedProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// callInfo is what the HTTP layer learns about a request and hands to the
// tool handlers through the request context.
type callInfo struct {
	id        auth.Identity
	key       route.Key // the grant cache key of id: email and group set
	requestID string
	method    string // JSON-RPC method of a POST ("" otherwise)
	base      *slog.Logger
	// args are the arguments of the tools/call the lean path answers, which
	// it scanned (scanArgs) to know mcp-go would take them; the tool
	// handler reads them instead of scanning again. Valid when scanned.
	args    rpc.Args
	scanned bool
	// prepared is what the chain computed for a resources or prompts
	// request, which mcp-go's handler returns (resources.go).
	prepared *prepared
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

// validRequestID reports whether a JSON-RPC id is absent (a notification)
// or, as MCP requires, a string or a number. null, booleans, objects and
// arrays are refused on every path: mcp-go would echo them back (and take
// an id of null for a notification).
func validRequestID(id []byte) bool {
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
	g.chain = g.mcpChain()
	mux := http.NewServeMux()
	mux.HandleFunc(g.mcpPath, g.serveMCP)
	mux.HandleFunc(wellKnownPRM+g.mcpPath, g.serveMetadata)
	mux.HandleFunc(wellKnownPRM, g.serveMetadata)
	if g.facade != nil {
		g.facade.Register(mux)
	}
	if g.console != nil {
		mux.Handle(g.console.Prefix(), g.console)
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
