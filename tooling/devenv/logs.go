package devenv

import (
	"context"
	"log/slog"
)

// componentLogger is logger naming its lines' component: one attribute,
// which a later With("component", x) replaces instead of adding a second
// (the gateway names its authorization server's and console's lines
// "oauth" and "console"; a JSON line with a key twice is not one a log
// pipeline reads, logcheck.DuplicateKey).
func componentLogger(logger *slog.Logger, component string) *slog.Logger {
	return slog.New(componentHandler{base: logger.Handler(), component: component})
}

// componentHandler adds "component" to each record it handles.
type componentHandler struct {
	base      slog.Handler
	component string
}

func (h componentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l)
}

func (h componentHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(slog.String("component", h.component))
	return h.base.Handle(ctx, r)
}

func (h componentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	rest := make([]slog.Attr, 0, len(attrs))
	for _, a := range attrs {
		if a.Key == "component" {
			h.component = a.Value.String()
			continue
		}
		rest = append(rest, a)
	}
	if len(rest) > 0 {
		h.base = h.base.WithAttrs(rest)
	}
	return h
}

// WithGroup puts the component before the group: below it, the
// component is fixed.
func (h componentHandler) WithGroup(name string) slog.Handler {
	return h.base.WithAttrs([]slog.Attr{slog.String("component", h.component)}).WithGroup(name)
}
