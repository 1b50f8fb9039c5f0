package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every brainstem span.
const Scope = "github.com/brainstem/brainstem"

// Attribute keys brainstem sets. None carries a token, an email or note
// content; KeyEmail and KeyArgs (a call's arguments: the
// query text, a note's body) are set only when Settings.Sensitive.
const (
	KeyTool      = attribute.Key("brainstem.tool")
	KeyWing      = attribute.Key("brainstem.wing")
	KeyMethod    = attribute.Key("mcp.method.name")
	KeyRequestID = attribute.Key("brainstem.request_id")
	KeyCode      = attribute.Key("brainstem.code")
	KeyBytes     = attribute.Key("brainstem.result_bytes")
	KeyBytesIn   = attribute.Key("brainstem.request_bytes")
	KeyCount     = attribute.Key("brainstem.result_count")
	KeyStatus    = attribute.Key("http.response.status_code")
	KeyEmail     = attribute.Key("enduser.id")
	KeyArgs      = attribute.Key("brainstem.arguments")
)

// Tracing is a process's tracer. The zero value and a Tracing from Setup
// with tracing off have a nil Tracer: callers check Enabled and start
// nothing.
type Tracing struct {
	// Tracer starts the process's root (server) spans; nil when off.
	Tracer trace.Tracer
	// Sensitive: identities and content may go into attributes.
	Sensitive bool
	tp        *sdktrace.TracerProvider
}

// RootTracer is Tracer, or nil for a nil Tracing.
func (t *Tracing) RootTracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.Tracer
}

// IsSensitive reports Sensitive, false for a nil Tracing.
func (t *Tracing) IsSensitive() bool { return t != nil && t.Sensitive }

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.Tracer != nil }

// Setup parses the environment through lookup and, when tracing is on,
// builds a tracer provider exporting OTLP over HTTP in batches.
// defaultService is service.name when OTEL_SERVICE_NAME is unset.
func Setup(lookup func(string) (string, bool), defaultService string) (*Tracing, error) {
	s, err := Parse(lookup)
	if err != nil {
		return nil, err
	}
	return New(s, defaultService)
}

// New builds the Tracing of s (off unless s.Enabled).
func New(s Settings, defaultService string) (*Tracing, error) {
	if !s.Enabled {
		return &Tracing{}, nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(s.Endpoint)}
	if len(s.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(s.Headers))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sampler(s.Sampler, s.Ratio)),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", cmp.Or(s.ServiceName, defaultService)))))
	return &Tracing{Tracer: tp.Tracer(Scope), Sensitive: s.Sensitive, tp: tp}, nil
}

func sampler(name string, ratio float64) sdktrace.Sampler {
	switch name {
	case SamplerAlwaysOn:
		return sdktrace.AlwaysSample()
	case SamplerAlwaysOff:
		return sdktrace.NeverSample()
	case SamplerRatio:
		return sdktrace.TraceIDRatioBased(ratio)
	case SamplerParentAlwaysOff:
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case SamplerParentRatio:
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracing: flushing spans: %w", err)
	}
	return nil
}

// ForceFlush exports every span ended so far (tests, before asserting).
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Child starts a span below the one in ctx when that one is recording,
// and otherwise returns ctx and its (non-recording) span untouched: no
// allocation on an untraced call. kind is trace.SpanKindInternal or
// trace.SpanKindClient.
func Child(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithSpanKind(kind))
}

// End ends span, marking it failed when err is not nil. The error's text
// is not recorded (it may name the caller): callers set KeyCode.
func End(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// Remote returns ctx with the remote parent of a W3C traceparent value,
// or ctx unchanged when traceparent is empty or invalid.
func Remote(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
