package otlptest

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// MaxBodyBytes bounds one export request.
const MaxBodyBytes = 16 << 20

// Span is a received span with its resource's service name.
type Span struct {
	Service string
	*tracepb.Span
}

// TraceID is the span's trace id in hex.
func (s Span) TraceID() string { return hex.EncodeToString(s.GetTraceId()) }

// SpanIDHex is the span's id in hex.
func (s Span) SpanIDHex() string { return hex.EncodeToString(s.GetSpanId()) }

// Parent is the span's parent span id in hex ("" for a root).
func (s Span) Parent() string { return hex.EncodeToString(s.GetParentSpanId()) }

// Attr returns the string form of attribute key, and whether it is set.
func (s Span) Attr(key string) (string, bool) {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			v := kv.GetValue()
			if sv, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
				return sv.StringValue, true
			}
			if iv, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
				return fmt.Sprint(iv.IntValue), true
			}
			return v.String(), true
		}
	}
	return "", false
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	srv     *http.Server
	url     string
	mu      sync.Mutex
	spans   []Span
	posts   int
	raw     [][]byte
	changed chan struct{} // closed and replaced on every export
}

// Start starts a receiver on a loopback port, stopped at the test's end.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{url: "http://" + ln.Addr().String(), changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = &http.Server{Handler: mux}
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

// Endpoint is the base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
func (r *Receiver) Endpoint() string { return r.url }

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "want Content-Type application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBodyBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg, body)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *Receiver) add(msg *coltrace.ExportTraceServiceRequest, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		svc := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				svc = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Service: svc, Span: sp})
			}
		}
	}
	r.posts++
	r.raw = append(r.raw, body)
	close(r.changed)
	r.changed = make(chan struct{})
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Posts is the number of export requests received.
func (r *Receiver) Posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

// Raw returns the bodies of the export requests received so far, as sent.
func (r *Receiver) Raw() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.raw...)
}

// Wait returns the spans received once cond holds over them, or an error
// when ctx ends first. It wakes on each export: no polling.
func (r *Receiver) Wait(ctx context.Context, cond func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, ch := append([]Span(nil), r.spans...), r.changed
		r.mu.Unlock()
		if cond(spans) {
			return spans, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return spans, fmt.Errorf("otlptest: %d spans received, condition not met: %w", len(spans), ctx.Err())
		}
	}
}
