package rpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/internal/jsontext"
)

// A call's arguments go to the shard byte for byte. The gateway reads a few
// fields of them — the arguments its tool's spec names as routing it
// (toolspec.Meta.Routes), the agent's idempotency key, and a search's query
// and limit for a cross-wing search — and finds them all in one pass
// (scanArgs), made once per call: on the lean path while checking that
// mcp-go would take the arguments, else in the tool handler.

// Args are the top-level members of a call's arguments, by their exact
// names, the last of duplicates winning, as encoding/json's map decoding
// finds them (its struct decoding would also take "WING" or "Id", which
// the shard refuses as unknown arguments). Each value is the raw JSON
// inside the arguments.
type Args struct {
	shape  Shape
	fields []argField
}

type argField struct {
	name string
	v    Raw
}

// get returns the raw value of the member named name, nil when absent.
func (a *Args) Get(name string) Raw {
	for i := len(a.fields) - 1; i >= 0; i-- {
		if a.fields[i].name == name {
			return a.fields[i].v
		}
	}
	return nil
}

// Shape is what the arguments are as a whole.
type Shape uint8

// Shape is what the arguments are as a whole.
func (a *Args) Shape() Shape { return a.shape }

const (
	ShapeAbsent  Shape = iota // empty, blank or null: no fields
	ShapeObject               // a JSON object
	ShapeOther                // another JSON value: refused (invalid_argument)
	ShapeInvalid              // not JSON at all
)

// maxArgFields bounds the members scanArgs keeps: a shard refuses more
// arguments than a tool has anyway, and no tool has this many.
const maxArgFields = 64

func (a *Args) set(name []byte, v Raw) {
	if len(a.fields) < maxArgFields {
		a.fields = append(a.fields, argField{string(name), v})
	}
}

// ScanArgs walks arguments once: it finds the members of callArgs and
// reports whether every number in the arguments fits a float64, which is
// what encoding/json needs to decode them into an interface (as mcp-go
// does; nothing else about valid JSON can fail there). The arguments are
// expected to be valid JSON (parseArgs validates first); what the walk
// sees is not, is argsInvalid.
func ScanArgs(b []byte) (a Args, fit bool) {
	a.shape, fit = WalkJSON(b, a.set)
	if a.shape != ShapeObject {
		a = Args{shape: a.shape}
	}
	return a, fit
}

// WalkJSON walks a JSON value once: for an object it calls field with each
// member's name (unquoted) and raw value, in order. It reports the value's
// shape and whether every number in it fits a float64.
func WalkJSON(b []byte, field func(name []byte, value Raw)) (shape Shape, fit bool) {
	i := jsontext.SkipSpace(b, 0)
	switch {
	case i == len(b):
		return ShapeAbsent, true
	case b[i] != '{':
		end, fit := skipValue(b, i)
		switch {
		case end > len(b) || jsontext.SkipSpace(b, end) != len(b):
			return ShapeInvalid, fit
		case bytes.Equal(b[i:end], []byte("null")):
			return ShapeAbsent, fit
		}
		return ShapeOther, fit
	}
	fit = true
	for i = jsontext.SkipSpace(b, i+1); i < len(b) && b[i] != '}'; i = jsontext.SkipSpace(b, i) {
		if b[i] == ',' {
			i = jsontext.SkipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return ShapeInvalid, fit
		}
		kEnd := jsontext.StringEnd(b, i)
		key := b[i:min(kEnd, len(b))]
		if i = jsontext.SkipSpace(b, kEnd); i >= len(b) || b[i] != ':' {
			return ShapeInvalid, fit
		}
		vStart := jsontext.SkipSpace(b, i+1)
		vEnd, vfit := skipValue(b, vStart)
		if vEnd > len(b) {
			return ShapeInvalid, fit
		}
		fit = fit && vfit
		field(unquoteKey(key), b[vStart:vEnd])
		i = vEnd
	}
	if i >= len(b) || jsontext.SkipSpace(b, i+1) != len(b) {
		return ShapeInvalid, fit
	}
	return ShapeObject, fit
}

// JSONString decodes a JSON string value; ok is false for anything else.
func JSONString(raw []byte) (s string, ok bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true // no escapes: the bytes are the string
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// unquoteKey returns an object key without its quotes, decoding escapes
// (rare in keys: "w\u0069ng" is "wing", for encoding/json and the shard)
// and, as encoding/json does, turning invalid UTF-8 into U+FFFD.
func unquoteKey(q []byte) []byte {
	if len(q) < 2 {
		return nil
	}
	if bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return q[1 : len(q)-1]
	}
	var s string
	if json.Unmarshal(q, &s) != nil {
		return nil
	}
	return []byte(s)
}

// skipValue returns the index just past the JSON value starting at b[i]
// (beyond len(b) when it is cut short) and whether every number in it fits
// a float64.
func skipValue(b []byte, i int) (end int, fit bool) {
	fit = true
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = jsontext.StringEnd(b, i)
		case c == '{' || c == '[':
			depth++
			i++
		case c == '}' || c == ']':
			depth--
			i++
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
				j++
			}
			fit = fit && numberFits(b[i:j])
			i = j
		case c == 't' || c == 'n':
			i += 4
		case c == 'f':
			i += 5
		default: // blank, ',' or ':' inside an object or array
			i++
			continue
		}
		if depth <= 0 {
			return i, fit
		}
	}
	return len(b) + 1, fit
}

// numberFits reports whether a JSON number decodes into a float64: only an
// exponent or more than 300 digits can take it beyond the largest one.
func numberFits(num []byte) bool {
	if len(num) <= 300 && !bytes.ContainsAny(num, "eE") {
		return true
	}
	_, err := strconv.ParseFloat(string(num), 64)
	return err == nil
}

// ParseArgs reads the fields of arguments that may not be valid JSON (the
// tool handler's, when mcp-go served the request; tests). Empty, blank or
// null arguments have none; anything but a JSON object is an *Error with
// brain.CodeInvalidArgument.
func ParseArgs(args []byte) (Args, error) {
	var a Args
	switch {
	case len(bytes.TrimSpace(args)) == 0:
		a.shape = ShapeAbsent
	case json.Valid(args):
		a, _ = ScanArgs(args)
	default:
		a.shape = ShapeInvalid
	}
	return a, a.Err(args)
}

// err is the error for arguments that are not a JSON object (encoding/json
// explains what they are instead); nil for an object or none.
func (a *Args) Err(args []byte) error {
	if a.shape == ShapeObject || a.shape == ShapeAbsent {
		return nil
	}
	var m map[string]Raw
	err := json.Unmarshal(args, &m)
	if err == nil { // cannot happen: the walk saw no object
		return edge.NewError(brain.CodeInvalidArgument, edge.ErrInvalidArgument, "the arguments are not a JSON object")
	}
	return edge.NewError(brain.CodeInvalidArgument, edge.ErrInvalidArgument, "the arguments are not a JSON object: %v", err)
}
