package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
)

// rawRef keeps a reference to a JSON value inside the arguments it was
// decoded from, without copying it (the gateway owns the argument bytes for
// the whole call, and a note body can be large).
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(b []byte) error { *r = b; return nil }

// routeArgs are the only argument fields the gateway reads to route a call,
// found by their exact names: encoding/json's struct decoding would also
// take "WING" or "Id" for them, which the shard refuses as unknown
// arguments. The arguments themselves are forwarded unchanged.
type routeArgs struct {
	wing, id, path rawRef // nil when absent
	// key (idempotency_key) is read, not routed on: a write call carries
	// the agent's key beside the arguments too (see idempotencyKey).
	key rawRef
}

// parseRouteArgs reads the routing fields of a call's arguments. Empty
// arguments have none; anything but a JSON object (or null) is an *Error
// with brain.CodeInvalidArgument.
func parseRouteArgs(args []byte) (routeArgs, error) {
	var ra routeArgs
	if len(bytes.TrimSpace(args)) == 0 {
		return ra, nil
	}
	var m map[string]rawRef
	if err := json.Unmarshal(args, &m); err != nil {
		return ra, newError(brain.CodeInvalidArgument, ErrInvalidArgument, "the arguments are not a JSON object: %v", err)
	}
	ra.wing, ra.id, ra.path, ra.key = m["wing"], m["id"], m["path"], m["idempotency_key"]
	return ra, nil
}

// str decodes an optional string argument; ok reports a non-empty value.
func (ra routeArgs) str(name string, raw rawRef) (s string, ok bool, err error) {
	if raw == nil || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, newError(brain.CodeInvalidArgument, ErrInvalidArgument, "argument %q must be a string", name)
	}
	return s, s != "", nil
}

// hasWing reports whether the arguments carry a non-empty "wing".
func (ra routeArgs) hasWing() (bool, error) {
	_, ok, err := ra.str("wing", ra.wing)
	return ok, err
}

// route derives the wing a call addresses: the "wing" argument; else the
// wing of "id", a note reference (a note id, or a wiki or inbox path); else
// the wing of "path", a wiki or inbox path. Both are read as the shard
// reads them (brain.RefWing). ok is false when no wing is derivable; err
// reports a malformed argument (an *Error with brain.CodeInvalidArgument).
func (ra routeArgs) route() (wing string, ok bool, err error) {
	if s, ok, err := ra.str("wing", ra.wing); err != nil || ok {
		return s, ok, err
	}
	if s, ok, err := ra.str("id", ra.id); err != nil {
		return "", false, err
	} else if ok {
		if w, _ := brain.RefWing(s); w != "" {
			return w, true, nil
		}
	}
	if s, ok, err := ra.str("path", ra.path); err != nil {
		return "", false, err
	} else if ok {
		if w, isPath := brain.RefWing(s); isPath && w != "" {
			return w, true, nil
		}
	}
	return "", false, nil
}

// agentKey is the agent's idempotency_key, "" when absent or not a string
// of at most proto.MaxIdempotencyKeyBytes (the shard then refuses the
// argument itself).
func (ra routeArgs) agentKey() string {
	var k string
	if ra.key == nil || json.Unmarshal(ra.key, &k) != nil || len(k) > proto.MaxIdempotencyKeyBytes {
		return ""
	}
	return k
}

// routeWing parses args and routes them (route).
func routeWing(args []byte) (wing string, ok bool, err error) {
	ra, err := parseRouteArgs(args)
	if err != nil {
		return "", false, err
	}
	return ra.route()
}

// writes reports whether the tool needs write or curate in wing w (from
// the capability in its descriptor's _meta; the catalog's when the wing's
// own descriptors are not known yet).
func (g *Gateway) writes(w *wing, tool string) bool {
	need, found := brain.Caps(0), false
	if ts := w.tools.Load(); ts != nil {
		for _, t := range *ts {
			if t.Name == tool {
				need, found = t.need, true
				break
			}
		}
	}
	if !found {
		if cat := g.cat.Load(); cat != nil {
			if e, ok := cat.by[tool]; ok {
				need = e.desc.need
			}
		}
	}
	return need&(brain.CapWrite|brain.CapCurate) != 0
}

// idempotencyKey is the key the gateway sends with a write call: the
// agent's idempotency_key when it gave one, else a fresh random key, so
// that every retry of the call (a re-mint, a reconnection) is applied at
// most once.
func idempotencyKey(agent string) string {
	if agent != "" {
		return agent
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gateway: crypto/rand: " + err.Error()) // not recoverable
	}
	return "gw-" + hex.EncodeToString(b[:])
}
