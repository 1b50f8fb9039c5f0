package gateway

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
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
		return "", false, toolspec.WrongType(name, toolspec.String, jsonKind(raw))
	}
	return s, s != "", nil
}

// jsonKind names a JSON value's kind as encoding/json's type errors do.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// route derives the wing a call addresses from the arguments its tool's
// spec names, in order (toolspec.Meta.Routes): a wing argument is the
// wing; a note reference (an id, or a wiki or inbox path) names its wing
// as the shard reads it (brain.RefWing); a path argument routes only as a
// path. ok is false when no wing is derivable; err reports a malformed
// argument (an *Error with brain.CodeInvalidArgument).
func (a *callArgs) route(routes []toolspec.RouteArg) (wing string, ok bool, err error) {
	var mistyped error // a routing argument that is not a string: the shard's refusal, unless another routes
	for _, r := range routes {
		s, ok, err := a.str(r.Arg, a.get(r.Arg))
		if err != nil {
			mistyped = cmp.Or(mistyped, err)
			continue
		}
		if !ok {
			continue
		}
		switch w, isPath := brain.RefWing(s); r.As {
		case toolspec.RouteWing:
			return s, true, nil
		case toolspec.RouteRef:
			if w != "" {
				return w, true, nil
			}
		case toolspec.RoutePath:
			if isPath && w != "" {
				return w, true, nil
			}
		}
	}
	return "", false, mistyped
}

// agentKey is the agent's idempotency_key, "" when absent or not a string
// of at most proto.MaxIdempotencyKeyBytes (the shard then refuses the
// argument itself).
func (a *callArgs) agentKey() string {
	var k string
	raw := a.get(brain.IdempotencyKeyArg)
	if raw == nil || json.Unmarshal(raw, &k) != nil || len(k) > proto.MaxIdempotencyKeyBytes {
		return ""
	}
	return k
}

// routeWing parses args and routes them (route).
func routeWing(args []byte, routes []toolspec.RouteArg) (wing string, ok bool, err error) {
	a, err := parseArgs(args)
	if err != nil {
		return "", false, err
	}
	return a.route(routes)
}

// toolSpec is what the gateway knows of a shard tool, from the spec its
// descriptor carries, read from the catalog once per call and passed down.
type toolSpec struct {
	meta       toolspec.Meta // capability, routing and fan-out
	known      bool          // some wing advertises the tool
	structured bool          // it declares an outputSchema
}

// writes reports whether a call of the tool changes a wing: its spec needs
// write or curate. A tool the gateway does not know counts as a write (it
// carries no idempotency key, so a lost answer is never sent again).
func (s toolSpec) writes() bool { return !s.known || s.meta.Writes() }

// toolSpec looks a shard tool up in the catalog (the first wing in config
// order that advertises it); known is false for a tool no wing advertises.
func (g *Gateway) toolSpec(tool string) toolSpec {
	if cat := g.cat.Load(); cat != nil {
		if e, ok := cat.by[tool]; ok {
			return toolSpec{meta: e.desc.meta, known: true, structured: len(e.desc.OutputSchema) > 0}
		}
	}
	return toolSpec{}
}

// writes reports whether a call of tool changes a wing (toolSpec.writes),
// for the calls the gateway makes of its own (cross links, prompts,
// resources, notifications).
func (g *Gateway) writes(tool string) bool { return g.toolSpec(tool).writes() }

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
