package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzScanArgs: the one-pass walk over a call's arguments agrees with
// encoding/json, which mcp-go and the shard decode them with: the same
// fields by exact name (the last duplicate winning), the same refusal of
// anything but an object, and "fits" exactly when encoding/json can decode
// the arguments into an interface.
func FuzzScanArgs(f *testing.F) {
	for _, s := range []string{`{"wing":"payments","id":"x"}`, `{"w\u0069ng":"a","wing":"b"}`, ` null `, ``, `[1,2]`, `"x"`,
		`{"query":"q","limit":1e999}`, `{"a":{"b":[1,{"c":"}"}]},"path":"wiki/a/b.md"}`, `{"n":-0.0e-400}`, `{"WING":"a"}`,
		`{"idempotency_key":"k\"\\","limit":3}`, `{"a":1}x`, `{"a":1,}`, `{"a" 1}`, `{"query":"` + "\xff" + `"}`, `1e400`, `{"x":truefalse}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, perr := ParseArgs(b)
		var m map[string]Raw
		jerr := json.Unmarshal(b, &m)
		if blank := len(bytes.TrimSpace(b)) == 0; blank {
			jerr = nil // no arguments: none of the fields
		}
		if (perr == nil) != (jerr == nil) {
			t.Fatalf("parseArgs(%q) err = %v; encoding/json: %v", b, perr, jerr)
		}
		if perr != nil {
			return
		}
		if len(m) > maxArgFields {
			return
		}
		for name := range m {
			if got := a.Get(name); !bytes.Equal(got, m[name]) || (got == nil) != (m[name] == nil) {
				t.Fatalf("%q: %s = %q, encoding/json finds %q", b, name, got, m[name])
			}
		}
		for _, f := range a.fields {
			if _, ok := m[f.name]; !ok {
				t.Fatalf("%q: the walk found %q, encoding/json does not", b, f.name)
			}
		}
		var v any
		fits := json.Unmarshal(b, &v) == nil || len(bytes.TrimSpace(b)) == 0
		if _, fit := ScanArgs(b); fit != fits {
			t.Fatalf("%q: fits = %v, encoding/json decodes it into an interface: %v", b, fit, fits)
		}
	})
}

// TestScanArgsNonObjects: whatever valid JSON the arguments are, the walk
// tells an object, nothing at all and anything else apart, and the numbers
// that do not fit, wherever they are.
func TestScanArgsNonObjects(t *testing.T) {
	for _, tc := range []struct {
		args  string
		shape Shape
		fit   bool
	}{
		{``, ShapeAbsent, true}, {" \n", ShapeAbsent, true}, {`null`, ShapeAbsent, true},
		{`{}`, ShapeObject, true}, {` {"a":[1e999]} `, ShapeObject, false},
		{`[1,{"a":2}]`, ShapeOther, true}, {`"x"`, ShapeOther, true}, {`true`, ShapeOther, true},
		{`-1e400`, ShapeOther, false}, {`123456789`, ShapeOther, true},
	} {
		a, fit := ScanArgs([]byte(tc.args))
		if a.shape != tc.shape || fit != tc.fit {
			t.Errorf("scanArgs(%q) = shape %d, fit %v; want %d, %v", tc.args, a.shape, fit, tc.shape, tc.fit)
		}
	}
}
