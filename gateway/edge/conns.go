package edge

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// ConnTracker bounds the public connections that have not carried an
// authenticated request yet: a peer can hold a socket open with no token
// (slow headers, a withheld body, an idle keep-alive) at most that many
// times over, then new connections are closed at once. A connection stops
// counting once one of its requests authenticates.
type ConnTracker struct {
	max      int
	mu       sync.Mutex
	marks    map[net.Conn]*connMark
	unauth   atomic.Int64
	rejected atomic.Int64
}

// connMark is one connection's state, reachable from its requests'
// contexts.
type connMark struct {
	authed atomic.Bool
	t      *ConnTracker
}

type connMarkKey struct{}

// ConnContext is http.Server.ConnContext: it runs before the connection's
// StateNew hook.
func (t *ConnTracker) ConnContext(ctx context.Context, c net.Conn) context.Context {
	m := &connMark{t: t}
	t.mu.Lock()
	t.marks[c] = m
	t.mu.Unlock()
	return context.WithValue(ctx, connMarkKey{}, m)
}

// ConnState is http.Server.ConnState.
func (t *ConnTracker) ConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		if t.unauth.Add(1) > int64(t.max) {
			t.rejected.Add(1)
			_ = c.Close() // counted out again at StateClosed
		}
	case http.StateClosed, http.StateHijacked:
		t.mu.Lock()
		m := t.marks[c]
		delete(t.marks, c)
		t.mu.Unlock()
		if m == nil || m.authed.CompareAndSwap(false, true) {
			t.unauth.Add(-1)
		}
	}
}

// MarkAuthenticated marks the connection of ctx as having carried an
// authenticated request.
func MarkAuthenticated(ctx context.Context) {
	if m, ok := ctx.Value(connMarkKey{}).(*connMark); ok && m.authed.CompareAndSwap(false, true) {
		m.t.unauth.Add(-1)
	}
}

// Unauthenticated is how many open connections have not carried an
// authenticated request yet.
func (t *ConnTracker) Unauthenticated() int64 { return t.unauth.Load() }

// Rejected is how many connections were closed at once, over the bound.
func (t *ConnTracker) Rejected() int64 { return t.rejected.Load() }
