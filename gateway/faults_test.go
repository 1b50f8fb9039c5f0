package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/proto"
)

// callResult is one tool call's outcome, for calls made off the test
// goroutine.
type callResult struct {
	text  string
	isErr bool
	err   error
}

func callAsync(c *client.Client, tool, args string) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
		if err != nil {
			out <- callResult{err: err}
			return
		}
		if len(res.Content) != 1 {
			out <- callResult{err: errors.New("not one content")}
			return
		}
		tc, _ := res.Content[0].(mcp.TextContent)
		out <- callResult{text: tc.Text, isErr: res.IsError}
	}()
	return out
}

// TestLostWriteIsRetriedUnderItsKey: a shard that crashes after applying a
// write, before its answer left (its successor resets the connection),
// gets the write once more after the gateway reconnected, under the same
// idempotency key; the successor answers the first answer from its
// journal, so the agent gets a success and the write was applied once.
// With the agent's own key, and with none (the gateway's gw-… key).
func TestLostWriteIsRetriedUnderItsKey(t *testing.T) {
	for _, tc := range []struct{ name, args, key string }{
		{"gateway key", `{"wing":"payments","id":"payments/f/x","body":"hello"}`, ""},
		{"agent key", `{"wing":"payments","id":"payments/f/x","body":"hello","idempotency_key":"agent-1"}`, "agent-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
			w := e.wings["payments"]
			c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
			if text, isErr := call(t, c, "brain_get", `{"id":"payments/f/none"}`); !isErr || errCode(t, text) != "not_found" {
				t.Fatalf("warm-up: %s", text) // mints and connects
			}
			entered := w.holdAfterWrite()
			res := callAsync(c, "brain_write", tc.args)
			<-entered
			e.shards["payments"].crashAndRestart()
			r := <-res
			if r.err != nil || r.isErr {
				t.Fatalf("lost write answered %+v, want the first answer (sent again under its key)", r)
			}
			seen := writesSeen(w)
			if len(seen) != 2 || seen[0].key != seen[1].key || string(seen[0].args) != string(seen[1].args) {
				t.Fatalf("the write reached the shard as %+v, want twice with the same key and arguments", seen)
			}
			if tc.key != "" && seen[0].key != tc.key || tc.key == "" && !gatewayKey.MatchString(seen[0].key) {
				t.Fatalf("sent with key %q, want %q (or a gw- key)", seen[0].key, tc.key)
			}
			if first, ok := w.firstAnswer("alice@acme.com", seen[0].key); !ok || r.text != first {
				t.Fatalf("answer %s is not the first answer of key %q (%s)", r.text, seen[0].key, first)
			}
			w.mu.Lock()
			applied := w.applied
			w.mu.Unlock()
			if applied != 1 {
				t.Fatalf("the write was applied %d times, want once", applied)
			}
			if m := metricValue(t, e, `brainstem_gateway_lost_write_retries_total{wing="payments"}`); m != "1" {
				t.Fatalf("lost_write_retries_total = %q, want 1", m)
			}
			lines := e.audit.auditLines(t)
			if last := lines[len(lines)-1]; last.Tool != "brain_write" || last.Outcome != "ok" {
				t.Fatalf("audit: %+v", last)
			}
		})
	}
}

// TestWriteLostTwiceIsOutcomeUnknown: a write whose answer is lost, and
// lost again when the gateway sends it once more, has an unknown fate: the
// agent gets outcome_unknown quoting the key the write was sent with (here
// the gateway's gw-… key), the gateway does not send it a third time, and
// the agent's retry with that key gets the first answer without applying
// the write again.
func TestWriteLostTwiceIsOutcomeUnknown(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	w := e.wings["payments"]
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	if text, isErr := call(t, c, "brain_get", `{"id":"payments/f/none"}`); !isErr || errCode(t, text) != "not_found" {
		t.Fatalf("warm-up: %s", text)
	}
	entered := w.holdAfterWrite()
	res := callAsync(c, "brain_write", `{"wing":"payments","id":"payments/f/x","body":"hello"}`)
	<-entered
	again := w.holdNext("brain_write") // the gateway's second sending is lost too
	e.shards["payments"].crashAndRestart()
	<-again
	e.shards["payments"].crashAndRestart()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	seen := writesSeen(w)
	if len(seen) != 2 || seen[0].key != seen[1].key || !gatewayKey.MatchString(seen[0].key) {
		t.Fatalf("the write reached the shard as %+v, want twice with one gateway key", seen)
	}
	key := seen[0].key
	if !r.isErr || errCode(t, r.text) != brain.CodeOutcomeUnknown || !strings.Contains(r.text, `payments`) ||
		!strings.Contains(r.text, fmt.Sprintf(`\"idempotency_key\": \"%s\"`, key)) {
		t.Fatalf("write lost twice answered %s, want outcome_unknown naming the wing and the key %s", r.text, key)
	}
	lines := e.audit.auditLines(t)
	if last := lines[len(lines)-1]; last.Tool != "brain_write" || last.Outcome != string(brain.CodeOutcomeUnknown) {
		t.Fatalf("audit: %+v", last)
	}

	// The agent retries with the quoted key: the first answer, applied once.
	e.waitConnected("payments")
	text, isErr := call(t, c, "brain_write", fmt.Sprintf(`{"wing":"payments","id":"payments/f/x","body":"hello","idempotency_key":%q}`, key))
	if first, ok := w.firstAnswer("alice@acme.com", key); isErr || !ok || text != first {
		t.Fatalf("retry with the quoted key answered %s, want the first answer", text)
	}
	w.mu.Lock()
	applied := w.applied
	w.mu.Unlock()
	if n := len(writesSeen(w)); n != 3 || applied != 1 {
		t.Fatalf("the write reached the shard %d times and was applied %d times, want 3 and once", n, applied)
	}
}

// writesSeen is the brain_write calls that reached w.
func writesSeen(w *testWing) []seenCall {
	var out []seenCall
	for _, c := range w.seenCalls() {
		if c.tool == "brain_write" {
			out = append(out, c)
		}
	}
	return out
}

// TestLostReadIsRetried: a read in flight when the shard crashes is sent
// once more after the gateway reconnected to the successor, and succeeds.
func TestLostReadIsRetried(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	w := e.wings["payments"]
	w.addNote("payments/f/x", "hello", "a@acme.com")
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	call(t, c, "brain_get", `{"id":"payments/f/x"}`)
	entered := w.holdNext("brain_get")
	res := callAsync(c, "brain_get", `{"id":"payments/f/x"}`)
	<-entered
	e.shards["payments"].crashAndRestart()
	r := <-res
	if r.err != nil || r.isErr || !strings.Contains(r.text, `"body":"hello"`) {
		t.Fatalf("lost read answered %+v, want the note (sent again)", r)
	}
	if n := w.toolCount("brain_get"); n != 3 {
		t.Fatalf("brain_get reached the shard %d times, want 3 (warm-up, lost, retry)", n)
	}
	if m := metricValue(t, e, `brainstem_gateway_lost_read_retries_total{wing="payments"}`); m != "1" {
		t.Fatalf("lost_read_retries_total = %q, want 1", m)
	}
}

// TestFanoutBound: a wing that never answers does not hold a cross-wing
// search beyond limits.fanout_timeout, though shards.call_timeout is an
// hour: the others' hits come back, the stuck wing is listed with code
// timeout, and the audit outcome is partial naming it.
func TestFanoutBound(t *testing.T) {
	e := newEnv(t, []string{"a", "b"}, map[string]auth.Policy{"a": policyOpen, "b": policyOpen}, func(c *config.Config, _ *Options) {
		c.Shards.CallTimeout = time.Hour
		c.Limits.FanoutTimeout = 300 * time.Millisecond
	})
	e.wings["a"].addNote("a/f/1", "rust", "x@acme.com")
	e.wings["b"].addNote("b/f/1", "rust", "x@acme.com")
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	call(t, c, "brain_query", `{"query":"rust"}`) // mints in both wings

	for _, phase := range []string{"stats and query", "query only"} {
		t.Run(phase, func(t *testing.T) {
			e.wings["b"].stall.Store(true)
			defer e.wings["b"].stall.Store(false)
			text, isErr := call(t, c, "brain_query", `{"query":"rust"}`)
			if isErr {
				t.Fatal(text)
			}
			var got struct {
				Hits        []json.RawMessage          `json:"hits"`
				Wings       []string                   `json:"wings"`
				Unavailable []toolspec.UnavailableWing `json:"unavailable"`
			}
			if err := json.Unmarshal([]byte(text), &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Wings, []string{"a"}) || len(got.Hits) != 1 || len(got.Unavailable) != 1 ||
				got.Unavailable[0].Wing != "b" || got.Unavailable[0].Code != brain.CodeTimeout || !strings.Contains(got.Unavailable[0].Error, "limits.fanout_timeout") {
				t.Fatalf("answer %s", text)
			}
			lines := e.audit.auditLines(t)
			if last := lines[len(lines)-1]; last.Outcome != outcomePartial || !slices.Equal(last.MissingWings, []string{"b"}) || last.Wing != "*" {
				t.Fatalf("audit: %+v", last)
			}
		})
	}
	if m := metricValue(t, e, `brainstem_gateway_tool_calls_total{outcome="partial",tool="brain_query",wing="*"}`); m != "2" {
		t.Fatalf("partial outcomes counted %q, want 2", m)
	}
}

// TestShardRoleCertificateIsNotReady: a gateway holding a shard-role
// certificate is not ready and says why, and calls answer unavailable
// naming the certificate problem instead of an empty brain.
func TestShardRoleCertificateIsNotReady(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	// A second gateway, with the wrong certificate.
	cfg := e.config([]config.WingConfig{{Name: "payments", Address: e.shards["payments"].addr, ServerName: "localhost"}}, e.base)
	bad, err := New(context.Background(), cfg, Options{ShardTLS: e.pki.shardAsClient, Logger: testLogger(e.logs), AuditLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Close() })
	rec := httptestGet(bad.AdminHandler(), "/readyz")
	if rec.code != http.StatusServiceUnavailable || !strings.Contains(rec.body, `"mint_refused_wings":[{"wing":"payments"`) || !strings.Contains(rec.body, `role \"shard\"`) {
		t.Fatalf("readyz %d %s", rec.code, rec.body)
	}
	if !strings.Contains(e.logs.String(), "misconfigured shards.tls") {
		t.Fatalf("no log line says why:\n%s", e.logs.String())
	}
	// The shard itself refuses the mint with CodeWrongRole.
	ctx := context.WithValue(context.Background(), callInfoKey{}, &callInfo{Caller: route.Caller{ID: auth.Identity{Email: "alice@acme.com", Expiry: time.Now().Add(time.Hour)}, RequestID: "r1", Base: bad.log}})
	_, err = bad.shards.Call(ctx, callInfoFrom(ctx).Caller, bad.byName["payments"], newCall("brain_get", `{"id":"payments/f/x"}`), false)
	var ge *edge.Error
	if !errors.As(err, &ge) || ge.Code != brain.CodeUnavailable || !errors.Is(err, edge.ErrMintRefused) || !strings.Contains(ge.Message, "gateway-role certificate") {
		t.Fatalf("call with a shard-role certificate: %v", err)
	}
	if m := httptestGet(bad.AdminHandler(), "/metrics"); !strings.Contains(m.body, `brainstem_gateway_mints_total{outcome="wrong_role",wing="payments"} 1`) {
		t.Fatalf("the refused mint is not counted:\n%s", m.body)
	}
}

// metricValue scrapes the gateway's /metrics for one series.
func metricValue(t *testing.T, e *testEnv, series string) string {
	t.Helper()
	rec := httptestGet(e.gw.AdminHandler(), "/metrics")
	for _, l := range strings.Split(rec.body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

type recorded struct {
	code int
	body string
}

func httptestGet(h http.Handler, path string) recorded {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return recorded{rec.Code, rec.Body.String()}
}

func testLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newCall(tool, args string) *proto.CallRequest {
	return &proto.CallRequest{RequestID: "test", Tool: tool, Args: []byte(args)}
}

// rawConn dials the gateway's public listener.
func rawConn(t *testing.T, e *testEnv) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestWithheldBody: a peer that sends headers and withholds the body is
// answered and disconnected: at once when it has no token (the gateway does
// not wait for a body it will not read), after limits.body_timeout when it
// has one.
func TestWithheldBody(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen}, func(c *config.Config, _ *Options) {
		c.Limits.BodyTimeout = 200 * time.Millisecond
	})
	tok := e.idp.token(t, "alice@acme.com")
	tests := []struct {
		name, auth string
		status     int
		body       string
	}{
		{"no token", "", 401, "bearer token"},
		{"bad token", "Authorization: Bearer x.y.z\r\n", 401, "invalid_token"},
		{"valid token", "Authorization: Bearer " + tok + "\r\n", 400, "limits.body_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rawConn(t, e)
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 100\r\n\r\n{\"jsonrpc\"", tt.auth)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.body) || !resp.Close {
				t.Fatalf("%d close=%v %s", resp.StatusCode, resp.Close, body)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("connection still open after the answer: %v", err)
			}
		})
	}
}

// TestUnauthenticatedConnBound: connections that carry no authenticated
// request are bounded; one that authenticates stops counting.
func TestUnauthenticatedConnBound(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen}, func(c *config.Config, _ *Options) {
		c.Limits.MaxUnauthenticatedConns = 2
	})
	tok := e.idp.token(t, "alice@acme.com")
	// Unauthenticated requests have no body (a refusal with an unread body
	// closes its connection).
	request := func(c net.Conn, withToken bool) (*http.Response, error) {
		if withToken {
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", tok, len(initBody), initBody)
		} else {
			fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	a, b := rawConn(t, e), rawConn(t, e)
	// Both are accepted (they answer); a third is closed at once.
	if resp, err := request(b, false); err != nil || resp.StatusCode != 401 {
		t.Fatalf("second connection: %v %v", resp, err)
	}
	third := rawConn(t, e)
	if _, err := request(third, false); err == nil {
		t.Fatal("a third unauthenticated connection was served")
	}
	// a authenticates: it no longer counts, so a new connection is served.
	if resp, err := request(a, true); err != nil || resp.StatusCode != 200 {
		t.Fatalf("authenticated request: %v %v", resp, err)
	}
	if resp, err := request(rawConn(t, e), false); err != nil || resp.StatusCode != 401 {
		t.Fatalf("a connection after one authenticated: %v %v", resp, err)
	}
	if e.gw.edge.Conns.Rejected() != 1 {
		t.Fatalf("rejected = %d, want 1", e.gw.edge.Conns.Rejected())
	}
}

// TestDraining: once told to stop, the gateway is not ready and closes
// each connection after its answer (the drain grace), while still
// answering.
func TestDraining(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	tok := e.idp.token(t, "alice@acme.com")
	resp, _ := rawPost(t, e.url, initBody, map[string]string{"Authorization": "Bearer " + tok})
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before: %d close=%v", resp.StatusCode, resp.Close)
	}
	e.gw.draining.Store(true)
	resp, body := rawPost(t, e.url, initBody, map[string]string{"Authorization": "Bearer " + tok})
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("draining: %d close=%v %s", resp.StatusCode, resp.Close, body)
	}
	if r := httptestGet(e.gw.AdminHandler(), "/readyz"); r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, `"draining":true`) {
		t.Fatalf("readyz while draining: %d %s", r.code, r.body)
	}
	e.gw.draining.Store(false) // let the test's own Serve shut down normally
}
