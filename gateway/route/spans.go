package route

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/proto"
)

// ShardSpan starts the client span of one request to a wing, below the
// call's span when that one is recording (tracing.Child).
// Untraced, it costs a context lookup: the span's name is built only for a
// recording span.
func ShardSpan(ctx context.Context, what string, w *Wing) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); !parent.IsRecording() {
		return ctx, parent
	}
	ctx, span := tracing.Child(ctx, "shard "+what, trace.SpanKindClient)
	span.SetAttributes(tracing.KeyWing.String(w.Name), tracing.KeyTool.String(what))
	return ctx, span
}

// EndShardSpan ends a shard span with the request's error code, if any.
func EndShardSpan(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		if e, ok := errors.AsType[*edge.Error](err); ok {
			span.SetAttributes(tracing.KeyCode.String(string(e.Code)))
		} else if c := proto.CodeOf(err); c != 0 {
			span.SetAttributes(tracing.KeyCode.String(c.String()))
		}
	}
	tracing.End(span, err)
}
