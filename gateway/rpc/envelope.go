package rpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/internal/jsontext"
)

// One walk of a tools/call body.
//
// The lean path serves a stateless tools/call whose body is plain: a JSON
// object holding jsonrpc, id, method and params, params holding name,
// arguments and _meta, every key exactly a name, at most once, without
// escapes, and the strings read (jsonrpc, method, name) without escapes.
// ParseLean reads all of it, and the top-level members of the arguments
// (the routing fields and the idempotency key), in one walk of the body,
// descending into params, arguments and _meta as it meets them: the body
// is decoded once. Anything else (a key spelled another way, a repeated
// key, an escape where the walk would have to decode one, the task or
// multi-round-trip fields) is left to encoding/json, which reads it as
// mcp-go does: the lean walk never decides differently from it, it only
// declines (FuzzLeanParse).

// Lean is what leanParse found.
type Lean struct {
	Msg       Message
	Name      string
	Args      Args
	ArgsRaw   Raw  // the arguments' bytes, nil when absent
	ArgsFit   bool // every number of the arguments fits a float64
	Meta      Raw
	Version   Raw // _meta's protocol version
	Caps      Raw // _meta's client capabilities
	MetaShape Shape
	MetaFit   bool
}

// ParseLean walks a body once (see above); ok is false when the body is
// not one the lean walk reads, and then nothing of it was decided.
func ParseLean(body []byte) (lb Lean, ok bool) {
	if !json.Valid(body) {
		return lb, false
	}
	w := walker{b: body}
	lb.ArgsFit = true // no arguments: nothing that does not fit
	seen := map[string]bool{}
	end := w.object(jsontext.SkipSpace(body, 0), func(key []byte, i int) int {
		k, fresh := plainKey(key, seen, "jsonrpc", "id", "method", "params", "result", "error")
		switch {
		case !fresh:
			return -1
		case k == "params":
			return w.params(i, &lb)
		}
		e := w.skip(i)
		switch k {
		case "jsonrpc":
			lb.Msg.JSONRPC, ok = plainString(body[i:e])
		case "method":
			lb.Msg.Method, ok = plainString(body[i:e])
		case "id":
			lb.Msg.ID, ok = body[i:e], true
		case "result", "error":
			ok = false // a response, not the lean path's
		default:
			ok = true // ignored, as encoding/json ignores it
		}
		if !ok {
			return -1
		}
		return e
	})
	if end < 0 || jsontext.SkipSpace(body, end) != len(body) || lb.Msg.Params == nil {
		return Lean{}, false
	}
	return lb, true
}

// params walks tools/call's params: name, arguments and _meta.
func (w *walker) params(i int, lb *Lean) int {
	if jsontext.SkipSpace(w.b, i) >= len(w.b) || w.b[jsontext.SkipSpace(w.b, i)] != '{' {
		return -1
	}
	seen := map[string]bool{}
	end := w.object(i, func(key []byte, j int) int {
		k, fresh := plainKey(key, seen, "name", "arguments", "_meta", "task", "inputResponses", "requestState")
		switch {
		case !fresh:
			return -1
		case k == "arguments":
			return w.arguments(j, lb)
		case k == "_meta":
			return w.meta(j, lb)
		}
		e := w.skip(j)
		switch k {
		case "name":
			var ok bool
			if lb.Name, ok = plainString(w.b[j:e]); !ok {
				return -1
			}
		case "task", "inputResponses", "requestState":
			return -1 // decoded only by encoding/json
		}
		return e
	})
	if end >= 0 {
		lb.Msg.Params = w.b[jsontext.SkipSpace(w.b, i):end]
	}
	return end
}

// arguments records the top-level members of the arguments; a value that
// is not an object keeps its shape for the refusal.
func (w *walker) arguments(i int, lb *Lean) int {
	i = jsontext.SkipSpace(w.b, i)
	if w.b[i] != '{' {
		before := w.fit
		w.fit = true
		e := w.skip(i)
		lb.ArgsFit = w.fit
		w.fit = before && w.fit
		if e < 0 {
			return -1
		}
		shape, _ := WalkJSON(w.b[i:e], func([]byte, Raw) {})
		lb.Args, lb.ArgsRaw = Args{shape: shape}, w.b[i:e]
		return e
	}
	before := w.fit
	w.fit = true
	lb.Args.shape = ShapeObject
	end := w.object(i, func(key []byte, j int) int {
		e := w.skip(j)
		if e >= 0 {
			lb.Args.set(unquoteKey(key), w.b[j:e])
		}
		return e
	})
	lb.ArgsFit, w.fit = w.fit, before && w.fit
	if end >= 0 {
		lb.ArgsRaw = w.b[i:end]
	}
	return end
}

// meta records _meta and the two members a 2026-07-28 request carries.
func (w *walker) meta(i int, lb *Lean) int {
	i = jsontext.SkipSpace(w.b, i)
	before := w.fit
	w.fit = true
	e := -1
	if w.b[i] == '{' {
		lb.MetaShape = ShapeObject
		e = w.object(i, func(key []byte, j int) int {
			v := w.skip(j)
			switch string(unquoteKey(key)) {
			case mcp.MetaKeyProtocolVersion:
				lb.Version = w.b[j:v]
			case mcp.MetaKeyClientCapabilities:
				lb.Caps = w.b[j:v]
			}
			return v
		})
	} else {
		e = w.skip(i)
		if bytes.Equal(w.b[i:max(e, i)], []byte("null")) {
			lb.MetaShape = ShapeAbsent
		} else {
			lb.MetaShape = ShapeOther
		}
	}
	lb.MetaFit, w.fit = w.fit, before && w.fit
	if e >= 0 && lb.MetaShape == ShapeObject {
		lb.Meta = w.b[i:e]
	}
	return e
}

// walker walks valid JSON (json.Valid checked it) once, descending where
// its callers ask.
type walker struct {
	b   []byte
	fit bool // every number seen fits a float64
}

// object walks the object starting at or after i, calling member with each
// key (quoted) and the start of its value; member returns the index just
// past the value, or -1 to stop. object returns the index past '}', or -1.
func (w *walker) object(i int, member func(key []byte, i int) int) int {
	i = jsontext.SkipSpace(w.b, i)
	if i >= len(w.b) || w.b[i] != '{' {
		return -1
	}
	for i = jsontext.SkipSpace(w.b, i+1); i < len(w.b) && w.b[i] != '}'; i = jsontext.SkipSpace(w.b, i) {
		if w.b[i] == ',' {
			i = jsontext.SkipSpace(w.b, i+1)
		}
		kEnd := jsontext.StringEnd(w.b, i)
		if kEnd > len(w.b) {
			return -1
		}
		key := w.b[i:kEnd]
		i = jsontext.SkipSpace(w.b, kEnd) + 1 // past ':'
		if i = member(key, jsontext.SkipSpace(w.b, i)); i < 0 {
			return -1
		}
	}
	if i >= len(w.b) {
		return -1
	}
	return i + 1
}

// skip returns the index just past the value at i, noting whether its
// numbers fit.
func (w *walker) skip(i int) int {
	e, fit := skipValue(w.b, i)
	w.fit = w.fit && fit
	if e > len(w.b) {
		return -1
	}
	return e
}

// plainKey unquotes a key of the lean walk: it must be plain (no escape),
// and a key that equals a known name only under case folding, or a known
// name seen before, declines the walk (fresh false). It returns the key.
func plainKey(quoted []byte, seen map[string]bool, known ...string) (string, bool) {
	if bytes.IndexByte(quoted, '\\') >= 0 {
		return "", false
	}
	k := string(quoted[1 : len(quoted)-1])
	for _, n := range known {
		switch {
		case k == n:
			if seen[n] {
				return "", false
			}
			seen[n] = true
			return k, true
		case len(k) == len(n) && bytes.EqualFold([]byte(k), []byte(n)):
			return "", false
		}
	}
	return k, true
}

// plainString reads a JSON string without escapes whose bytes are valid
// UTF-8: what encoding/json would decode it to.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}
