package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/brainstem/brainstem/gateway"
)

// newLogger builds the process logger: JSON by default (production), text
// for humans; durations in seconds (see gateway.NewLogger).
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	f := strings.ToLower(format)
	if f != "json" && f != "text" {
		return nil, usageError{fmt.Sprintf("--log-format %q: want json or text", format)}
	}
	l, err := gateway.NewLogger(w, gateway.LogConfig{Format: f, Level: level})
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return l, nil
}
