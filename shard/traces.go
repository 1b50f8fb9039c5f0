package shard

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/brainstem/brainstem/internal/tracing"
)

// workSpan names the request's server span (started by proto.Server, a
// child of the gateway's span the request carried) with the wing and the
// tool, and starts an internal child span for the store or index work of
// the request. Both only when the request's trace is recorded: untraced,
// ctx and its non-recording span come back unchanged. No attribute carries
// the caller's email, token or any note content.
func (s *Service) workSpan(ctx context.Context, name, tool string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	parent.SetAttributes(tracing.KeyWing.String(s.cfg.Wing), tracing.KeyTool.String(tool))
	ctx, span := tracing.Child(ctx, name, trace.SpanKindInternal)
	span.SetAttributes(tracing.KeyWing.String(s.cfg.Wing))
	return ctx, span
}

// endWork ends a work span with the size of its result and, for a tool
// error, its flag.
func endWork(span trace.Span, size int, isErr bool, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.KeyBytes.Int(size))
	if isErr {
		span.SetAttributes(tracing.KeyCode.String("tool_error"))
	}
	tracing.End(span, err)
}
