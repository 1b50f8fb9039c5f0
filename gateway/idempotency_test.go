package gateway

import (
	"regexp"
	"testing"

	"github.com/brainstem/brainstem/auth"
)

var gatewayKey = regexp.MustCompile(`^gw-[0-9a-f]{32}$`)

// TestWriteCallsCarryAnIdempotencyKey: over real QUIC, through both MCP
// eras, the gateway sends an idempotency key beside the arguments of every
// call of a write or curate tool (by the capability in the tool's
// descriptor) and of no read tool: the agent's idempotency_key when given,
// else a fresh random one per call. A call the gateway retries (here: a
// cached token refused after the shard's key changed, then a re-mint)
// carries the same key every time, and the arguments go through byte for
// byte.
func TestWriteCallsCarryAnIdempotencyKey(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "stateless"
		if legacy {
			name = "session"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": {Readers: []string{"*"}, Curators: []string{"*"}}})
			w := e.wings["payments"]
			c := e.client(t, e.idp.token(t, "alice@acme.com"), legacy)
			w.addNote("payments/f/x", "hello", "a@acme.com")
			calls := []struct {
				tool, args string
				key        string // "": none; "gw": a gateway key; else exactly this
			}{
				{"brain_get", `{"id":"payments/f/x"}`, ""},
				{"brain_write", `{"id":"payments/f/a","body":"one"}`, "gw"},
				{"brain_write", `{"id":"payments/f/b","body":"two"}`, "gw"},
				{"brain_write", `{"id":"payments/f/c","body":"three","idempotency_key":"agent-key.1"}`, "agent-key.1"},
				{"brain_promote", `{"wing":"payments"}`, "gw"},
				{"brain_query", `{"wing":"payments","query":"hello"}`, ""},
			}
			before := len(w.seenCalls())
			for _, cl := range calls {
				if text, isErr := call(t, c, cl.tool, cl.args); isErr {
					t.Fatalf("%s: %s", cl.tool, text)
				}
			}
			seen := w.seenCalls()[before:]
			if len(seen) != len(calls) {
				t.Fatalf("%d calls reached the shard, want %d", len(seen), len(calls))
			}
			keys := map[string]bool{}
			for i, cl := range calls {
				got := seen[i]
				if string(got.args) != cl.args {
					t.Errorf("%s: arguments %s reached the shard, sent %s", cl.tool, got.args, cl.args)
				}
				switch cl.key {
				case "":
					if got.key != "" {
						t.Errorf("%s (read) carried key %q", cl.tool, got.key)
					}
				case "gw":
					if !gatewayKey.MatchString(got.key) || keys[got.key] {
						t.Errorf("%s carried %q, want a fresh gw-<32 hex> key", cl.tool, got.key)
					}
				default:
					if got.key != cl.key {
						t.Errorf("%s carried %q, want the agent's %q", cl.tool, got.key, cl.key)
					}
				}
				keys[got.key] = true
			}

			// A retried call keeps its key.
			w.rotateKey(t)
			before = len(w.seenCalls())
			if text, isErr := call(t, c, "brain_write", `{"id":"payments/f/d","body":"four"}`); isErr {
				t.Fatalf("write after the key change: %s", text)
			}
			seen = w.seenCalls()[before:]
			if len(seen) != 2 || seen[0].key != seen[1].key || !gatewayKey.MatchString(seen[0].key) {
				t.Fatalf("the retried write reached the shard as %+v, want twice with one gateway key", seen)
			}
		})
	}
}
