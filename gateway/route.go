package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
)

// rawRef keeps a reference to a JSON value inside the bytes it was decoded
// from, without copying it (the gateway owns the request body, and so the
// envelope and the arguments, for the whole call; a note body can be
// large).
type rawRef []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawRef) UnmarshalJSON(b []byte) error { *r = b; return nil }

// str decodes an optional string argument; ok reports a non-empty value.
func (a *callArgs) str(name string, raw rawRef) (s string, ok bool, err error) {
	if raw == nil || string(raw) == "null" {
		return "", false, nil
	}
	if s, ok = jsonString(raw); !ok {
		return "", false, newError(brain.CodeInvalidArgument, ErrInvalidArgument, "argument %q must be a string", name)
	}
	return s, s != "", nil
}

// hasWing reports whether the arguments carry a non-empty "wing".
func (a *callArgs) hasWing() (bool, error) {
	_, ok, err := a.str("wing", a.wing)
	return ok, err
}

// route derives the wing a call addresses: the "wing" argument; else the
// wing of "id", a note reference (a note id, or a wiki or inbox path); else
// the wing of "path", a wiki or inbox path. Both are read as the shard
// reads them (brain.RefWing). ok is false when no wing is derivable; err
// reports a malformed argument (an *Error with brain.CodeInvalidArgument).
func (a *callArgs) route() (wing string, ok bool, err error) {
	if s, ok, err := a.str("wing", a.wing); err != nil || ok {
		return s, ok, err
	}
	if s, ok, err := a.str("id", a.id); err != nil {
		return "", false, err
	} else if ok {
		if w, _ := brain.RefWing(s); w != "" {
			return w, true, nil
		}
	}
	if s, ok, err := a.str("path", a.path); err != nil {
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
func (a *callArgs) agentKey() string {
	var k string
	if a.key == nil || json.Unmarshal(a.key, &k) != nil || len(k) > proto.MaxIdempotencyKeyBytes {
		return ""
	}
	return k
}

// routeWing parses args and routes them (route).
func routeWing(args []byte) (wing string, ok bool, err error) {
	a, err := parseArgs(args)
	if err != nil {
		return "", false, err
	}
	return a.route()
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
