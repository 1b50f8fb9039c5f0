package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/config"
)

const leanMetric = ns + "_lean_tool_calls_total"

// leanEnv is a gateway with the lean path (e.gw) and a second gateway on the
// same shards and IdP with every request sent through mcp-go (plain). Both
// carry three extra tools whose handlers panic, fail, or return nothing.
type leanEnv struct {
	*testEnv
	plain    *Gateway
	plainURL string
}

func newLeanEnv(t testing.TB) *leanEnv {
	t.Helper()
	addTools := func(g *Gateway) {
		g.mcp.AddTool(mcp.NewTool("test_panic"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("boom")
		})
		g.mcp.AddTool(mcp.NewTool("test_error"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("handler failed")
		})
		g.mcp.AddTool(mcp.NewTool("test_nil"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, nil
		})
		// test_text answers its "text" argument; test_bytes raw bytes no
		// JSON decoder would produce. isError when "error" is true.
		g.mcp.AddTool(mcp.NewTool("test_text"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct {
				Text  string `json:"text"`
				Error bool   `json:"error"`
			}
			_ = json.Unmarshal(req.Params.RawArguments, &a)
			res := mcp.NewToolResultText(a.Text)
			res.IsError = a.Error
			return res, nil
		})
		g.mcp.AddTool(mcp.NewTool("test_bytes"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("a\xffb\xe2\x80\xa8c\u2029<\x01>&\x7f\\\"\ud7ff\U0010ffff"), nil
		})
		// test_region mirrors its "region" argument in Mcp-Param-Region.
		g.mcp.AddTool(mcp.NewToolWithRawSchema("test_region", "", json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("region ok"), nil
			})
		g.mcp.AddTool(mcp.NewTool("test_unencodable"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := mcp.NewToolResultText("x")
			res.StructuredContent = map[string]any{"inf": math.Inf(1)} // JSON has no infinity
			return res, nil
		})
		g.mcp.AddTool(mcp.NewTool("test_image"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultImage("<b>", "aGk=", "image/png"), nil
		})
	}
	e := newEnv(t, []string{"payments", "people"}, map[string]auth.Policy{
		"payments": policyOpen,
		"people":   {Readers: []string{"hr@acme.com"}},
	})
	addTools(e.gw)
	for _, w := range e.wings {
		close(w.slowGate) // brain_slow answers at once: both paths must see the same
	}
	e.wings["payments"].addNote("payments/decisions/idem", "use idempotency keys\nfor <every> \"write\" & retry é", "ann@acme.com")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	var wcs []config.WingConfig
	for _, n := range []string{"payments", "people"} {
		wcs = append(wcs, config.WingConfig{Name: n, Address: e.shards[n].addr, ServerName: "localhost"})
	}
	cfg := e.config(wcs, base)
	plain := e.startGatewayOn(ln, cfg, Options{}, func(g *Gateway) { g.SetLeanPathForTest(false); addTools(g) })
	return &leanEnv{testEnv: e, plain: plain, plainURL: base + "/mcp"}
}

// compare posts body to the gateway with the lean path (headers lh) and to
// the one without (ph), and requires the same status, Content-Type and
// bytes, and that the lean path answered it exactly when lean is set. It
// returns the lean gateway's answer.
func (e *leanEnv) compare(t *testing.T, body string, lh, ph map[string]string, lean bool) (*http.Response, []byte) {
	t.Helper()
	before := counterValue(t, e.gw, leanMetric)
	lresp, lbody := rawPost(t, e.url, body, lh)
	took := counterValue(t, e.gw, leanMetric) - before
	presp, pbody := rawPost(t, e.plainURL, body, ph)
	if took != b2f(lean) {
		t.Errorf("lean path answered %v requests, want %v", took, b2f(lean))
	}
	if n := counterValue(t, e.plain, leanMetric); n != 0 {
		t.Fatalf("the gateway without the lean path answered %v requests on it", n)
	}
	if lresp.StatusCode != presp.StatusCode {
		t.Errorf("status: lean %d, mcp-go %d", lresp.StatusCode, presp.StatusCode)
	}
	if l, p := lresp.Header.Get("Content-Type"), presp.Header.Get("Content-Type"); l != p {
		t.Errorf("Content-Type: lean %q, mcp-go %q", l, p)
	}
	if !bytes.Equal(lbody, pbody) {
		t.Errorf("body differs\nlean:   %s\nmcp-go: %s", lbody, pbody)
	}
	return lresp, lbody
}

// modernMeta is the _meta every 2026-07-28 request carries.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}`

func modernHeaders(tool string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

func withHeader(h map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for a, b := range h {
		out[a] = b
	}
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// TestLeanPathMatchesMCPGo sends every request to both gateways and requires
// the same status, Content-Type and body bytes, and that the lean path took
// exactly the requests it should.
func TestLeanPathMatchesMCPGo(t *testing.T) {
	e := newLeanEnv(t)
	token := e.idp.token(t, "ann@acme.com")
	get := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"},` + modernMeta + `}}`
	}
	callBody := func(tool, args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `"` + args + `,` + modernMeta + `}}`
	}
	h := modernHeaders("brain_get")
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		lean bool // the lean path must answer it
	}{
		{"note", get("1"), h, true},
		{"string id", get(`"abc-é"`), h, true},
		{"fractional id", get("1.5"), h, true},
		{"id beyond 2^53", get("9007199254740993"), h, true},
		{"exponent id", get("1e3"), h, true},
		{"negative id", get("-4"), h, true},
		{"progress token", strings.Replace(get("2"), `"_meta":{`, `"_meta":{"progressToken":"p1",`, 1), h, true},
		{"extra params", strings.Replace(get("3"), `"name":`, `"task":{"ttl":1},"other":[1,2],"name":`, 1), h, true},
		{"charset", get("4"), withHeader(h, "Content-Type", "application/json; charset=utf-8"), true},
		{"session header ignored", get("5"), withHeader(h, "Mcp-Session-Id", "mcp-session-00000000-0000-0000-0000-000000000000"), true},
		{"not found", callBody("brain_get", `,"arguments":{"id":"payments/decisions/nope"}`), h, true},
		{"wing not allowed", callBody("brain_get", `,"arguments":{"id":"people/decisions/x"}`), h, true},
		{"unknown wing", callBody("brain_get", `,"arguments":{"id":"mars/decisions/x"}`), h, true},
		{"no arguments", callBody("brain_get", ``), h, true},
		{"null arguments", callBody("brain_get", `,"arguments":null`), h, true},
		{"string arguments", callBody("brain_get", `,"arguments":"x"`), h, true},
		{"array arguments", callBody("brain_get", `,"arguments":[1]`), h, true},
		{"escaped meta version", strings.Replace(get("1"), `"2026-07-28"`, `"2026\u002d07-28"`, 1), h, true},
		{"capabilities with fields", strings.Replace(get("1"), `clientCapabilities":{}`, `clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"extensions":{"x":[1,"y"]}}`, 1), h, true},
		{"_meta twice, the last one modern", strings.Replace(get("1"), `"_meta":`, `"_meta":{"a":1},"_meta":`, 1), h, true},
		{"escaped argument name", callBody("brain_get", `,"arguments":{"\u0069d":"payments/decisions/idem"}`), h, true},
		{"number below float64", callBody("brain_get", `,"arguments":{"id":"payments/decisions/idem","n":1e-999}`), h, true},
		{"numbers in nested arguments", callBody("brain_get", `,"arguments":{"id":"payments/decisions/idem","n":[{"m":-0.5e3}]}`), h, true},
		{"cross-wing query", callBody("brain_query", `,"arguments":{"query":"idempotency"}`), modernHeaders("brain_query"), true},
		{"brain_wings", callBody("brain_wings", ``), modernHeaders("brain_wings"), true},
		{"handler panics", callBody("test_panic", ``), modernHeaders("test_panic"), true},
		{"handler fails", callBody("test_error", ``), modernHeaders("test_error"), true},
		{"handler returns nothing", callBody("test_nil", ``), modernHeaders("test_nil"), true},
		{"text to escape", callBody("test_text", `,"arguments":{"text":"<\/script>\u2028\u2029\u0000\t\"é𝄞&"}`), modernHeaders("test_text"), true},
		{"text as tool error", callBody("test_text", `,"arguments":{"text":"nope","error":true}`), modernHeaders("test_text"), true},
		{"empty text", callBody("test_text", `,"arguments":{}`), modernHeaders("test_text"), true},
		{"raw bytes", callBody("test_bytes", ``), modernHeaders("test_bytes"), true},
		{"image content", callBody("test_image", ``), modernHeaders("test_image"), true},
		{"result that cannot be encoded", callBody("test_unencodable", ``), modernHeaders("test_unencodable"), true},
		{"param header matches", callBody("test_region", `,"arguments":{"region":"eu"}`), withHeader(modernHeaders("test_region"), "Mcp-Param-Region", "eu"), true},
		{"param header absent, argument absent", callBody("test_region", `,"arguments":{}`), modernHeaders("test_region"), true},

		// Everything below is mcp-go's to answer.
		{"unknown tool", callBody("brain_nope", ``), modernHeaders("brain_nope"), false},
		{"param header differs", callBody("test_region", `,"arguments":{"region":"eu"}`), withHeader(modernHeaders("test_region"), "Mcp-Param-Region", "us"), false},
		{"param header missing", callBody("test_region", `,"arguments":{"region":"eu"}`), modernHeaders("test_region"), false},
		{"param header without argument", callBody("test_region", `,"arguments":{}`), withHeader(modernHeaders("test_region"), "Mcp-Param-Region", "eu"), false},
		{"Mcp-Name mismatch", get("1"), withHeader(h, "Mcp-Name", "brain_query"), false},
		{"Mcp-Name missing", get("1"), withHeader(h, "Mcp-Name", ""), false},
		{"Mcp-Method missing", get("1"), withHeader(h, "Mcp-Method", ""), false},
		{"Mcp-Method mismatch", get("1"), withHeader(h, "Mcp-Method", "tools/list"), false},
		{"Last-Event-ID", get("1"), withHeader(h, "Last-Event-ID", "3"), false},
		{"meta version differs", strings.Replace(get("1"), `"2026-07-28"`, `"2025-11-25"`, 1), h, false},
		{"no client capabilities", strings.Replace(get("1"), `"io.modelcontextprotocol/clientCapabilities":{},`, ``, 1), h, false},
		{"capabilities not an object", strings.Replace(get("1"), `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":3`, 1), h, false},
		{"_meta twice, the first not an object", strings.Replace(get("1"), `"_meta":`, `"_meta":5,"_meta":`, 1), h, false},
		{"_meta then null", strings.Replace(get("1"), `"arguments":`, `"_meta":null,"arguments":`, 1), h, true},
		{"modern _meta then null", strings.TrimSuffix(get("1"), "}}") + `,"_meta":null}}`, h, false},
		{"meta number beyond float64", strings.Replace(get("1"), `"_meta":{`, `"_meta":{"x":1e999,`, 1), h, false},
		{"capabilities of the wrong type", strings.Replace(get("1"), `clientCapabilities":{}`, `clientCapabilities":{"roots":5}`, 1), h, false},
		{"null capabilities", strings.Replace(get("1"), `clientCapabilities":{}`, `clientCapabilities":null`, 1), h, false},
		{"version not a string", strings.Replace(get("1"), `"2026-07-28"`, `20260728`, 1), h, false},
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"}}}`, h, false},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, h, false},
		{"number beyond float64", callBody("brain_get", `,"arguments":{"id":"payments/decisions/idem","n":1e999}`), h, false},
		{"nested number beyond float64", callBody("brain_get", `,"arguments":{"id":"payments/decisions/idem","n":{"m":["-1e400"],"k":[-2E+308]}}`), h, false},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, h, false},
		{"wrong jsonrpc", strings.Replace(get("1"), `"2.0"`, `"1.0"`, 1), h, false},
		{"null id", get("null"), h, false},
		{"object id", get(`{"a":1}`), h, false},
		{"bool id", get("true"), h, false},
		{"no id", strings.Replace(get("1"), `"id":1,`, ``, 1), h, false},
		{"result field", strings.Replace(get("1"), `"method"`, `"result":{},"method"`, 1), h, false},
		{"text/plain", get("1"), withHeader(h, "Content-Type", "text/plain"), false},
		{"bad json", get("1") + "x", h, false},
		{"legacy version header", get("1"), withHeader(h, "Mcp-Protocol-Version", "2025-11-25"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := withHeader(tc.hdr, "Authorization", "Bearer "+token)
			lresp, lbody := e.compare(t, tc.body, hdr, hdr, tc.lean)
			// A lean answer is a result or an error, except where mcp-go
			// itself answers nothing (a result JSON cannot encode).
			if tc.name == "brain_wings" && !bytes.Contains(lbody, []byte(`"structuredContent":{"wings":`)) {
				t.Errorf("brain_wings' answer has no structuredContent: %s", lbody)
			}
			if tc.lean && len(lbody) > 0 && (lresp.StatusCode != http.StatusOK || !bytes.Contains(lbody, []byte(`"resultType":"complete"`)) && !bytes.Contains(lbody, []byte(`"error":{`))) {
				t.Errorf("lean answer is neither a result nor an error: %d %s", lresp.StatusCode, lbody)
			}
		})
	}
}

// openSession initializes a 2025-06-18 session on url and returns its id.
func openSession(t testing.TB, url, token string) string {
	t.Helper()
	resp, b := rawPost(t, url, initBody, map[string]string{"Authorization": "Bearer " + token})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s (session %q)", resp.StatusCode, b, sid)
	}
	return sid
}

// TestLeanPathMatchesMCPGoOnSessions: a session-era tools/call (2025-06-18
// and before, on an Mcp-Session-Id mcp-go served) is answered on the lean
// path byte for byte as mcp-go answers it; anything else is mcp-go's.
func TestLeanPathMatchesMCPGoOnSessions(t *testing.T) {
	e := newLeanEnv(t)
	token := e.idp.token(t, "ann@acme.com")
	lsid, psid := openSession(t, e.url, token), openSession(t, e.plainURL, token)
	call := func(tool, args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `"` + args + `}}`
	}
	get := call("brain_get", `,"arguments":{"id":"payments/decisions/idem"}`)
	h := map[string]string{"Mcp-Protocol-Version": "2025-06-18"}
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		sid  bool // send the session's id
		lean bool // the lean path must answer it
	}{
		{"note", get, h, true, true},
		{"string id", strings.Replace(get, `"id":7`, `"id":"abc-é"`, 1), h, true, true},
		{"fractional id", strings.Replace(get, `"id":7`, `"id":1.5`, 1), h, true, true},
		{"exponent id", strings.Replace(get, `"id":7`, `"id":1e3`, 1), h, true, true},
		{"2025-03-26", get, withHeader(h, "Mcp-Protocol-Version", "2025-03-26"), true, true},
		{"2025-11-25", get, withHeader(h, "Mcp-Protocol-Version", "2025-11-25"), true, true},
		{"no version header", get, withHeader(h, "Mcp-Protocol-Version", ""), true, true},
		{"progress token", strings.Replace(get, `"arguments":`, `"_meta":{"progressToken":"p1"},"arguments":`, 1), h, true, true},
		{"not found", call("brain_get", `,"arguments":{"id":"payments/decisions/nope"}`), h, true, true},
		{"wing not allowed", call("brain_get", `,"arguments":{"id":"people/decisions/x"}`), h, true, true},
		{"no arguments", call("brain_get", ``), h, true, true},
		{"cross-wing query", call("brain_query", `,"arguments":{"query":"idempotency"}`), h, true, true},
		{"brain_wings", call("brain_wings", ``), h, true, true},
		{"handler panics", call("test_panic", ``), h, true, true},
		{"handler fails", call("test_error", ``), h, true, true},
		{"handler returns nothing", call("test_nil", ``), h, true, true},
		{"text to escape", call("test_text", `,"arguments":{"text":"<\/script>\u2028\u2029\u0000\t\"é𝄞&"}`), h, true, true},
		{"text as tool error", call("test_text", `,"arguments":{"text":"nope","error":true}`), h, true, true},
		{"raw bytes", call("test_bytes", ``), h, true, true},
		{"image content", call("test_image", ``), h, true, true},
		{"result that cannot be encoded", call("test_unencodable", ``), h, true, true},
		{"param header differs (not a session-era check)", call("test_region", `,"arguments":{"region":"eu"}`), withHeader(h, "Mcp-Param-Region", "us"), true, true},

		// Everything below is mcp-go's to answer.
		{"no session id", get, h, false, false},
		{"unknown tool", call("brain_nope", ``), h, true, false},
		{"Last-Event-ID", get, withHeader(h, "Last-Event-ID", "3"), true, false},
		{"a protocol version in _meta", strings.Replace(get, `"arguments":`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"},"arguments":`, 1), h, true, false},
		{"the stateless version in _meta", strings.Replace(get, `"arguments":`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"arguments":`, 1), h, true, false},
		{"number beyond float64", call("brain_get", `,"arguments":{"id":"payments/decisions/idem","n":1e999}`), h, true, false},
		{"null id", strings.Replace(get, `"id":7`, `"id":null`, 1), h, true, false},
		{"text/plain", get, withHeader(h, "Content-Type", "text/plain"), true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lh, ph := withHeader(tc.hdr, "Authorization", "Bearer "+token), withHeader(tc.hdr, "Authorization", "Bearer "+token)
			if tc.sid {
				lh["Mcp-Session-Id"], ph["Mcp-Session-Id"] = lsid, psid
			}
			_, lbody := e.compare(t, tc.body, lh, ph, tc.lean)
			if tc.lean && bytes.Contains(lbody, []byte(`"resultType"`)) {
				t.Errorf("a session-era answer carries the stateless stamp: %s", lbody)
			}
		})
	}
}

// TestLeanPathSessionGate: the lean path answers a session's calls only
// once mcp-go has served that session (here: a valid id this replica never
// saw, as after a client moved between replicas), and mcp-go then sees it
// at least once per interval.
func TestLeanPathSessionGate(t *testing.T) {
	e := newLeanEnv(t)
	token := e.idp.token(t, "ann@acme.com")
	sid := openSession(t, e.plainURL, token) // issued by the other gateway
	hdr := map[string]string{"Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2025-06-18", "Mcp-Session-Id": sid}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"}}}`
	for i, want := range []float64{0, 1, 1} {
		before := counterValue(t, e.gw, leanMetric)
		resp, b := rawPost(t, e.url, body, hdr)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("use idempotency keys")) {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b)
		}
		if got := counterValue(t, e.gw, leanMetric) - before; got != want {
			t.Fatalf("call %d: the lean path answered %v, want %v", i, got, want)
		}
	}
}

// TestLeanPathAudit: a call on the lean path is audited and counted like
// any other.
func TestLeanPathAudit(t *testing.T) {
	e := newLeanEnv(t)
	token := e.idp.token(t, "ann@acme.com")
	hdr := withHeader(modernHeaders("brain_get"), "Authorization", "Bearer "+token)
	hdr["X-Request-Id"] = "lean-audit-1"
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"},` + modernMeta + `}}`
	resp, b := rawPost(t, e.url, body, hdr)
	if resp.StatusCode != http.StatusOK || counterValue(t, e.gw, leanMetric) != 1 {
		t.Fatalf("lean call: %d %s (lean calls %v)", resp.StatusCode, b, counterValue(t, e.gw, leanMetric))
	}
	var found bool
	for _, a := range e.audit.auditLines(t) {
		if a.RequestID == "lean-audit-1" {
			found = true
			if a.Email != "ann@acme.com" || a.Tool != "brain_get" || a.Wing != "payments" || a.Outcome != "ok" || a.BytesOut == 0 {
				t.Errorf("audit line %+v", a)
			}
		}
	}
	if !found {
		t.Fatalf("no audit line for the lean call:\n%s", e.audit.String())
	}
	if n := counterValue(t, e.gw, ns+"_tool_calls_total", "tool", "brain_get", "wing", "payments", "outcome", "ok"); n != 1 {
		t.Fatalf("tool_calls_total{brain_get,payments,ok} = %v, want 1", n)
	}
}

// FuzzLeanPathMatchesMCPGo: for any tools/call body and Mcp-Name, the
// gateway with the lean path answers exactly what mcp-go answers.
func FuzzLeanPathMatchesMCPGo(f *testing.F) {
	e := newLeanEnv(f)
	token := e.idp.token(f, "ann@acme.com")
	seed := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"},` + modernMeta + `}}`
	f.Add(seed, "brain_get")
	f.Add(strings.Replace(seed, `"id":1`, `"id":"x"`, 1), "brain_get")
	f.Add(strings.Replace(seed, `"arguments":{"id":"payments/decisions/idem"}`, `"arguments":{"query":"keys"}`, 1), "brain_query")
	f.Add(strings.Replace(seed, "brain_get", "brain_wings", 1), "brain_wings")
	f.Add(strings.Replace(seed, "brain_get", "test_panic", 1), "test_panic")
	f.Add(strings.Replace(strings.Replace(seed, "brain_get", "test_text", 1), `{"id":"payments/decisions/idem"}`, `{"text":"<\u2028>","error":true}`, 1), "test_text")
	f.Add(strings.Replace(seed, "brain_get", "test_bytes", 1), "test_bytes")
	f.Add(strings.Replace(seed, `"2026-07-28"`, `"2025-06-18"`, 1), "brain_get")
	f.Add(strings.Replace(seed, `"_meta":`, `"_meta":5,"_meta":`, 1), "brain_get")
	f.Add(strings.Replace(seed, `clientCapabilities":{}`, `clientCapabilities":{"roots":{"listChanged":1}}`, 1), "brain_get")
	f.Add(strings.Replace(seed, `"arguments":{`, `"arguments":{"n":[1e999],`, 1), "brain_get")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_write","arguments":{"id":"payments/decisions/w","body":"b"},`+modernMeta+`}}`, "brain_write")
	f.Fuzz(func(t *testing.T, body, name string) {
		// net/http refuses to send control characters in a header.
		name = strings.Map(func(r rune) rune {
			if r < ' ' && r != '\t' || r == 0x7f {
				return '_'
			}
			return r
		}, name)
		hdr := withHeader(modernHeaders(name), "Authorization", "Bearer "+token)
		if name == "" {
			delete(hdr, "Mcp-Name")
		}
		// In process (no sockets), so the fuzzer runs many inputs a second.
		serve := func(h http.Handler) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		l, p := serve(e.gw.Handler()), serve(e.plain.Handler())
		if l.Code != p.Code || l.Header().Get("Content-Type") != p.Header().Get("Content-Type") || !bytes.Equal(l.Body.Bytes(), p.Body.Bytes()) {
			t.Fatalf("lean %d %q %s\nmcp-go %d %q %s", l.Code, l.Header().Get("Content-Type"), l.Body.Bytes(),
				p.Code, p.Header().Get("Content-Type"), p.Body.Bytes())
		}
	})
}

// FuzzLeanPathMatchesMCPGoOnSessions: for any tools/call body and
// protocol version header on a session mcp-go served, the gateway with the
// lean path answers exactly what mcp-go answers.
func FuzzLeanPathMatchesMCPGoOnSessions(f *testing.F) {
	e := newLeanEnv(f)
	token := e.idp.token(f, "ann@acme.com")
	lsid, psid := openSession(f, e.url, token), openSession(f, e.plainURL, token)
	seed := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"}}}`
	f.Add(seed, "2025-06-18")
	f.Add(strings.Replace(seed, `"id":1`, `"id":"x"`, 1), "2025-03-26")
	f.Add(strings.Replace(seed, `"arguments":{"id":"payments/decisions/idem"}`, `"arguments":{"query":"keys"}`, 1), "")
	f.Add(strings.Replace(seed, "brain_get", "brain_wings", 1), "2025-11-25")
	f.Add(strings.Replace(seed, "brain_get", "test_panic", 1), "2025-06-18")
	f.Add(strings.Replace(strings.Replace(seed, "brain_get", "test_text", 1), `{"id":"payments/decisions/idem"}`, `{"text":"<\u2028>","error":true}`, 1), "2025-06-18")
	f.Add(strings.Replace(seed, "brain_get", "test_bytes", 1), "2025-06-18")
	f.Add(strings.Replace(seed, `"arguments":`, `"_meta":{"progressToken":1},"arguments":`, 1), "2025-06-18")
	f.Add(strings.Replace(seed, `"arguments":`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":`, 1), "2025-06-18")
	f.Add(strings.Replace(seed, `"arguments":{`, `"arguments":{"n":[1e999],`, 1), "2025-06-18")
	f.Fuzz(func(t *testing.T, body, version string) {
		if mcp.IsModernProtocol(version) || strings.ContainsFunc(version, func(r rune) bool { return r < ' ' || r >= 0x7f }) {
			return // the stateless path is FuzzLeanPathMatchesMCPGo's
		}
		serve := func(h http.Handler, sid string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Mcp-Session-Id", sid)
			if version != "" {
				req.Header.Set("Mcp-Protocol-Version", version)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		l, p := serve(e.gw.Handler(), lsid), serve(e.plain.Handler(), psid)
		if l.Code != p.Code || l.Header().Get("Content-Type") != p.Header().Get("Content-Type") || !bytes.Equal(l.Body.Bytes(), p.Body.Bytes()) {
			t.Fatalf("lean %d %q %s\nmcp-go %d %q %s", l.Code, l.Header().Get("Content-Type"), l.Body.Bytes(),
				p.Code, p.Header().Get("Content-Type"), p.Body.Bytes())
		}
	})
}

// counterValue sums the samples of the counter name on g's registry whose
// labels include every pair in labels (name, value, name, value...).
func counterValue(t testing.TB, g *Gateway, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
