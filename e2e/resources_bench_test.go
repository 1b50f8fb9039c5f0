package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkResources measures, with real shards on loopback and one
// 2026-07-28 client, resources/read against brain_get of the same note
// and resources/list (the first page: every wing, 68 notes) against
// brain_list of one wing (23 notes), through the gateway in the same run.
// Run with -benchmem.
func BenchmarkResources(b *testing.B) {
	env := startEnv(b)
	c := httpClient(b, env.MCPURL, token(b, env, "alice@example.com"))
	ctx := context.Background()
	const id = "payments/decisions/use-idempotency-keys"
	tool := func(name, args string) func(*testing.B) {
		return func(b *testing.B) {
			req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)}}
			for b.Loop() {
				res, err := c.CallTool(ctx, req)
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %v", name, err, res)
				}
			}
		}
	}
	b.Run("tool=brain_get", tool("brain_get", `{"id":"`+id+`"}`))
	b.Run("method=resources/read", func(b *testing.B) {
		for b.Loop() {
			if _, err := readResource(ctx, c, "brain://"+id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tool=brain_list", tool("brain_list", `{"wing":"payments","limit":100}`))
	b.Run("method=resources/list", func(b *testing.B) {
		for b.Loop() {
			res, err := c.ListResourcesByPage(ctx, mcp.ListResourcesRequest{})
			if err != nil || len(res.Resources) == 0 {
				b.Fatal(err)
			}
		}
	})
}
