package rpc

import (
	"cmp"
	"encoding/json"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/proto"
)

// Raw keeps a reference to a JSON value inside the bytes it was decoded
// from, without copying it (the gateway owns the request body, and so the
// envelope and the arguments, for the whole call; a note body can be
// large).
type Raw []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *Raw) UnmarshalJSON(b []byte) error { *r = b; return nil }

// str decodes an optional string argument; ok reports a non-empty value.
func (a *Args) str(name string, raw Raw) (s string, ok bool, err error) {
	if raw == nil || string(raw) == "null" {
		return "", false, nil
	}
	if s, ok = JSONString(raw); !ok {
		return "", false, toolspec.NotString(name, raw)
	}
	return s, s != "", nil
}

// route derives the wing a call addresses from the arguments its tool's
// spec names, in order (toolspec.Meta.Routes): a wing argument is the
// wing; a note reference (an id, or a wiki or inbox path) names its wing
// as the shard reads it (brain.RefWing); a path argument routes only as a
// path. ok is false when no wing is derivable; err reports a malformed
// argument (an *Error with brain.CodeInvalidArgument).
func (a *Args) Route(routes []toolspec.RouteArg) (wing string, ok bool, err error) {
	var mistyped error // a routing argument that is not a string: the shard's refusal, unless another routes
	for _, r := range routes {
		s, ok, err := a.str(r.Arg, a.Get(r.Arg))
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
func (a *Args) AgentKey() string {
	var k string
	raw := a.Get(brain.IdempotencyKeyArg)
	if raw == nil || json.Unmarshal(raw, &k) != nil || len(k) > proto.MaxIdempotencyKeyBytes {
		return ""
	}
	return k
}
