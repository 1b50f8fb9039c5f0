// Package logging builds the process logger every brainstem process logs
// through: JSON (the production format) or text lines on one writer, at a
// level, with durations written as seconds in floats, as the metrics are,
// never as raw nanoseconds, and byte arrays (git commit ids, digests) as hex
// text, never as lists of numbers.
package logging

import (
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
)

// New returns the process logger writing format ("json" or "" for JSON,
// "text") to w at level (ParseLevel).
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("logging: level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: replaceAttr}
	switch format {
	case "json", "":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("logging: format %q must be json or text", format)
}

// ParseLevel reads a level name: debug, info (or ""), warn (or warning),
// error, in any case.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q must be debug, info, warn or error", s)
}

// replaceAttr is the process logger's slog ReplaceAttr: a time.Duration
// value becomes its seconds as a float, and a byte array (a go-git
// plumbing.Hash, a [32]byte digest) or a slice of them becomes hex text
// (Hex), so a commit id reads as git prints it wherever it is logged.
func replaceAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	case slog.KindAny:
		if s, ok := Hex(a.Value.Any()); ok {
			return slog.Any(a.Key, s)
		}
	}
	return a
}

// Hex renders v as text when it is a byte array — its String() when it has
// one (plumbing.Hash's is the commit id in hex), else lower-case hex — or
// a slice of byte arrays ([]string of those); ok is false for anything else.
func Hex(v any) (text any, ok bool) {
	t := reflect.TypeOf(v)
	switch {
	case t == nil:
		return nil, false
	case isByteArray(t):
		return arrayText(reflect.ValueOf(v)), true
	case t.Kind() == reflect.Slice && isByteArray(t.Elem()):
		rv := reflect.ValueOf(v)
		out := make([]string, rv.Len())
		for i := range out {
			out[i] = arrayText(rv.Index(i))
		}
		return out, true
	}
	return nil, false
}

func isByteArray(t reflect.Type) bool {
	return t.Kind() == reflect.Array && t.Elem().Kind() == reflect.Uint8
}

func arrayText(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	b := make([]byte, v.Len())
	reflect.Copy(reflect.ValueOf(b), v)
	return hex.EncodeToString(b)
}
