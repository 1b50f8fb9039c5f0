package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

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
	// HTTPClient, when set, is used by every MCP client (e.g. custom TLS).
	// Default: one shared client whose pool keeps a connection per worker.
	HTTPClient *http.Client
}

// Result is what a run measured. Latencies are of successful calls.
type Result struct {
	Calls          int64 // successful calls (tool errors included: they are answers)
	ToolErrors     int64 // calls answered with isError
	Errors         int64 // transport or protocol failures
	FirstError     string
	Elapsed        time.Duration
	P50, P99, Max  time.Duration
	CallsPerSecond float64
}

// String is the one-line summary `brainstem load` prints.
func (r Result) String() string {
	s := fmt.Sprintf("%d calls in %s: %.0f calls/s, p50 %s, p99 %s, max %s, %d tool errors, %d failures",
		r.Calls, r.Elapsed.Round(time.Millisecond), r.CallsPerSecond, r.P50, r.P99, r.Max, r.ToolErrors, r.Errors)
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
	var obj map[string]json.RawMessage
	if json.Unmarshal(c.Arguments, &obj) != nil {
		errs = append(errs, fmt.Errorf("%w: arguments must be a JSON object", ErrConfig))
	}
	return errors.Join(errs...)
}

// Run connects cfg.Clients clients (initializing each), then has every
// client call the tool back to back until cfg.Duration has passed or ctx
// ends, and returns the figures. Connecting is not timed.
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

	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: cfg.Tool, Arguments: cfg.Arguments}}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		lat        []time.Duration
		toolErrs   atomic.Int64
		failures   atomic.Int64
		firstError atomic.Value
	)
	start := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			for runCtx.Err() == nil {
				t0 := time.Now()
				res, err := c.CallTool(runCtx, req)
				d := time.Since(t0)
				if err != nil {
					if runCtx.Err() != nil {
						break // the run ended mid-call: not a failure
					}
					failures.Add(1)
					firstError.CompareAndSwap(nil, err.Error())
					continue
				}
				if res.IsError {
					toolErrs.Add(1)
				}
				local = append(local, d)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := Result{Calls: int64(len(lat)), ToolErrors: toolErrs.Load(), Errors: failures.Load(), Elapsed: elapsed}
	if s, ok := firstError.Load().(string); ok {
		r.FirstError = s
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.P50 = lat[(len(lat)-1)/2]
		r.P99 = lat[(len(lat)-1)*99/100]
		r.Max = lat[len(lat)-1]
		r.CallsPerSecond = float64(len(lat)) / elapsed.Seconds()
	}
	return r, nil
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
