package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// startServer runs a real mcp-go Streamable HTTP server with an echo tool
// that records which bearer token each call carried.
func startServer(t *testing.T) (url string, seen func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	tokens := map[string]int{}
	s := server.NewMCPServer("loadgen-test", "0")
	s.AddTool(mcp.NewToolWithRawSchema("echo", "echo", json.RawMessage(`{"type":"object"}`)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			tokens[req.Header.Get("Authorization")]++
			mu.Unlock()
			if strings.Contains(string(req.Params.RawArguments), "slow") {
				time.Sleep(3 * time.Millisecond) // a slow endpoint, not a wait for a state
			}
			if strings.Contains(string(req.Params.RawArguments), "fail") {
				return mcp.NewToolResultError("asked to fail"), nil
			}
			return mcp.NewToolResultText(string(req.Params.RawArguments)), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range tokens {
			out[k] = v
		}
		return out
	}
}

func TestRun(t *testing.T) {
	url, seen := startServer(t)
	for _, legacy := range []bool{false, true} {
		r, err := Run(context.Background(), Config{URL: url, Tokens: []string{"t1", "t2"}, Clients: 4,
			Duration: 300 * time.Millisecond, Tool: "echo", Arguments: json.RawMessage(`{"a":1}`), Legacy: legacy})
		if err != nil {
			t.Fatal(err)
		}
		if r.Calls == 0 || r.Errors != 0 || r.ToolErrors != 0 || r.P50 <= 0 || r.P50 > r.P99 || r.P99 > r.Max || r.CallsPerSecond <= 0 {
			t.Fatalf("legacy=%v: %+v", legacy, r)
		}
		if !strings.Contains(r.String(), "calls/s") {
			t.Fatal(r.String())
		}
	}
	got := seen()
	if got["Bearer t1"] == 0 || got["Bearer t2"] == 0 || len(got) != 2 {
		t.Fatalf("tokens seen by the server: %v", got)
	}
	r, err := Run(context.Background(), Config{URL: url, Tokens: []string{"t"}, Duration: 100 * time.Millisecond, Tool: "echo", Arguments: json.RawMessage(`{"fail":true}`)})
	if err != nil || r.ToolErrors == 0 || r.ToolErrors != r.Calls {
		t.Fatalf("tool errors: %v %+v", err, r)
	}
	r, err = Run(context.Background(), Config{URL: url, Tokens: []string{"t"}, Duration: 100 * time.Millisecond, Tool: "nope"})
	if err != nil || r.Errors == 0 || r.FirstError == "" {
		t.Fatalf("unknown tool: %v %+v", err, r)
	}
}

// TestRunPaced: with a rate, the clients keep to the schedule, which
// bounds the number of calls from above whatever the machine's speed:
// slots start at 0, 1/rate, 2/rate… and none starts at or after the end.
func TestRunPaced(t *testing.T) {
	url, _ := startServer(t)
	const rate, clients = 200.0, 4
	d := 250 * time.Millisecond
	r, err := Run(context.Background(), Config{URL: url, Tokens: []string{"t"}, Clients: clients,
		Duration: d, Tool: "echo", Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	most := int64(rate * d.Seconds()) // slots in [0, d)
	if r.Calls == 0 || r.Calls > most || r.Errors != 0 || r.P50 <= 0 || r.P50 > r.P99 {
		t.Fatalf("paced run: %+v, want 1..%d calls and no errors", r, most)
	}
	if r.Behind > r.Calls {
		t.Fatalf("behind %d of %d calls", r.Behind, r.Calls)
	}

	// Past what the endpoint answers: one client, a slot every microsecond,
	// each answer taking over 3 ms. Every call after the first starts while
	// its slot is more than behindSlack gone.
	r, err = Run(context.Background(), Config{URL: url, Tokens: []string{"t"}, Clients: 1,
		Duration: 100 * time.Millisecond, Tool: "echo", Arguments: json.RawMessage(`{"slow":true}`), Rate: MaxRate})
	if err != nil {
		t.Fatal(err)
	}
	if r.Calls < 2 || r.Behind != r.Calls-1 || !strings.Contains(r.String(), "behind schedule") {
		t.Fatalf("saturated paced run: %+v (%s), want every call but the first behind", r, r)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		has  []string
	}{
		{"empty", Config{}, []string{"URL", "token", "tool"}},
		{"too many clients", Config{URL: "http://x/mcp", Tokens: []string{"t"}, Tool: "x", Clients: MaxClients + 1}, []string{"clients"}},
		{"negative duration", Config{URL: "http://x/mcp", Tokens: []string{"t"}, Tool: "x", Duration: -time.Second}, []string{"duration"}},
		{"args not an object", Config{URL: "http://x/mcp", Tokens: []string{"t"}, Tool: "x", Arguments: json.RawMessage(`[1]`)}, []string{"JSON object"}},
		{"negative rate", Config{URL: "http://x/mcp", Tokens: []string{"t"}, Tool: "x", Rate: -1}, []string{"rate"}},
		{"rate too high", Config{URL: "http://x/mcp", Tokens: []string{"t"}, Tool: "x", Rate: MaxRate * 2}, []string{"rate"}},
		{"rate not a number", Config{URL: "http://x/mcp", Tokens: []string{"t"}, Tool: "x", Rate: math.NaN()}, []string{"rate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cfg)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v", err)
			}
			for _, h := range tc.has {
				if !strings.Contains(err.Error(), h) {
					t.Errorf("%v lacks %q", err, h)
				}
			}
		})
	}
	// An unreachable endpoint fails at connect, naming the client.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	if _, err := Run(context.Background(), Config{URL: srv.URL + "/mcp", Tokens: []string{"t"}, Tool: "x", Duration: time.Second}); err == nil || !strings.Contains(err.Error(), "client 0") {
		t.Fatalf("unreachable: %v", err)
	}
}
