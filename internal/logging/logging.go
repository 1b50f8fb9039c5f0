// Package logging builds the process logger every brainstem process logs
// through: JSON (the production format) or text lines on one writer, at a
// level, with durations written as seconds in floats, as the metrics are,
// never as raw nanoseconds.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns the process logger writing format ("json" or "" for JSON,
// "text") to w at level (ParseLevel).
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("logging: level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: secondsForDurations}
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

// secondsForDurations is a slog ReplaceAttr: a time.Duration value becomes
// its seconds as a float.
func secondsForDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	}
	return a
}
