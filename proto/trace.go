package proto

import (
	"fmt"

	"github.com/brainstem/brainstem/internal/codec"

	"go.opentelemetry.io/otel/trace"
)

// The trace trailer (see docs/protocol.md, "Trace context"): a request
// frame whose flags carry flagTrace ends with 25 bytes after its payload's
// fields: the 16-byte trace id, the 8-byte parent span id and the W3C
// trace flags byte of the caller's span. A peer that does not know the flag
// ignores it and, by the versioning rule, the trailing bytes.
const (
	flagTrace        byte = 0x02
	TraceTrailerSize      = 16 + 8 + 1
)

// completeBody writes the optional fields a request body left out because
// they were empty (only a Call's idempotency key), so that a peer reading
// the body field by field stops before the trailer instead of taking its
// first bytes for an optional field.
func completeBody(b []byte, req any) []byte {
	if c, ok := req.(*CallRequest); ok && c.IdempotencyKey == "" {
		return codec.AppendString(b, "")
	}
	return b
}

// appendTraceTrailer appends sc's trailer to b.
func appendTraceTrailer(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	return append(b, byte(sc.TraceFlags()))
}

// cutTraceTrailer splits a request payload whose frame has flagTrace into
// the payload proper and the caller's span context (remote). A payload too
// short for the trailer is ErrMalformed; an all-zero trace or span id is
// an invalid context, which starts no trace.
func cutTraceTrailer(p []byte) ([]byte, trace.SpanContext, error) {
	n := len(p) - TraceTrailerSize
	if n < 0 {
		return p, trace.SpanContext{}, fmt.Errorf("%w: trace trailer flag set on a payload of %d bytes, shorter than the %d-byte trailer", ErrMalformed, len(p), TraceTrailerSize)
	}
	var cfg trace.SpanContextConfig
	copy(cfg.TraceID[:], p[n:n+16])
	copy(cfg.SpanID[:], p[n+16:n+24])
	cfg.TraceFlags = trace.TraceFlags(p[n+24])
	cfg.Remote = true
	return p[:n], trace.NewSpanContext(cfg), nil
}
