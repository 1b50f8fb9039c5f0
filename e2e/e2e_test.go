package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/stdio"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

func startEnv(t testing.TB) *devenv.Env {
	t.Helper()
	// The per-user rate limit is the gateway's own tests' business; these
	// tests make many calls as one user in a fraction of a second.
	return devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
	}})
}

func httpClient(t testing.TB, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return initialize(t, c)
}

func initialize(t testing.TB, c *client.Client) *client.Client {
	t.Helper()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "brainstem-e2e", Version: "0"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// stdioClient serves wing of brain over the shard's stdio MCP mode on
// in-memory pipes and connects mcp-go's client to it.
func stdioClient(t testing.TB, brain, wing, email string) *client.Client {
	t.Helper()
	key, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := shard.Open(context.Background(), shard.Config{Brain: brain, Wing: wing, Key: key, StateDir: t.TempDir(),
		History: store.HistoryOptions{Off: true}}) // a second reader of a wing the dev shard serves
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	cin, sin := io.Pipe()
	sout, cout := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- stdio.Serve(ctx, svc.Tools(), tools.Caller{Email: email, Caps: stdio.AllCaps}, cin, cout, nil)
		cout.Close()
	}()
	c := client.NewClient(transport.NewIO(sout, sin, io.NopCloser(strings.NewReader(""))), client.WithProtocolVersion(mcp.ProtocolVersion20250618))
	t.Cleanup(func() {
		sin.Close()
		<-done
		cancel()
	})
	return initialize(t, c)
}

func call(t testing.TB, c *client.Client, tool, args string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", tool, len(res.Content))
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

// TestByteForByte: the same wing-scoped call through the gateway and through
// the shard's stdio MCP mode yields identical bytes (and so identical
// content hashes).
func TestByteForByte(t *testing.T) {
	env := startEnv(t)
	tok, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := httpClient(t, env.MCPURL, tok)
	local := stdioClient(t, env.BrainDir, "payments", "alice@example.com")

	listText, _ := call(t, gw, "brain_list", `{"wing":"payments","limit":200}`)
	var list struct {
		Notes []struct{ ID string } `json:"notes"`
	}
	if err := json.Unmarshal([]byte(listText), &list); err != nil || len(list.Notes) < 10 {
		t.Fatalf("brain_list: %v %s", err, listText)
	}
	calls := [][2]string{
		{"brain_list", `{"wing":"payments","limit":200}`},
		{"brain_list", `{"wing":"payments","hall":"decisions","limit":3}`},
		{"brain_query", `{"wing":"payments","query":"idempotency retry ledger"}`},
		{"brain_query", `{"wing":"payments","query":"chargeback","hall":"facts","limit":3}`},
		{"brain_pending", `{"wing":"payments"}`},
		{"brain_get", `{"id":"payments/facts/does-not-exist"}`},
		{"brain_query", `{"wing":"payments","query":""}`},
	}
	for _, n := range list.Notes {
		calls = append(calls, [2]string{"brain_get", `{"id":"` + n.ID + `"}`}, [2]string{"brain_links", `{"id":"` + n.ID + `"}`})
	}
	for _, c := range calls {
		viaGateway, gErr := call(t, gw, c[0], c[1])
		viaStdio, sErr := call(t, local, c[0], c[1])
		if viaGateway != viaStdio || gErr != sErr {
			t.Errorf("%s %s differs:\ngateway (isError=%v): %s\nstdio   (isError=%v): %s", c[0], c[1], gErr, viaGateway, sErr, viaStdio)
		}
	}
}

type hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// TestCrossWingRankingEqualsUnion: a query without a wing, answered by three
// shards and merged by the gateway, ranks and scores exactly like one index
// built over the union of the three wings: on the sample brain, and on a
// heavy-tailed corpus with notes of megabytes (crossWingHeavy).
func TestCrossWingRankingEqualsUnion(t *testing.T) {
	t.Run("corpus=sample", crossWingSample)
	t.Run("corpus=heavy", crossWingHeavy)
}

func crossWingSample(t *testing.T) {
	env := startEnv(t)
	tok, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := httpClient(t, env.MCPURL, tok)

	// One wing "union" holding every note of the three wings under a new slug.
	union, toOriginal := writeSampleUnion(t, env.BrainDir)
	key, _ := auth.GenerateKey()
	svc, err := shard.Open(context.Background(), shard.Config{Brain: union, Wing: "union", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	reader := tools.Caller{Email: "alice@example.com", Caps: brain.CapRead}

	for _, q := range []string{"incident", "retry latency", "on-call compensation policy", "idempotency keys ledger", "kubernetes upgrade", "onboarding"} {
		args, _ := json.Marshal(map[string]any{"query": q, "scope": "wiki", "limit": 50})
		mergedText, isErr := call(t, gw, "brain_query", string(args))
		if isErr {
			t.Fatalf("%q: %s", q, mergedText)
		}
		var merged struct {
			Hits        []hit    `json:"hits"`
			Wings       []string `json:"wings"`
			Unavailable []any    `json:"unavailable"`
		}
		if err := json.Unmarshal([]byte(mergedText), &merged); err != nil {
			t.Fatal(err)
		}
		if len(merged.Wings) != 3 || len(merged.Unavailable) != 0 {
			t.Fatalf("%q answered by %v, unavailable %v", q, merged.Wings, merged.Unavailable)
		}
		unionText, isErr := svc.Tools().Call(context.Background(), reader, "brain_query", args)
		if isErr {
			t.Fatalf("union %q: %s", q, unionText)
		}
		var one struct {
			Hits []hit `json:"hits"`
		}
		if err := json.Unmarshal(unionText, &one); err != nil {
			t.Fatal(err)
		}
		for i := range one.Hits {
			one.Hits[i].ID = toOriginal[one.Hits[i].ID]
		}
		if len(merged.Hits) == 0 {
			t.Fatalf("%q: no hits", q)
		}
		t.Logf("%q: %d merged hits from %v, top %s %.4f", q, len(merged.Hits), merged.Wings, merged.Hits[0].ID, merged.Hits[0].Score)
		compareRankings(t, q, merged.Hits, one.Hits, 50)
	}
}

// compareRankings checks two rankings agree (see rankingsDiffer).
func compareRankings(t *testing.T, q string, got, want []hit, limit int) {
	t.Helper()
	if err := rankingsDiffer(got, want, limit); err != nil {
		t.Errorf("%q: %v", q, err)
	}
}

// rankingsDiffer reports how two rankings differ: they must have the same
// ids with the same scores (1e-9 relative), in the same order except
// within exact ties; a tie group cut by the limit is compared only above
// the cut.
func rankingsDiffer(got, want []hit, limit int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d merged hits, %d in the union index", len(got), len(want))
	}
	cut := math.Inf(-1)
	if len(got) == limit {
		cut = want[len(want)-1].Score
	}
	norm := func(hs []hit) []hit {
		out := []hit{}
		for _, h := range hs {
			if h.Score > cut*(1+1e-9) || math.IsInf(cut, -1) {
				out = append(out, h)
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			if d := out[i].Score - out[j].Score; math.Abs(d) > 1e-9*math.Max(1, math.Abs(out[i].Score)) {
				return d > 0
			}
			return out[i].ID < out[j].ID
		})
		return out
	}
	g, w := norm(got), norm(want)
	if len(g) != len(w) {
		return fmt.Errorf("%d vs %d hits above the cut", len(g), len(w))
	}
	for i := range g {
		if g[i].ID != w[i].ID || math.Abs(g[i].Score-w[i].Score) > 1e-9*math.Max(1, math.Abs(w[i].Score)) {
			return fmt.Errorf("rank %d: merged %s %.12f, union %s %.12f", i, g[i].ID, g[i].Score, w[i].ID, w[i].Score)
		}
	}
	// The merged list itself must be in score order.
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score {
			return fmt.Errorf("merged hits out of order at %d", i)
		}
	}
	return nil
}
