package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/otlptest"
)

// tracedEnv is a development environment whose gateway and three shards
// export their spans to one real OTLP/HTTP receiver.
type tracedEnv struct {
	*devenv.Env
	recv *otlptest.Receiver
	mu   sync.Mutex
	trs  []*tracing.Tracing
}

// startTracedEnv starts the environment with each server's tracing made
// by settings (the receiver's endpoint filled in).
func startTracedEnv(t *testing.T, lookup func(recv string) func(string) (string, bool)) *tracedEnv {
	t.Helper()
	te := &tracedEnv{recv: otlptest.Start(t)}
	te.Env = devenvtest.Start(t, devenv.Config{
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 },
		Tracing: func(service string) (*tracing.Tracing, error) {
			tr, err := tracing.Setup(lookup(te.recv.Endpoint()), service)
			if err == nil {
				te.mu.Lock()
				te.trs = append(te.trs, tr)
				te.mu.Unlock()
			}
			return tr, err
		},
	})
	return te
}

// on is the environment of tracing on: an endpoint, nothing else.
func on(recv string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == tracing.EnvEndpoint {
			return recv, true
		}
		return "", false
	}
}

// flush exports every span the servers have ended.
func (te *tracedEnv) flush(t *testing.T) {
	t.Helper()
	te.mu.Lock()
	defer te.mu.Unlock()
	for _, tr := range te.trs {
		if err := tr.ForceFlush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// postCall sends one stateless 2026-07-28 tools/call, with a traceparent
// in _meta and/or in the HTTP header, and returns the answer's body.
func postCall(t *testing.T, url, token, tool, args, metaTP, headerTP string) string {
	t.Helper()
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if metaTP != "" {
		meta += `,"traceparent":"` + metaTP + `"`
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,"_meta":{` + meta + `}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	if headerTP != "" {
		req.Header.Set("Traceparent", headerTP)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(`"isError":true`)) {
		t.Fatalf("%s: %d %s", tool, resp.StatusCode, b)
	}
	return string(b)
}

func inTrace(id string) func([]otlptest.Span) []otlptest.Span {
	return func(spans []otlptest.Span) []otlptest.Span {
		var out []otlptest.Span
		for _, s := range spans {
			if s.TraceID() == id {
				out = append(out, s)
			}
		}
		return out
	}
}

// crossWingComplete: the trace holds the gateway's server span below the
// client's span, and, for every wing, the shard's rank server span and its
// index work, and every span's parent but the root's. A shard's server
// span ends after its answer is sent, so it may miss the flush that
// follows the call and reach the receiver with the exporter's next batch:
// the wait lasts until it has.
func crossWingComplete(trace []otlptest.Span, clientSpan string, wings []string) bool {
	root := false
	work := map[string]bool{}
	ids := map[string]bool{}
	for _, s := range trace {
		ids[s.SpanIDHex()] = true
	}
	for _, s := range trace {
		if p := s.Parent(); p != clientSpan && !ids[p] {
			return false
		}
		if s.Service == "brainstem-gateway" && s.Name == "mcp tools/call" && s.Parent() == clientSpan {
			root = true
		}
		if strings.HasPrefix(s.Service, "brainstem-shard-") && s.Name == "index rank" {
			work[strings.TrimPrefix(s.Service, "brainstem-shard-")] = true
		}
	}
	for _, w := range wings {
		if !work[w] {
			return false
		}
	}
	return root
}

// TestTracesCrossWingQuery: one cross-wing brain_query with tracing on
// reaches a real OTLP receiver as one trace: the gateway's server span
// (the child of the client's traceparent, from _meta or from the HTTP
// header), a client span per shard request, and on each of the three
// shards a server span per request (parented by the brainstem/1 trace
// trailer) with its store or index work below. No attribute carries the
// bearer token, the email, the query or note content.
func TestTracesCrossWingQuery(t *testing.T) {
	te := startTracedEnv(t, on)
	tok := token(t, te.Env, "alice@example.com")
	const query = "idempotency ledger retries"
	cases := []struct{ name, traceID, spanID, meta, header string }{
		{"meta", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "meta", ""},
		{"header", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "", "header"},
		// _meta wins over the header (MCP 2026-07-28 carries it there).
		{"both", "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8", "meta", "other"},
	}
	var answers []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := "00-" + c.traceID + "-" + c.spanID + "-01"
			metaTP, headerTP := "", ""
			if c.meta != "" {
				metaTP = tp
			}
			switch c.header {
			case "header":
				headerTP = tp
			case "other":
				headerTP = "00-11111111111111111111111111111111-2222222222222222-01"
			}
			answers = append(answers, postCall(t, te.MCPURL, tok, "brain_query", `{"query":"`+query+`"}`, metaTP, headerTP))
			te.flush(t)
			// 30 s: a span that missed the flush comes with the next batch
			// (the SDK's default schedule is 5 s).
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			spans, err := te.recv.Wait(ctx, func(s []otlptest.Span) bool {
				return crossWingComplete(inTrace(c.traceID)(s), c.spanID, te.Wings)
			})
			if err != nil {
				t.Fatalf("%v; spans of the trace: %s", err, describe(inTrace(c.traceID)(spans)))
			}
			checkParents(t, inTrace(c.traceID)(spans), c.spanID, te.Wings)
		})
	}
	// Nothing identifying or content-bearing left the processes.
	te.flush(t)
	secrets := []string{tok, "alice@example.com", query, "idempotency", "Mobile apps retry on flaky networks"}
	for _, raw := range te.recv.Raw() {
		for _, s := range secrets {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("an exported span contains %q", s)
			}
		}
	}
	if !strings.Contains(strings.Join(answers, ""), "idempotency") {
		t.Fatal("the answers do not mention the query's notes: the content check above proves nothing")
	}
}

// checkParents: every span but the gateway's root has its parent in the
// trace; each shard server span's parent is a gateway client span for its
// wing; each work span's parent is its shard's server span.
func checkParents(t *testing.T, trace []otlptest.Span, clientSpan string, wings []string) {
	t.Helper()
	byID := map[string]otlptest.Span{}
	for _, s := range trace {
		byID[s.SpanIDHex()] = s
	}
	services := map[string]bool{}
	for _, s := range trace {
		services[s.Service] = true
		if s.Parent() == clientSpan {
			if s.Service != "brainstem-gateway" {
				t.Errorf("%s %q is below the client's span", s.Service, s.Name)
			}
			continue
		}
		p, ok := byID[s.Parent()]
		if !ok {
			t.Errorf("%s %q: parent %s not in the trace", s.Service, s.Name, s.Parent())
			continue
		}
		switch {
		case strings.HasPrefix(s.Name, "brainstem/1 "):
			w, _ := p.Attr(string(tracing.KeyWing))
			if p.Service != "brainstem-gateway" || !strings.HasPrefix(p.Name, "shard ") || "brainstem-shard-"+w != s.Service {
				t.Errorf("%s %q: parent %s %q (wing %s), want the gateway's request to it", s.Service, s.Name, p.Service, p.Name, w)
			}
		case strings.HasPrefix(s.Service, "brainstem-shard-"):
			if p.Service != s.Service || !strings.HasPrefix(p.Name, "brainstem/1 ") {
				t.Errorf("%s %q: parent %s %q, want its request's server span", s.Service, s.Name, p.Service, p.Name)
			}
		}
	}
	for _, w := range wings {
		if !services["brainstem-shard-"+w] {
			t.Errorf("no span of shard %s", w)
		}
	}
	if len(wings) != 3 {
		t.Fatalf("%d wings, want the sample's three", len(wings))
	}
}

func describe(spans []otlptest.Span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString("\n  " + s.Service + " " + s.Name + " " + s.SpanIDHex() + " <- " + s.Parent())
	}
	return b.String()
}

// TestTracesOff: with tracing off (no endpoint set, or the exporter none
// beside an endpoint) a traced client's call goes through and nothing
// reaches the receiver, not even at shutdown's flush.
func TestTracesOff(t *testing.T) {
	for name, lookup := range map[string]func(string) func(string) (string, bool){
		"no endpoint": func(string) func(string) (string, bool) {
			return func(string) (string, bool) { return "", false }
		},
		"exporter none": func(recv string) func(string) (string, bool) {
			return func(k string) (string, bool) {
				switch k {
				case tracing.EnvEndpoint:
					return recv, true
				case tracing.EnvExporter:
					return "none", true
				}
				return "", false
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			te := startTracedEnv(t, lookup)
			tok := token(t, te.Env, "alice@example.com")
			tp := "00-" + hex.EncodeToString(bytes.Repeat([]byte{7}, 16)) + "-" + hex.EncodeToString(bytes.Repeat([]byte{9}, 8)) + "-01"
			postCall(t, te.MCPURL, tok, "brain_query", `{"query":"idempotency"}`, tp, tp)
			for _, tr := range te.trs {
				if tr.Enabled() {
					t.Fatal("tracing is on")
				}
			}
			if err := te.Close(); err != nil {
				t.Fatal(err)
			}
			if n := te.recv.Posts(); n != 0 {
				t.Fatalf("%d exports reached the receiver with tracing off", n)
			}
		})
	}
}

// TestTracesSensitiveOptIn: BRAINSTEM_TRACE_SENSITIVE=true is the one way
// the caller's email and the call's arguments reach the spans (and so the
// byte check of TestTracesCrossWingQuery can see them when present).
func TestTracesSensitiveOptIn(t *testing.T) {
	te := startTracedEnv(t, func(recv string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			switch k {
			case tracing.EnvEndpoint:
				return recv, true
			case tracing.EnvSensitive:
				return "true", true
			}
			return "", false
		}
	})
	tok := token(t, te.Env, "alice@example.com")
	postCall(t, te.MCPURL, tok, "brain_query", `{"query":"chargeback evidence"}`, "", "")
	te.flush(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := te.recv.Wait(ctx, func(spans []otlptest.Span) bool {
		for _, s := range spans {
			email, _ := s.Attr(string(tracing.KeyEmail))
			args, _ := s.Attr(string(tracing.KeyArgs))
			if email == "alice@example.com" && strings.Contains(args, "chargeback evidence") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range te.recv.Raw() {
		if bytes.Contains(raw, []byte(tok)) {
			t.Fatal("the bearer token reached a span even so")
		}
	}
}
