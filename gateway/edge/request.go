package edge

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// ProtocolVersions are the MCP revisions the endpoint serves: every one
// mcp-go's initialize accepts (its ValidProtocolVersions), and so the list
// server/discover names and the MCP-Protocol-Version header may carry
// (TestProtocolVersions).
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// maxRequestIDLen bounds an accepted X-Request-Id.
const maxRequestIDLen = 128

// RequestID returns a sane client-supplied X-Request-Id or a new random one.
func RequestID(h string) string {
	if h != "" && len(h) <= maxRequestIDLen && !strings.ContainsFunc(h, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':')
	}) {
		return h
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// StatusRecorder remembers the status for the http_requests_total metric.
type StatusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *StatusRecorder) WriteHeader(code int) {
	s.status = cmp.Or(s.status, code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *StatusRecorder) Write(b []byte) (int, error) {
	s.status = cmp.Or(s.status, http.StatusOK)
	return s.ResponseWriter.Write(b)
}

func (s *StatusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Status is the status written so far, 200 when none was.
func (s *StatusRecorder) Status() int { return cmp.Or(s.status, http.StatusOK) }

// Unwrap lets http.ResponseController reach the real writer.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

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

// RetryAfter is the whole seconds until lim grants one token.
func RetryAfter(lim *rate.Limiter, now time.Time) int {
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 || lim.Limit() <= 0 {
		return 1
	}
	return max(1, int(math.Ceil(missing/float64(lim.Limit()))))
}

// ClientIP is the TCP peer, or the right-most address of the configured
// trusted-proxy header.
func (e *Edge) ClientIP(r *http.Request) string {
	if h := e.cfg.ClientIPHeader; h != "" {
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

// EmailLimiter is the per-email token bucket of email.
func (e *Edge) EmailLimiter(email string) *rate.Limiter {
	return getOrAdd(e.emailLimits, email, func() *rate.Limiter { return rate.NewLimiter(rate.Limit(e.cfg.CallsPerSecond), e.cfg.Burst) })
}

// getOrAdd returns the value of key in c, adding the one newV makes
// when there is none (the first of concurrent adds wins).
func getOrAdd[V any](c *lru.Cache[string, V], key string, newV func() V) V {
	if v, ok := c.Get(key); ok {
		return v
	}
	v := newV()
	if prev, ok, _ := c.PeekOrAdd(key, v); ok {
		return prev
	}
	return v
}
