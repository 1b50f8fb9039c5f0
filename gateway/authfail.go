package gateway

import (
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth/sso"
)

// authBudget is one client IP's failed-authentication budget
// (limits.failed_auth_per_minute). It never refuses a request that
// authenticates: it is consulted only once a token has been refused. It
// limits what bad tokens from one address cost the gateway's log (beyond
// the budget refused tokens are counted, not logged one by one) and turns
// the answer to a token the gateway already refused moments ago (a client
// looping on a dead token) into 429 with Retry-After. A token's first
// refusal is always its truthful 401/403, so a client behind the same NAT
// as a stale script still learns to sign in again.
type authBudget struct {
	lim        *rate.Limiter
	mu         sync.Mutex
	suppressed int // refusals not logged since the budget ran out
}

func (g *Gateway) authBudget(ip string) *authBudget {
	if b, ok := g.ipBudgets.Get(ip); ok {
		return b
	}
	n := g.cfg.Limits.FailedAuthPerMinute
	b := &authBudget{lim: rate.NewLimiter(rate.Limit(float64(n)/60), n)}
	if prev, ok, _ := g.ipBudgets.PeekOrAdd(ip, b); ok {
		return prev
	}
	return b
}

// closeUnread makes an HTTP/1 connection close right after this answer
// when the request's body was not read. Otherwise net/http would first try
// to drain the body, and a peer that withholds it (with no token, say)
// would hold the answer and the socket until body_timeout. Call it before
// writing the answer.
func closeUnread(w http.ResponseWriter, r *http.Request, hasBody bool) {
	if hasBody && r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// refuseAuth answers a request whose token was refused (authRefusalOf,
// writeAuthRefusal), writes one log line per refused token (kind, issuer,
// client IP; never the token) and spends the client IP's failed-
// authentication budget. A missing token (every client's first request)
// and an IdP that cannot be asked (the token may be good) spend nothing.
func (g *Gateway) refuseAuth(q *mcpCall, err error) {
	a := authRefusalOf(err)
	g.metrics.authFailures.WithLabelValues(a.kind).Inc()
	var se *sso.Error
	errors.As(err, &se)
	var issuer string
	if se != nil {
		issuer = se.Issuer
	}
	ip := g.clientIP(q.r)
	switch {
	case a.status == http.StatusServiceUnavailable:
		g.log.Warn("token refused: cannot verify it now", "kind", a.kind, "issuer", issuer, "client_ip", ip,
			"request_id", q.ci.requestID, "retry_after_seconds", a.retryAfter, "err", err)
	case se != nil && se.Kind == sso.NoToken:
	default:
		a = g.spendAuthBudget(q, a, se != nil && se.Repeat, issuer, ip)
	}
	g.writeAuthRefusal(&q.rec, a)
}

// spendAuthBudget spends the client IP's failed-authentication budget for
// a refused token and logs it (one line per refusal while within the
// budget, then a count). A token refused moments ago (repeat) sent again
// over the budget is answered 429 instead.
func (g *Gateway) spendAuthBudget(q *mcpCall, a authRefusal, repeat bool, issuer, ip string) authRefusal {
	b := g.authBudget(ip)
	within := b.lim.AllowN(q.now, 1)
	if repeat {
		if !within {
			// The same refused token again, from an address over its budget.
			g.metrics.rateLimited.WithLabelValues("failed_auth_ip").Inc()
			return a.overBudget(ip, retryAfter(b.lim, q.now))
		}
		return a
	}
	b.mu.Lock()
	suppressed := b.suppressed
	if within {
		b.suppressed = 0
	} else {
		b.suppressed++
	}
	b.mu.Unlock()
	switch {
	case within && suppressed > 0:
		g.log.Info("refused tokens from a client IP were not logged while it was over its failed-authentication budget",
			"client_ip", ip, "not_logged", suppressed)
		fallthrough
	case within:
		g.log.Info("token refused", "kind", a.kind, "issuer", issuer, "client_ip", ip, "request_id", q.ci.requestID, "reason", a.description)
	case suppressed == 0:
		g.log.Warn("client IP is over its failed-authentication budget (limits.failed_auth_per_minute); its refused tokens are counted, not logged, until it recovers",
			"client_ip", ip, "kind", a.kind, "issuer", issuer, "request_id", q.ci.requestID)
	}
	return a
}

// retrySeconds is a Retry-After value: d rounded up to whole seconds, at
// least 1; 5 when the wait is unknown.
func retrySeconds(d time.Duration) int {
	if d <= 0 {
		return 5
	}
	return max(1, int(math.Ceil(d.Seconds())))
}
