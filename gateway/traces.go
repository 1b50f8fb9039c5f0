package gateway

import (
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainstem/brainstem/internal/tracing"
)

// Traces (docs/operating.md, "Traces"). With tracing on, each /mcp request
// is a server span, the child of the client's W3C traceparent from the
// request's params._meta (MCP 2026-07-28) or, failing that, its HTTP
// traceparent header; each request to a shard is a client span below it,
// whose context brainstem/1 carries to the shard (proto's trace trailer).
// With tracing off (Options.Tracing nil or off) none of this runs: the
// chain checks one pointer.

// traceFlushTimeout bounds Close's export of the spans not yet sent.
const traceFlushTimeout = 5 * time.Second

// maxSensitiveArgs bounds the arguments put into a span when the operator
// opted in to content (BRAINSTEM_TRACE_SENSITIVE).
const maxSensitiveArgs = 1 << 10

// traced runs the rest of the chain (serveCall) inside the request's
// server span.
func (g *Gateway) traced(q *mcpCall) {
	ctx := propagation.TraceContext{}.Extract(q.ctx, propagation.HeaderCarrier(q.R.Header))
	if tp := metaTraceparent(q.msg.Params); tp != "" {
		ctx = tracing.Remote(ctx, tp)
	}
	method := spanMethod(q.ci.method)
	ctx, span := g.tracer.Start(ctx, "mcp "+method, trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.KeyMethod.String(method), tracing.KeyRequestID.String(q.ci.RequestID))
		if g.traceSensitive {
			span.SetAttributes(tracing.KeyEmail.String(q.ci.ID.Email))
		}
	}
	q.ctx = ctx
	g.serveCall(q)
	if span.IsRecording() {
		span.SetAttributes(tracing.KeyStatus.Int(q.Rec.Status()))
	}
}

// maxSpanMethod bounds the JSON-RPC method named in a span: the method is
// the client's, and a span name should not be whatever a client sends.
const maxSpanMethod = 64

// spanMethod is the request's JSON-RPC method as a span names it:
// "request" for a request without one (a GET or DELETE), "other" for a
// method that is not a short MCP-like name (letters, '/', '_', '-').
func spanMethod(m string) string {
	if m == "" {
		return "request"
	}
	if len(m) > maxSpanMethod || strings.ContainsFunc(m, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c == '/' || c == '_' || c == '-' || c >= 'A' && c <= 'Z')
	}) {
		return "other"
	}
	return m
}

// metaTraceparent is params._meta.traceparent, or "".
func metaTraceparent(params []byte) string {
	var p struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.Meta.Traceparent
}

// spanRecord puts a finished call's outcome on its server span: the tool,
// the wing, the outcome (ok, tool_error, partial or an error code) and the
// sizes; the arguments only when the operator opted in.
func (g *Gateway) spanRecord(span trace.Span, rec *auditRecord) {
	span.SetAttributes(tracing.KeyTool.String(rec.Tool), tracing.KeyWing.String(rec.Wing),
		tracing.KeyCode.String(rec.Outcome), tracing.KeyBytes.Int(rec.BytesOut), tracing.KeyBytesIn.Int(rec.BytesIn))
	if g.traceSensitive {
		span.SetAttributes(tracing.KeyArgs.String(string(rec.Args[:min(len(rec.Args), maxSensitiveArgs)])))
	}
	if rec.Err != nil {
		span.SetStatus(codes.Error, "")
	}
}
