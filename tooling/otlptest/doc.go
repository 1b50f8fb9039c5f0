// Package otlptest is a real OTLP/HTTP trace receiver for tests: a
// net/http server on loopback that decodes each protobuf
// ExportTraceServiceRequest POSTed to /v1/traces and keeps its spans, with
// a wait that returns when a condition over the received spans holds or
// the context's deadline passes.
package otlptest
