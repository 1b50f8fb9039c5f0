package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
)

// routeArgs are the only argument fields the gateway reads to route a call.
// The arguments themselves are forwarded unchanged.
type routeArgs struct {
	Wing *json.RawMessage `json:"wing"`
	ID   *json.RawMessage `json:"id"`
	Path *json.RawMessage `json:"path"`
	// IdempotencyKey is read, not routed on: a write call carries the
	// agent's key beside the arguments too (see idempotencyKey).
	IdempotencyKey *json.RawMessage `json:"idempotency_key"`
}

// routeWing derives the wing a call addresses: the "wing" argument, else the
// first segment of "id", else the segment after "wiki/" or "inbox/" in
// "path". ok is false when none is present; err reports a malformed
// argument (an *Error with CodeInvalidArgument).
func routeWing(args []byte) (wing string, ok bool, err error) {
	var ra routeArgs
	if len(bytes.TrimSpace(args)) == 0 {
		return "", false, nil
	}
	if err := json.Unmarshal(args, &ra); err != nil {
		return "", false, newError(CodeInvalidArgument, ErrInvalidArgument, "the arguments are not a JSON object: %v", err)
	}
	return ra.wing()
}

// route parses the arguments once for routing: the wing (as routeWing) and
// the agent's idempotency_key, "" when absent or not a string of at most
// proto.MaxIdempotencyKeyBytes (the shard then refuses the argument itself).
func route(args []byte) (wing string, ok bool, key string, err error) {
	var ra routeArgs
	if len(bytes.TrimSpace(args)) == 0 {
		return "", false, "", nil
	}
	if err := json.Unmarshal(args, &ra); err != nil {
		return "", false, "", newError(CodeInvalidArgument, ErrInvalidArgument, "the arguments are not a JSON object: %v", err)
	}
	if ra.IdempotencyKey != nil {
		var k string
		if json.Unmarshal(*ra.IdempotencyKey, &k) == nil && len(k) <= proto.MaxIdempotencyKeyBytes {
			key = k
		}
	}
	wing, ok, err = ra.wing()
	return wing, ok, key, err
}

func (ra *routeArgs) wing() (wing string, ok bool, err error) {
	str := func(name string, raw *json.RawMessage) (string, bool, error) {
		if raw == nil || string(*raw) == "null" {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(*raw, &s); err != nil {
			return "", false, newError(CodeInvalidArgument, ErrInvalidArgument, "argument %q must be a string", name)
		}
		return s, s != "", nil
	}
	if s, ok, err := str("wing", ra.Wing); err != nil || ok {
		return s, ok, err
	}
	if s, ok, err := str("id", ra.ID); err != nil {
		return "", false, err
	} else if ok {
		first, _, _ := strings.Cut(strings.TrimPrefix(s, "/"), "/")
		if first != "" {
			return first, true, nil
		}
	}
	if s, ok, err := str("path", ra.Path); err != nil {
		return "", false, err
	} else if ok {
		p := strings.TrimPrefix(s, "/")
		for _, prefix := range []string{"wiki/", "inbox/"} {
			if rest, found := strings.CutPrefix(p, prefix); found {
				if first, _, _ := strings.Cut(rest, "/"); first != "" {
					return first, true, nil
				}
			}
		}
	}
	return "", false, nil
}

// hasWingArg reports whether the arguments carry a non-empty "wing".
func hasWingArg(args []byte) (bool, error) {
	var ra routeArgs
	if len(bytes.TrimSpace(args)) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(args, &ra); err != nil {
		return false, newError(CodeInvalidArgument, ErrInvalidArgument, "the arguments are not a JSON object: %v", err)
	}
	if ra.Wing == nil || string(*ra.Wing) == "null" {
		return false, nil
	}
	var s string
	if err := json.Unmarshal(*ra.Wing, &s); err != nil {
		return false, newError(CodeInvalidArgument, ErrInvalidArgument, "argument %q must be a string", "wing")
	}
	return s != "", nil
}

// writes reports whether the tool needs write or curate in wing w (from
// the capability in its descriptor's _meta; the catalog's when the wing's
// own descriptors are not known yet).
func (g *Gateway) writes(w *wing, tool string) bool {
	need, found := auth.Caps(0), false
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
	return need&(auth.CapWrite|auth.CapCurate) != 0
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
