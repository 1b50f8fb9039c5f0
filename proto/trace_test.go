package proto

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func testSpanContext() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
}

// The caller's span context crosses brainstem/1 in the trace trailer: the
// handler's ctx holds it as a remote parent, and the server span is its
// child in the same trace.
func TestTraceTrailerReachesShard(t *testing.T) {
	f := newFixture(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	got := make(chan trace.SpanContext, 2)
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		got <- trace.SpanContextFromContext(ctx)
		return &CallResponse{Result: []byte("ok")}, nil
	}}
	srv := startServer(t, f, h, ServerConfig{Tracer: tp.Tracer("test")}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	sc := testSpanContext()
	if _, err := c.Call(trace.ContextWithSpanContext(context.Background(), sc), &CallRequest{Tool: "t", RequestID: "traced"}); err != nil {
		t.Fatal(err)
	}
	in := <-got
	if in.TraceID() != sc.TraceID() || in.SpanID() == sc.SpanID() {
		t.Fatalf("handler's span %v, want a child in trace %v", in, sc.TraceID())
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d server spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Parent.SpanID() != sc.SpanID() || !s.Parent.IsRemote() || s.SpanKind != trace.SpanKindServer || s.Name != "brainstem/1 call" {
		t.Fatalf("server span %q kind %v parent %v, want a server span below %v", s.Name, s.SpanKind, s.Parent, sc.SpanID())
	}

	// No span in ctx: no trailer, no server parent.
	if _, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil {
		t.Fatal(err)
	}
	if in := <-got; in.TraceID() == sc.TraceID() {
		t.Fatal("an untraced request joined the earlier trace")
	}
}

// A traced frame is the untraced frame with flag 0x02 and 25 more bytes: a
// peer that ignores the flag decodes the same request (the versioning rule).
// A Call without an idempotency key carries the empty key before the
// trailer, so that such a peer does not read the trailer as the key.
func TestTraceTrailerOldPeer(t *testing.T) {
	for _, key := range []string{"gw-5f1c0e9a", ""} {
		oldPeer(t, &CallRequest{Tool: "brain_get", Args: []byte(`{"id":"a"}`), Token: "tok", IdempotencyKey: key})
	}
}

func oldPeer(t *testing.T, req *CallRequest) {
	req.RequestID = "r1"
	h := reqHeader{RequestID: "r1"}
	plain := mustEncodeRequest(t, MsgCall, h, req)
	c := &Client{max: DefaultMaxMessageBytes}
	f, err := c.encode(MsgCall, "r1", req, 0, testSpanContext())
	if err != nil {
		t.Fatal(err)
	}
	traced := bytes.Clone(f.frame(0))
	pad := 0
	if req.IdempotencyKey == "" {
		pad = 1 // the empty key
	}
	if traced[3] != flagTrace || len(traced) != len(plain)+pad+TraceTrailerSize || !bytes.Equal(traced[HeaderSize:len(plain)], plain[HeaderSize:]) {
		t.Fatalf("traced frame\n%x\nis not the plain frame\n%x\nwith flag 0x02 and a trailer", traced, plain)
	}
	_, old, err := decodeCallRequest(traced[HeaderSize:])
	if err != nil || !reflect.DeepEqual(old, req) {
		t.Fatalf("a peer ignoring the flag decodes %#v, %v", old, err)
	}
	rest, sc, err := cutTraceTrailer(traced[HeaderSize:])
	if err != nil || sc.TraceID() != testSpanContext().TraceID() || sc.SpanID() != testSpanContext().SpanID() || !sc.IsSampled() || !sc.IsRemote() {
		t.Fatalf("trailer read as %v, %v", sc, err)
	}
	if _, got, err := decodeCallRequest(rest); err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("the payload without its trailer decodes to %#v, %v", got, err)
	}
}

// The flag on a payload too short for the trailer is a bad request.
func TestTraceTrailerTooShort(t *testing.T) {
	f := newFixture(t)
	srv := startServer(t, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	raw := mustEncodeRequest(t, MsgHealth, reqHeader{RequestID: "r"}, nil)
	raw[3] = flagTrace
	h, p := rawExchange(t, f, srv.Addr().String(), raw)
	if h.typ != MsgError {
		t.Fatalf("answered %s, want an error", h.typ)
	}
	e, err := decodeError(p)
	if err != nil || e.Code != CodeBadRequest {
		t.Fatalf("error %v, %v; want bad_request", e, err)
	}
}

// FuzzTraceTrailer: whatever cutTraceTrailer accepts re-encodes to the
// same bytes, and a request with a trailer round-trips through the frame.
func FuzzTraceTrailer(f *testing.F) {
	f.Add(appendTraceTrailer([]byte{0, 1, 'r'}, testSpanContext()), "brain_get")
	f.Add(make([]byte, TraceTrailerSize), "")
	f.Add([]byte{1, 2, 3}, "t")
	f.Fuzz(func(t *testing.T, p []byte, tool string) {
		rest, sc, err := cutTraceTrailer(p)
		if err != nil {
			if len(p) >= TraceTrailerSize {
				t.Fatalf("refused %d bytes: %v", len(p), err)
			}
			return
		}
		if again := appendTraceTrailer(bytes.Clone(rest), sc); !bytes.Equal(again, p) {
			t.Fatalf("trailer %x re-encodes to %x", p, again)
		}
		req := &CallRequest{Tool: tool, Args: []byte{}}
		c := &Client{max: DefaultMaxMessageBytes}
		fr, err := c.encode(MsgCall, "id", req, 0, sc)
		if err != nil {
			return // over a field limit
		}
		frame := fr.frame(0)
		body := frame[HeaderSize:]
		if frame[3]&flagTrace != 0 {
			if body, _, err = cutTraceTrailer(body); err != nil {
				t.Fatal(err)
			}
		} else if sc.IsValid() {
			t.Fatal("a valid span context sent no trailer")
		}
		req.RequestID = "id"
		if _, req2, err := decodeCallRequest(body); err != nil || !reflect.DeepEqual(req2, req) {
			t.Fatalf("round trip: %v %#v", err, req2)
		}
	})
}
