package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/proto"
)

// BenchmarkGatewayOverhead measures brain_get of one sample note with real
// shards on loopback: straight to the shard over brainstem/1 (the baseline,
// with a shard token minted once) and through the gateway over MCP
// Streamable HTTP (SSO verification, session cache, routing, forwarding).
// Reported per mode and concurrency: p50/p99 latency and calls/s; the
// difference of the two p50s is the gateway's added latency.
func BenchmarkGatewayOverhead(b *testing.B) {
	env := startEnv(b) // the rate limit is lifted: measure the path, not the limiter
	tok, exp, err := env.Token("alice@example.com", nil)
	if err != nil {
		b.Fatal(err)
	}
	const id = "payments/decisions/use-idempotency-keys"
	args := json.RawMessage(`{"id":"` + id + `"}`)

	direct, err := env.DialShard("payments")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	minted, err := direct.Mint(context.Background(), &proto.MintRequest{Email: "alice@example.com", NotAfter: exp})
	if err != nil {
		b.Fatal(err)
	}

	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("direct/clients=%d", clients), func(b *testing.B) {
			run(b, clients, func(int) func() error {
				return func() error {
					resp, err := direct.Call(context.Background(), &proto.CallRequest{Token: minted.Token, Tool: "brain_get", Args: args})
					if err == nil && resp.IsError {
						err = fmt.Errorf("tool error: %s", resp.Result)
					}
					return err
				}
			})
		})
		b.Run(fmt.Sprintf("gateway/clients=%d", clients), func(b *testing.B) {
			cs := make([]*client.Client, clients)
			for i := range cs {
				cs[i] = httpClient(b, env.MCPURL, tok)
			}
			run(b, clients, func(i int) func() error {
				c := cs[i]
				return func() error {
					res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_get", Arguments: args}})
					if err == nil && res.IsError {
						err = fmt.Errorf("tool error: %v", res.Content)
					}
					return err
				}
			})
		})
	}
}

// drive makes calls calls over n workers (mk(w) makes worker w's call),
// and returns each worker's latencies, the time they all took and the
// first error, after which a worker stops.
func drive(calls, n int, mk func(worker int) func() error) ([][]time.Duration, time.Duration, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, n)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			do := mk(w)
			for next.Add(1) <= int64(calls) {
				t0 := time.Now()
				if err := do(); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	err, _ := failed.Load().(error)
	return lat, time.Since(start), err
}

// run spreads b.N calls over n workers (each built by mk(worker)) and
// reports latency percentiles and throughput.
func run(b *testing.B, n int, mk func(worker int) func() error) {
	b.Helper()
	b.ResetTimer()
	lat, elapsed, err := drive(b.N, n, mk)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
}
