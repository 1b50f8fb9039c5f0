package shard

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/search"
)

// workSpan names the request's server span (started by proto.Server, a
// child of the gateway's span the request carried) with the wing and the
// tool, and starts an internal child span for the store or index work of
// the request. Both only when the request's trace is recorded: untraced,
// ctx and its non-recording span come back unchanged. No attribute carries
// the caller's email, token or any note content.
//
// The span is named kind+" "+what ("store brain_get", "index rank"), built
// only when recording.
func (s *Service) workSpan(ctx context.Context, kind, what, tool string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	parent.SetAttributes(tracing.KeyWing.String(s.cfg.Wing), tracing.KeyTool.String(tool))
	ctx, span := tracing.Child(ctx, kind+" "+what, trace.SpanKindInternal)
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

// The tool attribute of the cross-wing search's steps.
const (
	searchStats = search.Tool + " stats"
	searchRank  = search.Tool + " rank"
	searchFetch = search.Tool + " fetch"
)
