package edge

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// MCP session ids (Mcp-Session-Id, the session-era revisions) are bound to
// the identity that created them, without server-side state, so any replica
// can check them:
//
//	bs1.<nonce>.<tag>   nonce = 16 random bytes, tag = the first 16 bytes of
//	                    SHA-256("brainstem/session-id/1" 0 nonce 0 email),
//	                    both base64url without padding
//
// A request that carries a session id whose tag does not match its own
// canonical email is answered 404, as for an unknown session: another user
// can neither end (DELETE), nor join (GET stream), nor use (POST) it. The
// tag needs no secret: the check compares it with the identity the request
// proved with its own token, which an attacker cannot choose. It does let
// the holder of a session id test whether it belongs to a guessed email; a
// session id is only ever sent to the client that created it.
const sessionIDVersion = "bs1"

// errSessionNotYours is why a session id is refused.
var errSessionNotYours = errors.New("gateway: session id not issued to this caller")

func sessionTag(nonce []byte, email string) []byte {
	sum := sha256.Sum256(slices.Concat([]byte("brainstem/session-id/1\x00"), nonce, []byte{0}, []byte(email)))
	return sum[:16]
}

// NewSessionID returns a session id bound to email.
func NewSessionID(email string) string {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails on supported platforms
	enc := base64.RawURLEncoding
	return sessionIDVersion + "." + enc.EncodeToString(nonce[:]) + "." + enc.EncodeToString(sessionTag(nonce[:], email))
}

// sessionIDFor reports whether id is a session id bound to email.
func sessionIDFor(id, email string) bool {
	version, rest, ok := strings.Cut(id, ".")
	if !ok || version != sessionIDVersion || email == "" {
		return false
	}
	n64, t64, ok := strings.Cut(rest, ".")
	if !ok || len(n64) != 22 || len(t64) != 22 {
		return false
	}
	nonce, err1 := base64.RawURLEncoding.DecodeString(n64)
	tag, err2 := base64.RawURLEncoding.DecodeString(t64)
	if err1 != nil || err2 != nil {
		return false
	}
	return subtle.ConstantTimeCompare(tag, sessionTag(nonce, email)) == 1
}

// SessionIDs is mcp-go's session id manager resolver: per request, a
// manager bound to the request's verified identity, which Email reads from
// the request ("" when it has none).
type SessionIDs struct {
	Email func(*http.Request) string
}

var (
	_ server.SessionIdManagerResolver = SessionIDs{}
	_ server.SessionIdManager         = boundSessionIDs{}
)

// ResolveSessionIdManager implements server.SessionIdManagerResolver. r is
// nil when mcp-go's idle sweeper terminates a session.
func (s SessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	var email string
	if r != nil {
		email = s.Email(r)
	}
	return boundSessionIDs{email: email}
}

// boundSessionIDs issues and accepts the session ids of one email. It keeps
// no state: a terminated session's id stays valid for its owner, as with
// mcp-go's default stateless manager (per-session state on a replica is
// freed by DELETE or the idle TTL).
type boundSessionIDs struct{ email string }

func (b boundSessionIDs) Generate() string { return NewSessionID(b.email) }

func (b boundSessionIDs) Validate(id string) (isTerminated bool, err error) {
	if !sessionIDFor(id, b.email) {
		return false, errSessionNotYours
	}
	return false, nil
}

func (b boundSessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if b.email != "" && !sessionIDFor(id, b.email) { // "" is the idle sweeper
		return false, errSessionNotYours
	}
	return false, nil
}

// foreignSession reports whether a session-era request (of JSON-RPC
// method, from email) carries an Mcp-Session-Id that was not issued to its
// caller. mcp-go does not check the id of a GET (it opens, or joins, the
// session's stream) and answers a DELETE by freeing the session's state,
// so the edge checks every session-era request itself before mcp-go sees
// it. An initialize is not checked: mcp-go issues a new id for it whatever
// the request carries.
func foreignSession(r *http.Request, method, email string) bool {
	sid := r.Header.Get(server.HeaderKeySessionID)
	if sid == "" || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || method == string(mcp.MethodInitialize) {
		return false
	}
	return !sessionIDFor(sid, email)
}
