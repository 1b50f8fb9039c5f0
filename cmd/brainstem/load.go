package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/loadgen"
)

const loadUsage = `Usage: brainstem load --url URL --token T[,T…] [--clients 64] [--duration 10s] [--rate N] [--tool brain_get] [--args JSON]

Drives an MCP endpoint (a gateway, or brainstem dev) with concurrent MCP
clients repeating one tool call, then prints calls/s and p50/p99 latency.
Without --rate every client calls again as soon as it has its answer (the
most the endpoint carries); with --rate the clients together send N calls
a second on a fixed schedule (the latency at that load).
Several comma-separated tokens spread the clients over several users.
Only point it at your own servers.

Flags:
`

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("load", stderr, loadUsage)
	url := fs.String("url", "", "the MCP endpoint, e.g. http://127.0.0.1:8080/mcp (required)")
	tokens := fs.String("token", "", "bearer token(s), comma-separated (required)")
	clients := fs.Int("clients", 64, "concurrent MCP clients")
	duration := fs.Duration("duration", 10*time.Second, "how long to issue calls")
	tool := fs.String("tool", "brain_get", "the tool every client calls")
	argsJSON := fs.String("args", `{"id":"payments/decisions/use-idempotency-keys"}`, "the call's arguments (a JSON object)")
	legacy := fs.Bool("legacy", false, "use the session-based protocol 2025-06-18 instead of negotiating")
	rate := fs.Float64("rate", 0, "calls per second across all clients, on a fixed schedule (0: as fast as answered)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var toks []string
	for _, t := range strings.Split(*tokens, ",") {
		if t = strings.TrimSpace(t); t != "" {
			toks = append(toks, t)
		}
	}
	res, err := loadgen.Run(ctx, loadgen.Config{URL: *url, Tokens: toks, Clients: *clients, Duration: *duration,
		Tool: *tool, Arguments: json.RawMessage(*argsJSON), Legacy: *legacy, Rate: *rate})
	if errors.Is(err, loadgen.ErrConfig) {
		return usageError{err.Error()}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	if res.Errors > 0 {
		return fmt.Errorf("load: %d calls failed", res.Errors)
	}
	return nil
}
