package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/stdio"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// The tool contract's conformance suite, in the style of dex's storage
// conformance: every tool a wing serves, and a tool declared only here,
// is held to its one spec on each path a call can take — the shard's
// stdio MCP mode, the shard over brainstem/1, and the gateway. The paths
// must agree byte for byte on every refusal the spec derives (unknown,
// mistyped and missing arguments), the gateway must route by the spec's
// routing arguments and treat the tool as the spec says (a write carries
// an idempotency key), and the shard must decode a call once.

// echoArgs are the arguments of the test-only tool.
type echoArgs struct {
	Target string `json:"target"`
	Times  int    `json:"times"`
	tools.WingArg
	tools.KeyArg
}

// echoTool is declared here and nowhere else: a write tool routed by a
// note reference, answering which wing served it. keys records the
// idempotency key each call carried beside its arguments.
func echoTool(wing string, keys *sync.Map) tools.Tool {
	spec := &toolspec.Spec{
		Name: "test_echo", Title: "Echo", Needs: brain.CapWrite,
		Description: "Echoes its target (a test of the tool contract).",
		Args: []toolspec.Arg{
			{Name: "target", Type: toolspec.String, Required: true, Route: toolspec.RouteRef, MaxBytes: 64, Desc: "A note id."},
			{Name: "times", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(3), Default: 1, Desc: "How many times."},
			{Name: "wing", Type: toolspec.String, Route: toolspec.RouteWing, Desc: "The wing."},
			{Name: brain.IdempotencyKeyArg, Type: toolspec.String, Desc: "A key."},
		},
	}
	return tools.Define(spec, func(_ context.Context, c tools.Caller, a *echoArgs) (any, error) {
		keys.Store(wing+" "+a.Target, c.IdempotencyKey)
		return map[string]any{"wing": wing, "target": strings.Repeat(a.Target, a.Times)}, nil
	})
}

// path is one way a call reaches a wing's tools.
type path struct {
	name string
	list func(t *testing.T) map[string]json.RawMessage // descriptors by name
	call func(t *testing.T, tool, args string) (string, bool)
}

func TestToolConformance(t *testing.T) {
	var keys sync.Map
	env := devenvtest.Start(t, devenv.Config{
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 },
		Shard:   func(c *shard.Config) { c.Tools = append(c.Tools, echoTool(c.Wing, &keys)) },
	})
	const wing = "payments"
	paths := []path{stdioPath(t, env.BrainDir, wing, &keys), shardPath(t, env, wing), gatewayPath(t, env)}

	want := paths[1].list(t)
	if _, ok := want["test_echo"]; !ok || len(want) < 11 {
		t.Fatalf("the shard serves %d tools, without the test tool", len(want))
	}
	for _, p := range paths {
		got := p.list(t)
		for name, d := range want {
			if !sameJSONFields(t, got[name], d, "name", "description", "inputSchema", "outputSchema", "_meta") {
				t.Errorf("%s: %s is described otherwise:\n%s\nwant\n%s", p.name, name, got[name], d)
			}
		}
	}
	cases := 0
	for name, d := range want {
		for _, args := range refusals(t, d) {
			cases++
			var first string
			for i, p := range paths {
				text, isErr := p.call(t, name, args)
				if !isErr {
					t.Errorf("%s %s %s: accepted: %s", p.name, name, args, text)
				}
				if i == 0 {
					first = text
				} else if text != first {
					t.Errorf("%s %s: %s answers\n%s\n%s answers\n%s", name, args, paths[0].name, first, p.name, text)
				}
			}
		}
	}
	if cases < 60 {
		t.Fatalf("only %d refusal cases", cases)
	}
	checkTestTool(t, env, paths, &keys)
}

// checkTestTool: the tool declared here is served, validated and routed
// like the brain tools, with no other file knowing it.
func checkTestTool(t *testing.T, env *devenv.Env, paths []path, keys *sync.Map) {
	const args = `{"target":"payments/facts/x","times":2,"wing":"payments"}`
	var first string
	for i, p := range paths {
		text, isErr := p.call(t, "test_echo", args)
		if isErr || (i > 0 && text != first) {
			t.Fatalf("%s: test_echo = %v %s (first path: %s)", p.name, isErr, text, first)
		}
		first = text
	}
	if first != `{"target":"payments/facts/xpayments/facts/x","wing":"payments"}` {
		t.Fatalf("test_echo = %s", first)
	}
	gw := paths[2]
	// Routed by its note reference, which names another wing.
	if text, _ := gw.call(t, "test_echo", `{"target":"platform/decisions/y"}`); !strings.Contains(text, `"wing":"platform"`) {
		t.Fatalf("the gateway did not route by target: %s", text)
	}
	// A write: the gateway sends an idempotency key; stdio does not.
	if k, _ := keys.Load("platform platform/decisions/y"); !strings.HasPrefix(fmt.Sprint(k), "gw-") {
		t.Errorf("the gateway sent key %q with a write tool", k)
	}
	// No routing argument: refused by the gateway as for any tool.
	if text, isErr := gw.call(t, "test_echo", `{"times":1}`); !isErr || !strings.Contains(text, `"invalid_argument"`) {
		t.Errorf("unroutable call = %s", text)
	}
	// One decode of the arguments per call on the shard.
	set := shardTools(t, env.BrainDir, "payments", keys)
	before := specOf(set, "test_echo").Decodes()
	if _, isErr := set.Call(context.Background(), tools.Caller{Email: "a@example.com", Caps: brain.CapCurate}, "test_echo", []byte(args)); isErr {
		t.Fatal("direct call refused")
	}
	if n := specOf(set, "test_echo").Decodes() - before; n != 1 {
		t.Errorf("the shard decoded one call's arguments %d times", n)
	}
}

func specOf(set *tools.Set, name string) *toolspec.Spec {
	for _, s := range set.Specs() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// refusals derives, from a tool's published schema, calls every path must
// refuse alike: an unknown argument, each argument of the wrong type, and
// each required one missing. Each names the wing, so the gateway routes it.
func refusals(t *testing.T, desc json.RawMessage) []string {
	var d struct {
		InputSchema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"inputSchema"`
	}
	if err := json.Unmarshal(desc, &d); err != nil {
		t.Fatal(err)
	}
	wrong := map[string]string{"string": `7`, "integer": `"x"`, "boolean": `"yes"`, "array": `{}`, "object": `"x"`}
	out := []string{`{"wing":"payments","zz_unknown":1}`, `{"wing":"payments","WING":"payments"}`}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range d.InputSchema.Properties {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if n != "wing" {
			out = append(out, fmt.Sprintf(`{"wing":"payments",%q:%s}`, n, wrong[d.InputSchema.Properties[n].Type]))
		}
	}
	if len(d.InputSchema.Required) > 0 {
		out = append(out, `{"wing":"payments"}`)
	}
	return out
}

func sameJSONFields(t *testing.T, a, b json.RawMessage, fields ...string) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, f := range fields {
		xa, _ := json.Marshal(x[f])
		ya, _ := json.Marshal(y[f])
		if string(xa) != string(ya) {
			t.Logf("field %s: %s vs %s", f, xa, ya)
			return false
		}
	}
	return true
}

// shardTools opens a second service over the wing (reads only, and the
// stateless test tool), with the test tool.
func shardTools(t *testing.T, brainDir, wing string, keys *sync.Map) *tools.Set {
	t.Helper()
	key, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := shard.Open(context.Background(), shard.Config{Brain: brainDir, Wing: wing, Key: key, StateDir: t.TempDir(),
		Tools: []tools.Tool{echoTool(wing, keys)}, History: store.HistoryOptions{Off: true}}) // a second reader of the wing
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc.Tools()
}

func stdioPath(t *testing.T, brainDir, wing string, keys *sync.Map) path {
	set := shardTools(t, brainDir, wing, keys)
	ctx, cancel := context.WithCancel(context.Background())
	cin, sin := io.Pipe()
	sout, cout := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- stdio.Serve(ctx, set, tools.Caller{Email: "alice@example.com", Caps: stdio.AllCaps}, cin, cout, nil)
		cout.Close()
	}()
	c := initialize(t, client.NewClient(transport.NewIO(sout, sin, io.NopCloser(strings.NewReader(""))), client.WithProtocolVersion(mcp.ProtocolVersion20250618)))
	t.Cleanup(func() {
		sin.Close()
		<-done
		cancel()
	})
	return path{name: "stdio", list: func(t *testing.T) map[string]json.RawMessage { return rawList(t, c) },
		call: func(t *testing.T, tool, args string) (string, bool) { return call(t, c, tool, args) }}
}

func shardPath(t *testing.T, env *devenv.Env, wing string) path {
	pc, err := env.DialShard(wing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	_, exp, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	minted, err := pc.Mint(context.Background(), &proto.MintRequest{Email: "alice@example.com", NotAfter: exp})
	if err != nil {
		t.Fatal(err)
	}
	return path{name: "shard",
		list: func(t *testing.T) map[string]json.RawMessage {
			resp, err := pc.ListTools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return byName(t, resp.Tools)
		},
		call: func(t *testing.T, tool, args string) (string, bool) {
			resp, err := pc.Call(context.Background(), &proto.CallRequest{Token: minted.Token, Tool: tool, Args: []byte(args)})
			if err != nil {
				t.Fatalf("shard %s: %v", tool, err)
			}
			return string(resp.Result), resp.IsError
		}}
}

func gatewayPath(t *testing.T, env *devenv.Env) path {
	tok, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := httpClient(t, env.MCPURL, tok)
	legacy := initialize(t, client.NewClient(mustTransport(t, env.MCPURL, tok), client.WithProtocolVersion(mcp.ProtocolVersion20250618)))
	return path{name: "gateway", list: func(t *testing.T) map[string]json.RawMessage { return rawList(t, legacy) },
		call: func(t *testing.T, tool, args string) (string, bool) { return call(t, c, tool, args) }}
}

func mustTransport(t *testing.T, url, token string) *transport.StreamableHTTP {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// rawList is tools/list as the server wrote it (mcp-go's ListTools drops
// schema keywords it does not know).
func rawList(t *testing.T, c *client.Client) map[string]json.RawMessage {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		t.Fatal(err)
	}
	return byName(t, r.Tools)
}

func byName(t *testing.T, list json.RawMessage) map[string]json.RawMessage {
	var ds []json.RawMessage
	if err := json.Unmarshal(list, &ds); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for _, d := range ds {
		var n struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(d, &n)
		out[n.Name] = d
	}
	return out
}
