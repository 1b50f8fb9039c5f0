package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// newLogger builds the process logger: JSON by default (production), text
// for humans.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Sprintf("--log-format %q: want json or text", format)}
}
