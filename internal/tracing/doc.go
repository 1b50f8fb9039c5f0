// Package tracing builds the OpenTelemetry tracer of a gateway or a shard
// from the standard OTEL_* environment (read through an injected lookup, so
// it is table-testable), and holds the few helpers the call path uses to
// start spans only when a trace is being recorded. Tracing is off by
// default: with no OTLP endpoint set, Setup returns a Tracing whose Tracer
// is nil and nothing is started, allocated or sent.
package tracing
