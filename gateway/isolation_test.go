package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
)

// TestIsolationUnderLoad: 50 distinct users at once, each writing and
// reading its own notes in the wings its policies allow, and being refused
// where they deny. No response carries another user's data, and the audit
// log attributes every call (by request id) to the right email.
func TestIsolationUnderLoad(t *testing.T) {
	e := newEnv(t, []string{"open", "acme", "team"}, map[string]auth.Policy{
		"open": policyOpen,
		"acme": {Readers: []string{"*"}, Writers: []string{"domain:acme.com"}},
		"team": {Readers: []string{"group:team"}, Writers: []string{"group:team"}},
	})
	const users = 50
	type expect struct {
		reqID, email, wing, tool, outcome string
	}
	var (
		mu       sync.Mutex
		expected []expect
	)
	record := func(x expect) { mu.Lock(); expected = append(expected, x); mu.Unlock() }

	var wg sync.WaitGroup
	errs := make(chan error, users*64)
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			domain := "acme.com"
			if u%5 == 0 {
				domain = "other.org"
			}
			email := fmt.Sprintf("user%02d@%s", u, domain)
			var groups []string
			inTeam := u%3 == 0
			if inTeam {
				groups = []string{"team"}
			}
			tok := e.idp.token(t, email, groups...)
			c := newMCPClientNoFatal(e.url, tok, u%2 == 0)
			if c == nil {
				errs <- fmt.Errorf("%s: cannot connect", email)
				return
			}
			defer c.Close()
			n := 0
			do := func(tool, wing, args string) (string, bool, string) {
				n++
				rid := fmt.Sprintf("u%02d-%d", u, n)
				res, err := c.CallTool(context.Background(), mcp.CallToolRequest{
					Header: http.Header{"X-Request-Id": {rid}},
					Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
				if err != nil {
					errs <- fmt.Errorf("%s %s: %v", email, rid, err)
					return "", true, rid
				}
				text := res.Content[0].(mcp.TextContent).Text
				outcome := "ok"
				if res.IsError {
					outcome = "tool_error"
					if code, _, ok := brain.DecodeError([]byte(text)); ok && isGatewayCode(code, text) {
						outcome = string(code)
					}
				}
				record(expect{rid, email, wing, tool, outcome})
				return text, res.IsError, rid
			}
			marker := fmt.Sprintf("secret%02d", u)
			for _, wing := range []string{"open", "acme", "team"} {
				canWrite := wing == "open" || (wing == "acme" && domain == "acme.com") || (wing == "team" && inTeam)
				canRead := wing != "team" || inTeam
				id := fmt.Sprintf("%s/notes/%s", wing, strings.Split(email, "@")[0])
				text, isErr, rid := do("brain_write", wing, fmt.Sprintf(`{"wing":%q,"id":%q,"body":"note of %s %s"}`, wing, id, email, marker))
				switch {
				case canWrite && (isErr || !strings.Contains(text, `"author":"`+email+`"`)):
					errs <- fmt.Errorf("%s %s: write in %s: %s", email, rid, wing, text)
				case !canWrite && canRead && (!isErr || !strings.Contains(text, `"forbidden"`)):
					errs <- fmt.Errorf("%s %s: write in %s should be refused: %s", email, rid, wing, text)
				case !canRead && (!isErr || !strings.Contains(text, `"unknown_wing"`)):
					// No capability at all: answered as for a wing that does not exist.
					errs <- fmt.Errorf("%s %s: write in %s should be refused as unknown: %s", email, rid, wing, text)
				}
				if !canWrite {
					continue
				}
				text, isErr, rid = do("brain_get", wing, fmt.Sprintf(`{"id":%q}`, id))
				if canRead && (isErr || !strings.Contains(text, marker) || !strings.Contains(text, `"author":"`+email+`"`)) {
					errs <- fmt.Errorf("%s %s: read own note in %s: %s", email, rid, wing, text)
				}
			}
			text, isErr, rid := do("brain_query", "*", fmt.Sprintf(`{"query":%q,"limit":50}`, marker))
			if isErr {
				errs <- fmt.Errorf("%s %s: query: %s", email, rid, text)
			}
			var qr struct {
				Hits []struct {
					ID string `json:"id"`
				} `json:"hits"`
			}
			_ = json.Unmarshal([]byte(text), &qr)
			own := strings.Split(email, "@")[0]
			for _, h := range qr.Hits {
				if !strings.HasSuffix(h.ID, "/"+own) {
					errs <- fmt.Errorf("%s %s: query returned another user's note %s", email, rid, h.ID)
				}
			}
			if len(qr.Hits) == 0 {
				errs <- fmt.Errorf("%s %s: query found none of the user's own notes: %s", email, rid, text)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Every call is in the audit log exactly once, under the right email.
	byID := map[string]AuditLine{}
	for _, l := range e.audit.auditLines(t) {
		if _, dup := byID[l.RequestID]; dup {
			t.Errorf("request id %s audited twice", l.RequestID)
		}
		byID[l.RequestID] = l
		if l.Arguments != nil {
			t.Errorf("arguments logged without audit.log_arguments: %+v", l)
		}
	}
	for _, x := range expected {
		l, ok := byID[x.reqID]
		if !ok {
			t.Errorf("call %s not audited", x.reqID)
			continue
		}
		if l.Email != x.email || l.Wing != x.wing || l.Tool != x.tool || l.Outcome != x.outcome {
			t.Errorf("call %s audited as %+v, want %+v", x.reqID, l, x)
		}
	}
	if len(expected) < users*4 {
		t.Fatalf("only %d calls made", len(expected))
	}
}

// isGatewayCode tells a gateway error from a shard's tool error:
// "forbidden" is both (the gateway's says the policy does not admit you;
// the test wing's names the missing capability).
func isGatewayCode(c brain.Code, text string) bool {
	switch c {
	case brain.CodeForbidden:
		return strings.Contains(text, "does not admit you")
	case brain.CodeUnknownWing, brain.CodeUnavailable, brain.CodeTimeout, brain.CodeInvalidArgument, brain.CodeRateLimited, brain.CodeUnknownTool, brain.CodeTooLarge, brain.CodeCanceled, brain.CodeInternal:
		return true
	}
	return false
}

// newMCPClientNoFatal is newMCPClient for use off the test goroutine.
func newMCPClientNoFatal(url, token string, legacy bool) *client.Client {
	t := &noFatal{}
	defer func() { _ = recover() }()
	return newMCPClient(t, url, token, legacy)
}

// noFatal is a testing.TB whose Fatal panics (recovered by the caller).
type noFatal struct{ testing.TB }

func (n *noFatal) Helper()                   {}
func (n *noFatal) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (n *noFatal) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (n *noFatal) Cleanup(func())            {}

// TestAuditAndAdmin: audit line content (with and without arguments),
// metrics, healthz and readyz.
func TestAuditAndAdmin(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen},
		func(c *config.Config, _ *Options) { c.Audit.LogArguments = true })
	e.wings["payments"].addNote("payments/f/x", "hello", "a@acme.com")
	c := e.client(t, e.idp.token(t, "Alice@Acme.com"), false)
	text, _ := call(t, c, "brain_get", `{"id":"payments/f/x"}`)
	call(t, c, "brain_get", `{"wing":"nope"}`)

	lines := e.audit.auditLines(t)
	if len(lines) != 2 {
		t.Fatalf("%d audit lines", len(lines))
	}
	l := lines[0]
	if l.Email != "alice@acme.com" || l.Wing != "payments" || l.Tool != "brain_get" || l.Outcome != "ok" ||
		l.BytesIn != len(`{"id":"payments/f/x"}`) || l.BytesOut != len(text) || l.RequestID == "" || l.Time.IsZero() ||
		string(l.Arguments) != `{"id":"payments/f/x"}` || l.DurationSeconds < 0 {
		t.Fatalf("audit line %+v", l)
	}
	if lines[1].Outcome != string(brain.CodeUnknownWing) || lines[1].Wing != "nope" {
		t.Fatalf("audit line %+v", lines[1])
	}
	// Every log line about the call carries email and request id.
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, `"tool call refused"`) && (!strings.Contains(line, `"email":"alice@acme.com"`) || !strings.Contains(line, `"request_id":"`+lines[1].RequestID+`"`)) {
			t.Fatalf("log line without email/request id: %s", line)
		}
	}

	get := func(path string) (int, string) {
		rec := &responseRecorder{header: http.Header{}}
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		e.gw.AdminHandler().ServeHTTP(rec, req)
		return rec.status(), rec.body.String()
	}
	code, body := get("/metrics")
	for _, want := range []string{
		`brainstem_gateway_tool_calls_total{outcome="ok",tool="brain_get",wing="payments"} 1`,
		`brainstem_gateway_tool_calls_total{outcome="unknown_wing",tool="brain_get",wing="unknown"} 1`,
		`brainstem_gateway_mints_total{outcome="ok",wing="payments"} 1`,
		`brainstem_gateway_shard_reached{wing="payments"} 1`,
		`brainstem_gateway_sessions 1`,
		`brainstem_gateway_session_cache_misses_total 1`,
		`brainstem_gateway_tool_call_duration_seconds_bucket{tool="brain_get",wing="payments",le="+Inf"} 1`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("healthz %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "{\"ready\":true,\"unreached_wings\":[],\"mint_refused_wings\":[]}\n" {
		t.Fatalf("readyz %d %q", code, body)
	}
}

// TestReadyzUnreached: a wing whose shard never answered keeps /readyz at
// 503 naming it, while the other wings work; brain_wings does not name it
// to a caller who never held a grant there (least disclosure).
func TestReadyzUnreached(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen}, func(c *config.Config, _ *Options) {
		c.Wings = append(c.Wings, config.WingConfig{Name: "ghost", Address: "127.0.0.1:1", ServerName: "localhost"})
		c.Shards.CallTimeout = 300 * time.Millisecond
	})
	rec := &responseRecorder{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
	e.gw.AdminHandler().ServeHTTP(rec, req)
	if rec.status() != 503 || !strings.Contains(rec.body.String(), `"unreached_wings":["ghost"]`) {
		t.Fatalf("readyz %d %s", rec.status(), rec.body.String())
	}
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	if text, isErr := call(t, c, "brain_wings", `{}`); isErr || !strings.Contains(text, `"wing":"payments"`) || strings.Contains(text, "ghost") {
		t.Fatalf("brain_wings with a dead wing: %s", text)
	}
}

type responseRecorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *responseRecorder) Header() http.Header { return r.header }
func (r *responseRecorder) WriteHeader(c int) {
	if r.code == 0 {
		r.code = c
	}
}
func (r *responseRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return r.body.Write(b)
}
func (r *responseRecorder) status() int {
	if r.code == 0 {
		return 200
	}
	return r.code
}

var _ io.Writer = (*responseRecorder)(nil)
