package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/config"
)

// TestClientGoneCancelsShardCall (issue 34): when the agent's client goes
// away in the middle of a call, the gateway's call to the shard ends, and
// with it the context of the shard's handler, long before the call
// timeout (an hour here): a shard does not work on for nobody.
func TestClientGoneCancelsShardCall(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen}, func(c *config.Config, _ *Options) {
		c.Shards.CallTimeout = time.Hour
	})
	w := e.wings["payments"]
	w.addNote("payments/f/x", "hello", "a@acme.com")
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	call(t, c, "brain_get", `{"id":"payments/f/x"}`) // mints
	entered, released := w.holdNextReleased("brain_get")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_get", Arguments: json.RawMessage(`{"id":"payments/f/x"}`)}})
		done <- err
	}()
	<-entered
	cancel() // the client gives up: its request's connection closes
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's call: %v, want context.Canceled", err)
	}
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("the shard's handler still runs 30 s after the client went away")
	}
}
