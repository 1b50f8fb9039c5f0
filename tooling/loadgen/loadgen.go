package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Limits on what one run may ask for.
const (
	MaxClients  = 4096
	MaxDuration = time.Hour
	MaxRate     = 1e6
)

// behindSlack is how long past a paced call's slot its client may still
// be waiting for the previous answer before the call counts as Behind.
const behindSlack = time.Millisecond

// ErrConfig wraps every invalid Config.
var ErrConfig = errors.New("loadgen: invalid config")

// Config describes one load run.
type Config struct {
	// URL is the MCP endpoint, e.g. https://brain.acme.com/mcp.
	URL string
	// Tokens are bearer tokens; client i uses Tokens[i % len(Tokens)]
	// (several tokens = several users). At least one.
	Tokens []string
	// Clients is the number of concurrent MCP clients (default 1).
	Clients int
	// Duration is how long calls are issued (default 10s).
	Duration time.Duration
	// Tool and Arguments are the call every client repeats.
	Tool      string
	Arguments json.RawMessage
	// Legacy pins the session-based protocol 2025-06-18 instead of the
	// client's default negotiation.
	Legacy bool
	// Rate, when positive, paces the run (open loop): the clients together
	// start Rate calls a second on a fixed schedule, client k at offsets
	// (k + j·Clients)/Rate, so latency can be read at a chosen load. 0 means
	// each client calls again as soon as it has its answer (closed loop),
	// which measures throughput. At most MaxRate.
	Rate float64
	// HTTPClient, when set, is used by every MCP client (e.g. custom TLS).
	// Default: one shared client whose pool keeps a connection per worker.
	HTTPClient *http.Client
}

// Result is what a run measured. Latencies are of successful calls.
type Result struct {
	Calls          int64 // successful calls (tool errors included: they are answers)
	ToolErrors     int64 // calls answered with isError
	Errors         int64 // transport or protocol failures
	Behind         int64 // paced calls that started over 1ms late because their client was still waiting for its previous answer
	FirstError     string
	Elapsed        time.Duration
	P50, P99, Max  time.Duration
	CallsPerSecond float64
}

// String is the one-line summary `brainstem load` prints.
// Err is nil when every call got an answer, else an error counting the
// transport or protocol failures (the exit status of `brainstem load`).
func (r Result) Err() error {
	if r.Errors > 0 {
		return fmt.Errorf("load: %d calls failed", r.Errors)
	}
	return nil
}

func (r Result) String() string {
	s := fmt.Sprintf("%d calls in %s: %.0f calls/s, p50 %s, p99 %s, max %s, %d tool errors, %d failures",
		r.Calls, r.Elapsed.Round(time.Millisecond), r.CallsPerSecond, r.P50, r.P99, r.Max, r.ToolErrors, r.Errors)
	if r.Behind > 0 {
		s += fmt.Sprintf(", %d calls behind schedule (the rate is past what the endpoint answers)", r.Behind)
	}
	if r.FirstError != "" {
		s += " (first: " + r.FirstError + ")"
	}
	return s
}

func (c *Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, fmt.Errorf("%w: URL is required", ErrConfig))
	}
	if len(c.Tokens) == 0 {
		errs = append(errs, fmt.Errorf("%w: at least one bearer token is required", ErrConfig))
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Clients < 1 || c.Clients > MaxClients {
		errs = append(errs, fmt.Errorf("%w: clients %d is outside 1..%d", ErrConfig, c.Clients, MaxClients))
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Duration < 0 || c.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("%w: duration %s is outside (0, %s]", ErrConfig, c.Duration, MaxDuration))
	}
	if c.Tool == "" {
		errs = append(errs, fmt.Errorf("%w: a tool name is required", ErrConfig))
	}
	if len(c.Arguments) == 0 {
		c.Arguments = json.RawMessage(`{}`)
	}
	if c.Rate < 0 || c.Rate > MaxRate || math.IsNaN(c.Rate) {
		errs = append(errs, fmt.Errorf("%w: rate %g is outside [0, %g] calls/s", ErrConfig, c.Rate, float64(MaxRate)))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(c.Arguments, &obj) != nil {
		errs = append(errs, fmt.Errorf("%w: arguments must be a JSON object", ErrConfig))
	}
	return errors.Join(errs...)
}

// Run connects cfg.Clients clients (initializing each), then has every
// client call the tool, back to back or on cfg.Rate's schedule, until
// cfg.Duration has passed or ctx ends, and returns the figures. Connecting
// is not timed; a latency runs from the moment its call is sent.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConns:        cfg.Clients * 2,
			MaxIdleConnsPerHost: cfg.Clients * 2,
			IdleConnTimeout:     time.Minute,
		}}
		defer hc.CloseIdleConnections()
	}
	clients := make([]*client.Client, cfg.Clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := connect(ctx, cfg, hc, cfg.Tokens[i%len(cfg.Tokens)])
		if err != nil {
			return Result{}, fmt.Errorf("loadgen: client %d: %w", i, err)
		}
		clients[i] = c
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	t := &tally{cfg: cfg, req: mcp.CallToolRequest{Params: mcp.CallToolParams{Name: cfg.Tool, Arguments: cfg.Arguments}}, start: time.Now()}
	t.deadline = t.start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for k, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.drive(runCtx, c, k)
		}()
	}
	wg.Wait()
	return t.result(time.Since(t.start)), nil
}

// tally is one run: its schedule and what its clients measured.
type tally struct {
	cfg             Config
	req             mcp.CallToolRequest
	start, deadline time.Time

	mu         sync.Mutex
	lat        []time.Duration
	toolErrs   atomic.Int64
	failures   atomic.Int64
	behind     atomic.Int64
	firstError atomic.Value
}

// drive has client c, the k-th, call until the run ends.
func (t *tally) drive(ctx context.Context, c *client.Client, k int) {
	local := make([]time.Duration, 0, 1024)
	var prevEnd time.Time
	for j := 0; ctx.Err() == nil; j++ {
		late := false // still waiting for the previous answer at this call's slot
		if t.cfg.Rate > 0 {
			slot := t.start.Add(time.Duration((float64(k) + float64(j)*float64(t.cfg.Clients)) / t.cfg.Rate * float64(time.Second)))
			if !slot.Before(t.deadline) {
				break
			}
			late = prevEnd.After(slot.Add(behindSlack))
			if !waitUntil(ctx, slot) {
				break
			}
		}
		t0 := time.Now()
		res, err := c.CallTool(ctx, t.req)
		prevEnd = time.Now()
		d := prevEnd.Sub(t0)
		if err != nil {
			if ctx.Err() != nil {
				break // the run ended mid-call: not a failure
			}
			t.failures.Add(1)
			t.firstError.CompareAndSwap(nil, err.Error())
			continue
		}
		if res.IsError {
			t.toolErrs.Add(1)
		}
		if late {
			t.behind.Add(1)
		}
		local = append(local, d)
	}
	t.mu.Lock()
	t.lat = append(t.lat, local...)
	t.mu.Unlock()
}

// result is the figures of the run, which took elapsed.
func (t *tally) result(elapsed time.Duration) Result {
	lat := t.lat
	r := Result{Calls: int64(len(lat)), ToolErrors: t.toolErrs.Load(), Errors: t.failures.Load(), Behind: t.behind.Load(), Elapsed: elapsed}
	if s, ok := t.firstError.Load().(string); ok {
		r.FirstError = s
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.P50 = lat[(len(lat)-1)/2]
		r.P99 = lat[(len(lat)-1)*99/100]
		r.Max = lat[len(lat)-1]
		r.CallsPerSecond = float64(len(lat)) / elapsed.Seconds()
	}
	return r
}

// waitUntil returns at t (true), or when ctx ends first (false).
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func connect(ctx context.Context, cfg Config, hc *http.Client, token string) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(cfg.URL,
		transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	var opts []client.ClientOption
	version := ""
	if cfg.Legacy {
		opts = append(opts, client.WithProtocolVersion(mcp.ProtocolVersion20250618))
		version = mcp.ProtocolVersion20250618
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "brainstem-load", Version: "1"},
	}}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}
