package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/tooling/otlptest"
)

// benchEnv is newEnv without debug logging or a retained audit buffer.
func benchEnv(b testing.TB, names []string) *testEnv {
	b.Helper()
	return benchEnvTraced(b, names, nil)
}

// benchEnvTraced is benchEnv with the gateway's tracing tr (nil: off).
func benchEnvTraced(b testing.TB, names []string, tr *tracing.Tracing) *testEnv {
	b.Helper()
	e := &testEnv{t: b, pki: newTestPKI(b), idp: startIdP(b), wings: map[string]*testWing{},
		shards: map[string]*shardServer{}, audit: &syncBuffer{}, logs: &syncBuffer{}}
	var wcs []config.WingConfig
	for _, n := range names {
		w := newTestWing(b, n, policyOpen)
		e.wings[n] = w
		e.shards[n] = startShard(b, e.pki, w, "")
		wcs = append(wcs, config.WingConfig{Name: n, Address: e.shards[n].addr, ServerName: "localhost"})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	e.base = "http://" + ln.Addr().String()
	e.url = e.base + "/mcp"
	cfg := e.config(wcs, e.base)
	cfg.Grants.MaxEntries = 200000
	gw, err := New(context.Background(), cfg, Options{Logger: slog.New(slog.DiscardHandler), AuditLog: io.Discard, ShardTLS: e.pki.gwTLS, Tracing: tr})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln, nil) }()
	b.Cleanup(func() { cancel(); <-done; _ = gw.Close() })
	e.gw = gw
	return e
}

// runWorkers runs n calls of fn over c workers and returns each call's
// latency. With rate 0 every worker calls again as soon as it has its
// answer (closed loop). With a positive rate the calls are paced (open
// loop): call i starts at i/rate from the start, on whichever worker is
// free, so together they start rate calls a second. A latency runs from
// the moment its call is sent: a timer firing late (about 0.1 ms on this
// VM, more under load) is the load generator's delay, not the system's; at
// 64 workers each has 64 ms between its calls at 1,000/s, far above any
// answer's latency, so no stall hides behind a late send.
func runWorkers(b *testing.B, n, c int, rate float64, fn func(worker int) error) []time.Duration {
	lat := make([]time.Duration, n)
	var step time.Duration
	if rate > 0 {
		step = time.Duration(float64(time.Second) / rate)
	}
	start := time.Now().Add(10 * time.Millisecond)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for wk := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if step > 0 {
					if d := time.Until(start.Add(time.Duration(i) * step)); d > 0 {
						time.Sleep(d) // pacing the schedule, not waiting for a state
					}
				}
				t0 := time.Now()
				if err := fn(wk); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return lat
}

func percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

// BenchmarkBrainGet measures brain_get through the gateway (mcp-go client →
// HTTP → gateway → QUIC → shard) against the same call straight over proto
// (proto.Client → QUIC → shard) in the same run, at 1 and 64 concurrent
// clients in a closed loop (each client calls again as soon as it has its
// answer), for both MCP eras: rev=stateless (2026-07-28, the mcp-go
// client's default; served by the lean path) and rev=session (2025-06-18
// with Mcp-Session-Id; served by the lean path once mcp-go served the
// session, sessions.go in gateway/rpc). Reported: p50/p99 of
// both, the latency the gateway adds, and calls/s through the gateway.
//
// client=http replaces the mcp-go client with a minimal one (a prepared
// 2026-07-28 tools/call POST, the answer read and checked for a result), so
// the figure shows what the gateway can carry when the client's CPU is not
// on the same two cores.
func BenchmarkBrainGet(b *testing.B) {
	for _, mode := range []struct{ client, rev string }{{"mcp-go", "stateless"}, {"mcp-go", "session"}, {"http", "stateless"}} {
		for _, conc := range []int{1, 64} {
			b.Run("client="+mode.client+"/rev="+mode.rev+"/clients="+strconv.Itoa(conc), func(b *testing.B) {
				gb := newGetBench(b, mode.rev == "session", conc)
				via := gb.viaMCP
				if mode.client == "http" {
					via = gb.viaHTTP
				}
				b.ResetTimer()
				cpu0 := cpuTime()
				t0 := time.Now()
				direct := runWorkers(b, b.N, conc, 0, gb.direct)
				directDur := time.Since(t0)
				cpu1 := cpuTime()
				t0 = time.Now()
				through := runWorkers(b, b.N, conc, 0, via)
				viaDur := time.Since(t0)
				cpu2 := cpuTime()
				b.StopTimer()
				// CPU time of the whole process (client, gateway, shard) per
				// call: robust when other processes compete for the cores.
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "proto-cpu-us/op")
				b.ReportMetric(float64((cpu2-cpu1).Microseconds())/float64(b.N), "gw-cpu-us/op")
				b.ReportMetric(float64(b.N)/viaDur.Seconds(), "gw-calls/s")
				b.ReportMetric(float64(b.N)/directDur.Seconds(), "proto-calls/s")
				reportAdded(b, direct, through)
			})
		}
	}
}

// BenchmarkBrainGetPaced is the latency at 64 concurrent clients without
// saturating the machine: the clients together send
// BRAINSTEM_BENCH_RATE calls/s (default 1000; a comma-separated list runs
// each), each on its own fixed
// schedule (open loop), first straight over proto, then through the
// gateway. In a closed loop at 64 clients the
// latency is only the queue (Little's law: 64 ÷ calls/s), which
// BenchmarkBrainGet reports separately.
func BenchmarkBrainGetPaced(b *testing.B) {
	rates := []float64{1000}
	if v := os.Getenv("BRAINSTEM_BENCH_RATE"); v != "" {
		rates = rates[:0]
		for _, f := range strings.Split(v, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || r <= 0 {
				b.Fatalf("BRAINSTEM_BENCH_RATE=%q: want calls/s, comma-separated", v)
			}
			rates = append(rates, r)
		}
	}
	const conc = 64
	for _, mode := range []struct{ client, rev string }{{"mcp-go", "stateless"}, {"mcp-go", "session"}, {"http", "stateless"}} {
		for _, rate := range rates {
			for _, proc := range []string{"same", "separate"} {
				b.Run("client="+mode.client+"/rev="+mode.rev+"/clients=64/rate="+strconv.FormatFloat(rate, 'f', -1, 64)+"/process="+proc, func(b *testing.B) {
					var gb *getBench
					if proc == "same" {
						gb = newGetBench(b, mode.rev == "session", conc)
					} else {
						gb = newRemoteGetBench(b, mode.rev == "session", conc)
					}
					via := gb.viaMCP
					if mode.client == "http" {
						via = gb.viaHTTP
					}
					b.ResetTimer()
					direct := runWorkers(b, b.N, conc, rate, gb.direct)
					through := runWorkers(b, b.N, conc, rate, via)
					b.StopTimer()
					reportAdded(b, direct, through)
				})
			}
		}
	}
}

func reportAdded(b *testing.B, direct, through []time.Duration) {
	dp50, dp99 := percentile(direct, .5), percentile(direct, .99)
	gp50, gp99 := percentile(through, .5), percentile(through, .99)
	b.ReportMetric(float64(dp50.Nanoseconds()), "proto-p50-ns")
	b.ReportMetric(float64(dp99.Nanoseconds()), "proto-p99-ns")
	b.ReportMetric(float64(gp50.Nanoseconds()), "gw-p50-ns")
	b.ReportMetric(float64(gp99.Nanoseconds()), "gw-p99-ns")
	b.ReportMetric(float64((gp50 - dp50).Nanoseconds()), "added-p50-ns")
	b.ReportMetric(float64((gp99 - dp99).Nanoseconds()), "added-p99-ns")
	b.ReportMetric(float64(gp50)/float64(dp50), "p50-ratio")
}

// getBench is one wing with a note, a direct proto client with a token per
// worker, and per worker an mcp-go client and a prepared raw request, each
// for its own email and warmed up.
type getBench struct {
	direct, viaMCP, viaHTTP func(wk int) error
}

func newGetBench(b *testing.B, legacy bool, conc int) *getBench {
	e := benchEnv(b, []string{"payments"})
	e.wings["payments"].addNote("payments/decisions/idem", "use idempotency keys for every payment write", "a@acme.com")
	// Direct proto baseline: one pooled client, a real token per worker.
	pc := proto.NewClient(e.shards["payments"].addr, proto.ClientConfig{TLS: e.pki.gwTLS.Clone()})
	b.Cleanup(func() { _ = pc.Close() })
	ssoTokens := make([]string, conc)
	shardTokens := make([]string, conc)
	for i := range conc {
		email := fmt.Sprintf("u%d@acme.com", i)
		ssoTokens[i] = e.idp.token(b, email)
		mr, err := pc.Mint(context.Background(), &proto.MintRequest{Email: email, NotAfter: time.Now().Add(time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		shardTokens[i] = mr.Token
	}
	return buildGetBench(b, e.url, pc, ssoTokens, shardTokens, legacy)
}

// buildGetBench prepares, per worker, the direct call (pc with the
// worker's shard token) and the two ways through the gateway at url (an
// mcp-go client and a prepared raw request with the worker's SSO token),
// each warmed up.
func buildGetBench(b *testing.B, url string, pc *proto.Client, ssoTokens, shardTokens []string, legacy bool) *getBench {
	args := []byte(`{"id":"payments/decisions/idem"}`)
	conc := len(ssoTokens)
	clients := make([]*client.Client, conc)
	// One keep-alive pool big enough for every worker (the default
	// transport keeps 2 idle connections per host, which would make
	// the benchmark measure TCP handshakes).
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}
	b.Cleanup(hc.CloseIdleConnections)
	rawHeaders := make([]http.Header, conc)
	for i, token := range ssoTokens {
		clients[i] = newMCPClient(b, url, token, legacy, transport.WithHTTPBasicClient(hc))
		call(b, clients[i], "brain_get", string(args))
		rawHeaders[i] = http.Header{}
		for k, v := range withHeader(modernHeaders("brain_get"), "Authorization", "Bearer "+token) {
			rawHeaders[i].Set(k, v)
		}
		rawHeaders[i].Set("Content-Type", "application/json")
		rawHeaders[i].Set("Accept", "application/json, text/event-stream")
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_get", Arguments: json.RawMessage(args)}}
	callBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":` + string(args) + `,` + modernMeta + `}}`)
	return &getBench{
		direct: func(wk int) error {
			_, err := pc.Call(context.Background(), &proto.CallRequest{Token: shardTokens[wk], Tool: "brain_get", Args: args})
			return err
		},
		viaMCP: func(wk int) error {
			res, err := clients[wk].CallTool(context.Background(), req)
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error %v", res.Content)
			}
			return err
		},
		viaHTTP: func(wk int) error {
			r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(callBody))
			if err != nil {
				return err
			}
			r.Header = rawHeaders[wk].Clone()
			resp, err := hc.Do(r)
			if err != nil {
				return err
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"result":{`)) || bytes.Contains(body, []byte(`"isError":true`))) {
				err = fmt.Errorf("gateway answered %d %s", resp.StatusCode, body)
			}
			return err
		},
	}
}

// BenchmarkMintStorm: E emails × 3 wings × 8 concurrent first calls each
// must cause exactly 3E mints (one per (email, wing)) and no error. E is
// BRAINSTEM_BENCH_STORM_EMAILS (default 100; the figure in
// docs/performance-gateway.md uses 10000). It drives the grant cache with
// real proto clients and real shards; SSO verification is not part of it.
func BenchmarkMintStorm(b *testing.B) {
	emails := 100
	if v := os.Getenv("BRAINSTEM_BENCH_STORM_EMAILS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BRAINSTEM_BENCH_STORM_EMAILS=%q", v)
		}
		emails = n
	}
	names := []string{"a", "b", "c"}
	for range b.N {
		b.StopTimer()
		e := benchEnv(b, names)
		before := int64(0)
		for _, n := range names {
			before += e.wings[n].mints.Load()
		}
		exp := time.Now().Add(time.Hour)
		b.StartTimer()
		start := time.Now()
		var errs atomic.Int64
		sem := make(chan struct{}, 32) // emails in flight
		var wg sync.WaitGroup
		for i := range emails {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				id := auth.Identity{Email: fmt.Sprintf("storm%06d@acme.com", i), Expiry: exp}
				var inner sync.WaitGroup
				for _, w := range e.gw.wings {
					for range 8 {
						inner.Add(1)
						go func() {
							defer inner.Done()
							if _, _, err := grantGet(context.Background(), e.gw.grants, id, w, ""); err != nil {
								errs.Add(1)
							}
						}()
					}
				}
				inner.Wait()
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		var mints int64
		for _, n := range names {
			mints += e.wings[n].mints.Load()
		}
		mints -= before
		if errs.Load() != 0 || mints != int64(3*emails) {
			b.Fatalf("%d errors, %d mints for %d emails × 3 wings", errs.Load(), mints, emails)
		}
		b.ReportMetric(float64(mints), "mints")
		b.ReportMetric(elapsed.Seconds(), "storm-s")
		b.ReportMetric(float64(mints)/elapsed.Seconds(), "mints/s")
	}
}

// BenchmarkGrantCacheHeap measures the heap held per caller in the grant
// cache with three wing tokens (real Ed25519 shard tokens), including the
// LRU entry and the email key; and separately the per-email rate limiter.
func BenchmarkGrantCacheHeap(b *testing.B) {
	const n = 2000
	names := []string{"payments", "search", "platform"}
	var wings []*route.Wing
	minters := map[string]*auth.Minter{}
	for i, name := range names {
		wings = append(wings, &route.Wing{Idx: i, Name: name})
		key, err := auth.GenerateKey()
		if err != nil {
			b.Fatal(err)
		}
		minters[name] = auth.NewMinter(name, key, 0, nil)
	}
	// Tokens minted up front (their bytes are what an entry holds).
	type tok struct {
		s   string
		exp time.Time
	}
	toks := make([][]tok, n)
	for i := range n {
		for _, w := range wings {
			s, exp, err := minters[w.Name].Mint(fmt.Sprintf("person%05d@acme.com", i), brain.CapRead|brain.CapWrite, time.Time{})
			if err != nil {
				b.Fatal(err)
			}
			toks[i] = append(toks[i], tok{s, exp})
		}
	}
	var tokenBytes int
	for _, t := range toks[0] {
		tokenBytes += len(t.s)
	}
	for range b.N {
		sc := route.NewGrantCache(wings, n*2, time.Hour, time.Minute, time.Second, time.Now, nopMetrics{}, slog.New(slog.DiscardHandler))
		emails := make([]string, n)
		for i := range n {
			emails[i] = fmt.Sprintf("person%05d@acme.com", i)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i, email := range emails {
			for j, w := range wings {
				// Clone so the entry owns its token bytes, as after a mint.
				sc.Store(route.Key(email), w, route.Grant{Token: string([]byte(toks[i][j].s)), Caps: brain.CapRead | brain.CapWrite, Expiry: toks[i][j].exp})
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perCaller := float64(after.HeapAlloc-before.HeapAlloc) / n
		lim, _ := lru.New[string, *rate.Limiter](n * 2)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, email := range emails {
			lim.Add(email, rate.NewLimiter(20, 40))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perLimiter := float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(sc)
		runtime.KeepAlive(lim)
		b.ReportMetric(perCaller, "heap-bytes/caller")
		b.ReportMetric(float64(tokenBytes), "token-bytes/caller")
		b.ReportMetric(perLimiter, "heap-bytes/limiter")
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServeToolCall is the gateway's own cost for one stateless
// brain_get, in process: the public handler called directly (no client,
// no TCP), the shard behind real QUIC. lean=false sends the same request
// through mcp-go's transport, for comparison.
//
// The tracing=on variants export every call's spans (the server span and
// the shard request's client span, all sampled) to a real OTLP/HTTP
// receiver on loopback: the cost of tracing on (docs/performance.md).
func BenchmarkServeToolCall(b *testing.B) {
	for _, v := range []struct {
		lean, traced bool
	}{{true, false}, {false, false}, {true, true}, {false, true}} {
		name := "lean=" + strconv.FormatBool(v.lean)
		if v.traced {
			name += ",tracing=on"
		}
		lean := v.lean
		b.Run(name, func(b *testing.B) {
			var tr *tracing.Tracing
			if v.traced {
				tr = benchTracing(b)
			}
			e := benchEnvTraced(b, []string{"payments"}, tr)
			e.gw.SetLeanPathForTest(lean)
			e.wings["payments"].addNote("payments/decisions/idem", "use idempotency keys for every payment write", "a@acme.com")
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"},` + modernMeta + `}}`
			hdr := http.Header{}
			for k, v := range withHeader(modernHeaders("brain_get"), "Authorization", "Bearer "+e.idp.token(b, "ann@acme.com")) {
				hdr.Set(k, v)
			}
			hdr.Set("Content-Type", "application/json")
			hdr.Set("Accept", "application/json, text/event-stream")
			h := e.gw.Handler()
			serve := func() {
				req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
				req.Header = hdr.Clone()
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`idempotency`)) {
					b.Fatalf("%d %s", rec.Code, rec.Body.Bytes())
				}
			}
			serve() // mint the shard token
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				serve()
			}
		})
	}
}

// benchTracing is tracing on, exporting to an otlptest receiver.
func benchTracing(b *testing.B) *tracing.Tracing {
	recv := otlptest.Start(b)
	tr, err := tracing.New(tracing.Settings{Enabled: true, Endpoint: recv.Endpoint() + "/v1/traces", Sampler: tracing.SamplerAlwaysOn, Ratio: 1}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := tr.ForceFlush(context.Background()); err != nil {
			b.Error(err)
		}
		if recv.Posts() == 0 {
			b.Error("no spans reached the receiver")
		}
	})
	return tr
}
