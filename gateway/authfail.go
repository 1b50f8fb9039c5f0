package gateway

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
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

// refuseAuth answers a request whose token was refused, writes one log
// line per refused token (kind, issuer, client IP; never the token) and
// spends the client IP's failed-authentication budget.
func (g *Gateway) refuseAuth(w http.ResponseWriter, r *http.Request, rid string, now time.Time, err error) {
	f := mapAuthError(err)
	g.metrics.authFailures.WithLabelValues(f.Kind).Inc()
	var se *sso.Error
	errors.As(err, &se)
	issuer, repeat, retry := "", false, time.Duration(0)
	if se != nil {
		issuer, repeat, retry = se.Issuer, se.Repeat, se.RetryAfter
	}
	ip := g.clientIP(r)
	switch {
	case f.Status == http.StatusServiceUnavailable:
		// The token may be good: the IdP cannot be asked right now. Not
		// the client's failure, so the budget is not spent.
		secs := retrySeconds(retry)
		g.log.Warn("token refused: cannot verify it now", "kind", f.Kind, "issuer", issuer, "client_ip", ip,
			"request_id", rid, "retry_after_seconds", secs, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeOAuthError(w, f.Status, "temporarily_unavailable", f.Description)
		return
	case f.Kind == sso.NoToken.String():
		// RFC 6750 §3.1: no credentials, no error code. Not a failed
		// authentication: every client's first request looks so.
		w.Header().Set("WWW-Authenticate", g.challenge("", ""))
		writeOAuthError(w, http.StatusUnauthorized, "", "a bearer token from the company's SSO is required: "+f.Description)
		return
	}
	b := g.authBudget(ip)
	within := b.lim.AllowN(now, 1)
	if repeat && !within {
		// The same refused token again, from an address over its budget.
		g.metrics.rateLimited.WithLabelValues("failed_auth_ip").Inc()
		secs := retryAfter(b.lim, now)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		refuse(w, ErrTooManyAuthFailed, nil, fmt.Sprintf("this token was refused (%s) and %s keeps sending it; get a new token, or retry in %ds", f.Description, ip, secs))
		return
	}
	if !repeat {
		b.mu.Lock()
		suppressed := b.suppressed
		switch {
		case within:
			b.suppressed = 0
		default:
			b.suppressed++
		}
		b.mu.Unlock()
		switch {
		case within && suppressed > 0:
			g.log.Info("refused tokens from a client IP were not logged while it was over its failed-authentication budget",
				"client_ip", ip, "not_logged", suppressed)
			fallthrough
		case within:
			g.log.Info("token refused", "kind", f.Kind, "issuer", issuer, "client_ip", ip, "request_id", rid, "reason", f.Description)
		case suppressed == 0:
			g.log.Warn("client IP is over its failed-authentication budget (limits.failed_auth_per_minute); its refused tokens are counted, not logged, until it recovers",
				"client_ip", ip, "kind", f.Kind, "issuer", issuer, "request_id", rid)
		}
	}
	w.Header().Set("WWW-Authenticate", g.challenge(f.OAuthCode, f.Description))
	writeOAuthError(w, f.Status, f.OAuthCode, f.Description)
}

// retrySeconds is a Retry-After value: d rounded up to whole seconds, at
// least 1; 5 when the wait is unknown.
func retrySeconds(d time.Duration) int {
	if d <= 0 {
		return 5
	}
	return max(1, int(math.Ceil(d.Seconds())))
}
