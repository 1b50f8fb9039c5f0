package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
)

// routeArgs are the only argument fields the gateway reads to route a call.
// The arguments themselves are forwarded unchanged.
type routeArgs struct {
	Wing *json.RawMessage `json:"wing"`
	ID   *json.RawMessage `json:"id"`
	Path *json.RawMessage `json:"path"`
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
