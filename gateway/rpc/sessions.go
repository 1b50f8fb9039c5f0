package rpc

import (
	"cmp"
	"net/http"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The lean path on the session revisions (2025-06-18 and before).
//
// A session-era tools/call differs from a stateless one in two things
// mcp-go does around it: it checks the Mcp-Session-Id, and it marks the
// session active for its idle sweeper (touchSession, unexported), which
// frees a session's state (its registration, for notifications) once it
// has been idle for the idle TTL. The edge checks the id on every request
// before the lean path sees it (a foreign or malformed one is answered 404,
// as mcp-go answers an invalid one), and ids are stateless, so a valid one
// stays valid after the sweep. The touch is what the lean path cannot do.
//
// So the lean path answers a session's tools/call only while mcp-go has
// seen that session recently: a sessionGate remembers when mcp-go last
// served a request of each session, and a call more than an eighth of the
// idle TTL after that goes through mcp-go, which touches the session. mcp-go's
// view of a session's last activity then lags the truth by at most
// an eighth of the idle TTL, so an idle session's state is freed no more
// than that much early, and an active one's never. One call in every such
// interval pays mcp-go's price; the others are answered as bytes.
//
// mcp-go also forwards, on a POST's response, notifications queued for the
// session while the call runs (upgrading the answer to an event stream).
// A call answered here leaves them queued for the session's GET stream or
// its next request through mcp-go.

// sessionGate remembers the sessions mcp-go served recently.
type sessionGate struct {
	every time.Duration // how long after mcp-go served a session the lean path may answer it
	now   func() time.Time
	seen  *lru.Cache[string, int64] // session id → unix nanoseconds when mcp-go last served it
}

// minGateSessions is the fewest sessions a gate remembers: one it forgot
// only sends its next call through mcp-go.
const minGateSessions = 1024

func newSessionGate(idleTTL time.Duration, sessions int, now func() time.Time) (*sessionGate, error) {
	seen, err := lru.New[string, int64](max(sessions, minGateSessions))
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &sessionGate{every: idleTTL / 8, now: now, seen: seen}, nil
}

// open reports whether mcp-go served session id within the gate's interval.
func (g *sessionGate) open(id string) bool {
	at, ok := g.seen.Peek(id)
	return ok && g.now().UnixNano()-at < int64(g.every)
}

// SessionServed records that mcp-go served a session-era POST (its
// request header h, answered with status and response header rh): mcp-go
// touched the session then, an initialize's new one included.
func (s *LeanServer) SessionServed(h, rh http.Header, status int) {
	if mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) || status == http.StatusNotFound || status == http.StatusBadRequest {
		return
	}
	if id := cmp.Or(rh.Get(server.HeaderKeySessionID), h.Get(server.HeaderKeySessionID)); id != "" { // rh's: set on an initialize's answer
		s.sessions.seen.Add(id, s.sessions.now().UnixNano())
	}
}
