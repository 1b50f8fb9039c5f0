package edge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
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

func (e *Edge) authBudget(ip string) *authBudget {
	n := e.cfg.FailedAuthPerMinute
	return getOrAdd(e.ipBudgets, ip, func() *authBudget { return &authBudget{lim: rate.NewLimiter(rate.Limit(float64(n)/60), n)} })
}

// CloseUnread makes an HTTP/1 connection close right after this answer
// when the request's body was not read. Otherwise net/http would first try
// to drain the body, and a peer that withholds it (with no token, say)
// would hold the answer and the socket until body_timeout. Call it before
// writing the answer.
func CloseUnread(w http.ResponseWriter, r *http.Request, hasBody bool) {
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
func (e *Edge) refuseAuth(q *Request, err error) {
	a := authRefusalOf(err)
	e.AuthFailures.WithLabelValues(a.kind).Inc()
	se, _ := errors.AsType[*sso.Error](err)
	var issuer string
	if se != nil {
		issuer = se.Issuer
	}
	ip := e.ClientIP(q.R)
	switch {
	case a.status == http.StatusServiceUnavailable:
		e.Log.Warn("token refused: cannot verify it now", "kind", a.kind, "issuer", issuer, "client_ip", ip,
			"request_id", q.RequestID, "retry_after_seconds", a.retryAfter, "err", err)
	case se != nil && se.Kind == sso.NoToken:
	default:
		a = e.spendAuthBudget(q, a, se != nil && se.Repeat, issuer, ip)
	}
	e.writeAuthRefusal(&q.Rec, a)
}

// spendAuthBudget spends the client IP's failed-authentication budget for
// a refused token and logs it (one line per refusal while within the
// budget, then a count). A token refused moments ago (repeat) sent again
// over the budget is answered 429 instead.
func (e *Edge) spendAuthBudget(q *Request, a authRefusal, repeat bool, issuer, ip string) authRefusal {
	b := e.authBudget(ip)
	within := b.lim.AllowN(q.Now, 1)
	if repeat {
		if !within {
			// The same refused token again, from an address over its budget.
			e.RateLimited.WithLabelValues("failed_auth_ip").Inc()
			return a.overBudget(ip, RetryAfter(b.lim, q.Now))
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
		e.Log.Info("refused tokens from a client IP were not logged while it was over its failed-authentication budget",
			"client_ip", ip, "not_logged", suppressed)
		fallthrough
	case within:
		e.Log.Info("token refused", "kind", a.kind, "issuer", issuer, "client_ip", ip, "request_id", q.RequestID, "reason", a.description)
	case suppressed == 0:
		e.Log.Warn("client IP is over its failed-authentication budget (limits.failed_auth_per_minute); its refused tokens are counted, not logged, until it recovers",
			"client_ip", ip, "kind", a.kind, "issuer", issuer, "request_id", q.RequestID)
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

// authRefusal is the whole answer to a request whose bearer token was
// refused: authRefusalOf decides it and writeAuthRefusal writes it, the one
// place for both. The status and RFC 6750 error code of each kind of
// refusal are the sso kind's own (sso.Error.HTTPStatus and OAuthCode; the
// facade refuses its tokens with sso errors too, so both are answered
// alike); this adds what the gateway decides: 503 for a verification that
// did not finish, 401 invalid_token for any other failure, Retry-After, the
// challenge, and 429 for a refused token sent again over the client IP's
// failed-authentication budget.
type authRefusal struct {
	status      int
	code        string // RFC 6750 error code (challenge and body); "" for none
	description string
	challenge   bool   // WWW-Authenticate: Bearer with resource_metadata and, with the facade, scope
	retryAfter  int    // Retry-After in seconds; 0 for none
	rateLimited bool   // over the failed-auth budget: refused as ErrTooManyAuthFailed (429, JSON-RPC body)
	kind        string // metrics label (the sso kind, "timeout" or "other")
}

// authRefusalOf decides the answer to a token refused with err: an
// *sso.Error, or a context error when verification did not finish in time.
func authRefusalOf(err error) authRefusal {
	se, ok := errors.AsType[*sso.Error](err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return authRefusal{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", retryAfter: retrySeconds(0),
				description: "token verification did not finish in time; retry shortly", kind: "timeout"}
		}
		return authRefusal{status: http.StatusUnauthorized, code: "invalid_token", challenge: true,
			description: "the token could not be verified", kind: "other"}
	}
	a := authRefusal{status: se.HTTPStatus(), code: se.OAuthCode(), description: se.Description, challenge: true, kind: se.Kind.String()}
	a.description = cmp.Or(a.description, "the token was refused")
	switch {
	case a.status == http.StatusServiceUnavailable:
		// The token may be good: the IdP cannot be asked right now.
		a.code, a.challenge, a.retryAfter = "temporarily_unavailable", false, retrySeconds(se.RetryAfter)
		a.description = "the identity provider cannot be reached to verify the token; retry shortly"
	case se.Kind == sso.NoToken:
		// RFC 6750 §3.1: no credentials, a challenge with no error code.
		a.description = "a bearer token from the company's SSO is required: " + a.description
	}
	return a
}

// overBudget turns a refusal into the answer to the same refused token
// sent again from ip while it is over its failed-authentication budget,
// which allows another refusal in retry seconds.
func (a authRefusal) overBudget(ip string, retry int) authRefusal {
	return authRefusal{status: RefusalOf(ErrTooManyAuthFailed).Status, retryAfter: retry, rateLimited: true, kind: a.kind,
		description: fmt.Sprintf("this token was refused (%s) and %s keeps sending it; get a new token, or retry in %ds", a.description, ip, retry)}
}

// writeAuthRefusal writes a refused token's answer.
func (e *Edge) writeAuthRefusal(w http.ResponseWriter, a authRefusal) {
	if a.challenge {
		w.Header().Set("WWW-Authenticate", e.challenge(a.code, a.description))
	}
	if a.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
	}
	if a.rateLimited {
		Refuse(w, ErrTooManyAuthFailed, nil, a.description) // 429, a JSON-RPC error body
		return
	}
	WriteOAuthError(w, a.status, a.code, a.description)
}

// challenge renders WWW-Authenticate (RFC 6750 §3, RFC 9728 §5.1).
func (e *Edge) challenge(code, description string) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	if code != "" {
		fmt.Fprintf(&b, "error=%s, ", QuoteParam(code))
		if description != "" {
			fmt.Fprintf(&b, "error_description=%s, ", QuoteParam(description))
		}
	}
	fmt.Fprintf(&b, "resource_metadata=%s", QuoteParam(e.cfg.MetadataURL))
	if scopes, ok := e.Scopes(); ok {
		fmt.Fprintf(&b, ", scope=%s", QuoteParam(strings.Join(scopes, " ")))
	}
	return b.String()
}
