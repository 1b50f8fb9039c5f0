package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/rawmcp"
)

// crossBrain is one brain served twice through the whole product (dev
// identity provider, gateway, real shards over QUIC): split over three
// wings, and as one wing holding the same notes. It is what the cross-wing
// benchmarks compare.
type crossBrain struct {
	three, one *devenv.Env
	oneWing    string                 // the one wing's name
	getID      string                 // a note of median size, on the one wing
	queries    []string               // 1, 2 and 3 terms, in turn
	toThree    func(id string) string // an id of the one wing → the same note in three
	session    bool                   // clients speak 2025-06-18 with a session, else 2026-07-28
	raw        bool                   // clients are rawmcp's, else mcp-go's
}

// revisions are the two MCP eras the cross-wing benchmarks run under: the
// stateless revision (mcp-go's client default) and the session revision.
var revisions = []struct {
	name    string
	session bool
}{{"stateless", false}, {"session", true}}

// eachRevision runs bench once per MCP era and client, as
// rev=stateless|session/client=mcp-go|raw, on the same brains: mcp-go's
// client is what agents run; rawmcp's costs a fraction of its CPU, so on
// two shared cores it shows the servers' own difference.
func eachRevision(b *testing.B, cb *crossBrain, bench func(*testing.B, *crossBrain)) {
	for _, rev := range revisions {
		for _, raw := range []bool{false, true} {
			name := "rev=" + rev.name + "/client=mcp-go"
			if raw {
				name = "rev=" + rev.name + "/client=raw"
			}
			b.Run(name, func(b *testing.B) {
				c := *cb
				c.session, c.raw = rev.session, raw
				bench(b, &c)
			})
		}
	}
}

// benchCaller calls one tool and returns its answer's text when asked for
// it; a tool error is an error.
type benchCaller func(tool, args string, text bool) (string, error)

// benchCrossLatency is one client calling, in turn, brain_get of the
// median note, brain_query (limit 10) on the one wing, and the same query
// across the three wings, so the three see the same machine. Reported: each
// p50 and p99, and the ratios query/get and cross/one. Every cross-wing
// ranking (ids, scores, total) is checked against the one-wing answer.
func benchCrossLatency(b *testing.B, cb *crossBrain) {
	c3, c1 := cb.client(b, cb.three), cb.client(b, cb.one)
	getArgs := fmt.Sprintf(`{"id":%q}`, cb.getID)
	do := func(c benchCaller, tool, args string) (string, time.Duration) {
		t0 := time.Now()
		text, err := c(tool, args, true)
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("%s %s: %v", tool, args, err)
		}
		return text, d
	}
	// Warm up every path (mints, connections, caches) before timing. Every
	// query runs once, so the timed rounds see the gateway's replica of the
	// wings' statistics filled, as a read-mostly brain does; the warm-up's
	// cross-wing latencies are the cold ones (a statistics round trip).
	var cold []time.Duration
	for _, q := range cb.queries {
		do(c1, "brain_get", getArgs)
		do(c1, search.Tool, cb.queryArgs(q, cb.oneWing))
		_, d := do(c3, search.Tool, cb.queryArgs(q, ""))
		cold = append(cold, d)
	}
	var get, qOne, qCross []time.Duration
	checked, mismatches := 0, 0
	i := 0
	b.ResetTimer()
	for b.Loop() {
		q := cb.queries[i%len(cb.queries)]
		_, d := do(c1, "brain_get", getArgs)
		get = append(get, d)
		oneText, d := do(c1, search.Tool, cb.queryArgs(q, cb.oneWing))
		qOne = append(qOne, d)
		crossText, d := do(c3, search.Tool, cb.queryArgs(q, ""))
		qCross = append(qCross, d)
		if i < len(cb.queries) {
			a, o := decodeAnswer(b, crossText), decodeAnswer(b, oneText)
			for k := range o.Hits {
				o.Hits[k].ID = cb.toThree(o.Hits[k].ID)
			}
			checked++
			if err := rankingsDiffer(a.Hits, o.Hits, 10); err != nil || a.Total != o.Total {
				mismatches++
				b.Logf("%q: %v; totals %d and %d", q, err, a.Total, o.Total)
			}
		}
		i++
	}
	b.StopTimer()
	if mismatches > 0 {
		b.Fatalf("%d of %d cross-wing rankings differ from the one-wing ranking", mismatches, checked)
	}
	p := func(lat []time.Duration, q float64) float64 {
		s := slices.Sorted(slices.Values(lat))
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Nanoseconds())
	}
	b.ReportMetric(p(get, 0.5), "get-p50-ns")
	b.ReportMetric(p(qOne, 0.5), "one-p50-ns")
	b.ReportMetric(p(qCross, 0.5), "cross-p50-ns")
	b.ReportMetric(p(cold, 0.5), "cross-cold-p50-ns")
	b.ReportMetric(p(get, 0.99), "get-p99-ns")
	b.ReportMetric(p(qOne, 0.99), "one-p99-ns")
	b.ReportMetric(p(qCross, 0.99), "cross-p99-ns")
	b.ReportMetric(p(qOne, 0.5)/p(get, 0.5), "one/get")
	b.ReportMetric(p(qCross, 0.5)/p(qOne, 0.5), "cross/one")
	b.ReportMetric(float64(checked), "rankings-equal")
}

// benchCrossThroughput is brain_get of the median note and brain_query
// (limit 10, one wing, then across three wings) at 64 concurrent clients
// through the gateway: calls/s and latency percentiles; then the two
// queries measured in turn (benchCrossPaired).
func benchCrossThroughput(b *testing.B, cb *crossBrain) {
	const clients = 64
	for _, mode := range []struct {
		name string
		env  *devenv.Env
		args func(i int) (string, string)
	}{
		{"get", cb.one, func(int) (string, string) { return "brain_get", fmt.Sprintf(`{"id":%q}`, cb.getID) }},
		{"query/one-wing", cb.one, func(i int) (string, string) {
			return search.Tool, cb.queryArgs(cb.queries[i%len(cb.queries)], cb.oneWing)
		}},
		{"query/cross-wing", cb.three, func(i int) (string, string) {
			return search.Tool, cb.queryArgs(cb.queries[i%len(cb.queries)], "")
		}},
	} {
		b.Run(fmt.Sprintf("%s/clients=%d", mode.name, clients), func(b *testing.B) {
			cs := make([]benchCaller, clients)
			for i := range cs {
				cs[i] = cb.client(b, mode.env)
			}
			run(b, clients, func(w int) func() error {
				c, k := cs[w], w
				return func() error {
					tool, args := mode.args(k)
					k += clients
					_, err := c(tool, args, false)
					return err
				}
			})
		})
	}
	b.Run(fmt.Sprintf("query/paired/clients=%d", clients), func(b *testing.B) { benchCrossPaired(b, cb) })
}

// benchCrossPaired is the 64-client throughput of brain_query on the one
// wing and across the three wings measured in turn, in blocks of
// pairedBlock calls each (one, three, three, one, …), so that whatever
// else the machine does falls on both alike: the ratio of the two is the
// issue's "throughput at 64 clients" line. b.N calls of each. Reported:
// each one's calls/s over its blocks, and cross/one.
func benchCrossPaired(b *testing.B, cb *crossBrain) {
	const clients = 64
	one, three := make([]benchCaller, clients), make([]benchCaller, clients)
	for i := range one {
		one[i], three[i] = cb.client(b, cb.one), cb.client(b, cb.three)
	}
	var next atomic.Int64 // the query each call takes, in turn over both modes
	block := func(cs []benchCaller, wing string, n int) time.Duration {
		_, d, err := drive(n, len(cs), func(w int) func() error {
			c := cs[w]
			return func() error {
				q := cb.queries[int(next.Add(1))%len(cb.queries)]
				_, err := c(search.Tool, cb.queryArgs(q, wing), false)
				return err
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	block(one, cb.oneWing, clients) // connections and grants, before timing
	block(three, "", clients)
	var tOne, tThree time.Duration
	b.ResetTimer()
	for done, k := 0, 0; done < b.N; k++ {
		n := min(pairedBlock, b.N-done)
		if k%2 == 0 {
			tOne += block(one, cb.oneWing, n)
			tThree += block(three, "", n)
		} else {
			tThree += block(three, "", n)
			tOne += block(one, cb.oneWing, n)
		}
		done += n
	}
	b.StopTimer()
	perSec := func(d time.Duration) float64 { return float64(b.N) / d.Seconds() }
	b.ReportMetric(perSec(tOne), "one-calls/s")
	b.ReportMetric(perSec(tThree), "cross-calls/s")
	b.ReportMetric(perSec(tThree)/perSec(tOne), "cross/one")
}

// pairedBlock is how many calls of one mode benchCrossPaired makes before
// it turns to the other.
const pairedBlock = 1000

// client is a caller of env signed in as alice, of cb's era and client.
func (cb *crossBrain) client(b *testing.B, env *devenv.Env) benchCaller {
	tok, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		b.Fatal(err)
	}
	return eraCaller(b, env.MCPURL, tok, cb.session, cb.raw)
}

// eraCaller calls tools at url with token, initialized under 2025-06-18 (a
// session) when session is set, else under 2026-07-28 (stateless), with
// rawmcp's client when raw is set, else mcp-go's.
func eraCaller(b *testing.B, url, token string, session, raw bool) benchCaller {
	if raw {
		c, err := rawmcp.New(context.Background(), rawPool, url, token, session)
		if err != nil {
			b.Fatal(err)
		}
		return func(tool, args string, text bool) (string, error) {
			answer, err := c.Call(context.Background(), tool, []byte(args))
			if err != nil || !text {
				return "", err
			}
			var res struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(answer, &res); err != nil || len(res.Result.Content) == 0 {
				return "", fmt.Errorf("answer without text (%v): %.300s", err, answer)
			}
			return res.Result.Content[0].Text, nil
		}
	}
	var c *client.Client
	if session {
		tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			b.Fatal(err)
		}
		c = initialize(b, client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20250618)))
	} else {
		c = httpClient(b, url, token)
	}
	return func(tool, args string, _ bool) (string, error) {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
		if err != nil {
			return "", err
		}
		text := res.Content[0].(mcp.TextContent).Text
		if res.IsError {
			return "", fmt.Errorf("tool error: %s", text)
		}
		return text, nil
	}
}

// rawPool is the keep-alive pool every rawmcp caller of the benchmarks
// shares: room for two sets of 64 clients.
var rawPool = rawmcp.Pool(256)

// queryArgs are brain_query's arguments for q, limit 10, on wing (all
// readable wings when ""), in the wiki (named: a call of query and limit
// alone is the predecessor's shape, which searches the inboxes too).
func (cb *crossBrain) queryArgs(q, wing string) string {
	if wing == "" {
		return fmt.Sprintf(`{"query":%q,"scope":"wiki","limit":10}`, q)
	}
	return fmt.Sprintf(`{"wing":%q,"query":%q,"limit":10}`, wing, q)
}

// BenchmarkSampleCorpus is benchCrossLatency on the sample brain (three
// wings) against one wing holding its notes (writeSampleUnion), with
// queries drawn from the notes' titles.
func BenchmarkSampleCorpus(b *testing.B) {
	eachRevision(b, sampleCross(b), benchCrossLatency)
}

// BenchmarkSampleThroughput is benchCrossThroughput on the sample brain.
func BenchmarkSampleThroughput(b *testing.B) {
	eachRevision(b, sampleCross(b), benchCrossThroughput)
}

func sampleCross(b *testing.B) *crossBrain {
	three := startEnv(b)
	union, toOriginal := writeSampleUnion(b, three.BrainDir)
	one := devenvtest.Start(b, devenv.Config{Brain: union, Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
	}})
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range toOriginal {
			if !yield(id) {
				return
			}
		}
	})
	sizes := map[string]int{}
	for _, id := range ids {
		fi, err := os.Stat(filepath.Join(union, "wiki", filepath.FromSlash(id)+".md"))
		if err != nil {
			b.Fatal(err)
		}
		sizes[id] = int(fi.Size())
	}
	bySize := slices.SortedStableFunc(slices.Values(ids), func(x, y string) int { return sizes[x] - sizes[y] })
	return &crossBrain{three: three, one: one, oneWing: "union", getID: bySize[len(bySize)/2],
		queries: sampleQueries(b, union), toThree: func(id string) string { return toOriginal[id] }}
}

// writeSampleUnion copies every wiki note of the three-wing brain into
// wing "union" of a new brain, under the slug wing-x-slug so that no two
// collide, and returns that brain and the map from each union id to the
// note's own id.
func writeSampleUnion(t testing.TB, brainDir string) (string, map[string]string) {
	t.Helper()
	union := t.TempDir()
	toOriginal := map[string]string{}
	err := filepath.WalkDir(filepath.Join(brainDir, "wiki"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || d.Name() == "_index.md" {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(brainDir, "wiki"), p)
		parts := strings.Split(filepath.ToSlash(rel), "/") // wing, hall, slug.md
		if len(parts) != 3 {
			return nil
		}
		slug := parts[0] + "-x-" + strings.TrimSuffix(parts[2], ".md")
		dst := filepath.Join(union, "wiki", "union", parts[1], slug+".md")
		toOriginal["union/"+parts[1]+"/"+slug] = parts[0] + "/" + parts[1] + "/" + strings.TrimSuffix(parts[2], ".md")
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(toOriginal) < 50 {
		t.Fatalf("union has %d notes", len(toOriginal))
	}
	return union, toOriginal
}

// sampleQueries are 300 queries of 1, 2 and 3 words, in turn, drawn in a
// fixed order from the titles of the notes of brain's wiki (words of four
// letters or more), so that nearly every one has hits.
func sampleQueries(t testing.TB, brain string) []string {
	t.Helper()
	var words []string
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(brain, "wiki"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(raw)) {
			title, ok := strings.CutPrefix(line, "title:")
			if !ok {
				continue
			}
			for _, w := range strings.FieldsFunc(strings.ToLower(title), func(r rune) bool { return r < 'a' || r > 'z' }) {
				if len(w) >= 4 && !seen[w] {
					seen[w] = true
					words = append(words, w)
				}
			}
			break
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(words) < 30 {
		t.Fatalf("%d title words in the sample brain", len(words))
	}
	qs := make([]string, 300)
	for i := range qs {
		n := i%3 + 1
		terms := make([]string, n)
		for k := range terms {
			terms[k] = words[(i*7+k*13)%len(words)]
		}
		qs[i] = strings.Join(terms, " ")
	}
	return qs
}
