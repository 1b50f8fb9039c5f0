package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The side-by-side with TBXark/mcp-proxy (docs/performance-gateway.md,
// "Side by side with mcp-proxy"). The peer is not a Go module the
// registry serves, so it is built outside every module and named here:
//
//	BRAINSTEM_PEER_BIN    the mcp-proxy binary (required; the test skips without it)
//	BRAINSTEM_BIN         the brainstem binary to measure (default: built from ../)
//	BRAINSTEM_SBS_ROUNDS  rounds, each ours then the peer's (default 3)
//	BRAINSTEM_SBS_SECONDS seconds a run (default 5)
//	BRAINSTEM_SBS_CLIENTS concurrent MCP clients (default 64)
//
// The load generator is a lean HTTP client: each client posts prepared
// bodies and checks each answer's bytes (a result, no error), so that what
// is compared is the servers' cost. mcp-go's client costs about as much
// CPU per call as either server (it decodes every answer twice), and on
// two shared cores it would hide the servers' difference.
//
// Ours is `brainstem dev` (identity provider, gateway, three shards over
// QUIC, every call verified, routed and minted for) on the 2026-07-28
// path; the peer is mcp-proxy in front of `brainstem shard --stdio` on a
// copy of the same sample brain. Both are driven by the same load
// generator as separate processes, in turn, so they share the machine.

// sbsCalls are the calls compared: a note read and a one-wing search.
var sbsCalls = []struct{ name, tool, args string }{
	{"brain_get", "brain_get", `{"id":"payments/decisions/use-idempotency-keys"}`},
	{"brain_query (one wing)", "brain_query", `{"query":"idempotency keys retries","wing":"payments","scope":"all","limit":10}`},
}

func TestSideBySide(t *testing.T) {
	peerBin := os.Getenv("BRAINSTEM_PEER_BIN")
	if peerBin == "" {
		t.Skip("BRAINSTEM_PEER_BIN is not set: build TBXark/mcp-proxy at 4f78891 outside the module (docs/performance-gateway.md) and name the binary")
	}
	rounds, seconds, clients := envInt(t, "BRAINSTEM_SBS_ROUNDS", 3), envInt(t, "BRAINSTEM_SBS_SECONDS", 5), envInt(t, "BRAINSTEM_SBS_CLIENTS", 64)
	dir := t.TempDir()
	bin := os.Getenv("BRAINSTEM_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "brainstem")
		build := exec.Command("go", "build", "-o", bin, "./cmd/brainstem")
		build.Dir = ".." // the product's module, with its own go.sum
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building brainstem: %v\n%s", err, out)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// Ours: brainstem dev on a fresh copy of the sample brain.
	port, idp, admin := freePort(t), freePort(t), freePort(t)
	start(ctx, t, "is ready", bin, "dev", "--port", port, "--idp-port", idp, "--admin-port", admin,
		"--calls-per-second", "1000000", "--data", filepath.Join(dir, "dev"))
	tokOut, err := exec.CommandContext(ctx, bin, "dev", "token", "--email", "alice@example.com", "--idp", "http://127.0.0.1:"+idp).Output()
	if err != nil {
		t.Fatalf("brainstem dev token: %v", err)
	}
	ours := side{url: "http://127.0.0.1:" + port + "/mcp", token: strings.TrimSpace(strings.SplitN(string(tokOut), "\n", 2)[0]), stateless: true}

	// The peer: mcp-proxy spawning `brainstem shard --stdio` on its own copy
	// of the same brain (a second process writing one git repository would
	// measure locks, not serving).
	peerBrain := filepath.Join(dir, "peer-brain")
	if out, err := exec.Command("cp", "-r", "../deploy/examples/brain", peerBrain).CombinedOutput(); err != nil {
		t.Fatalf("copying the sample brain: %v\n%s", err, out)
	}
	peerPort := freePort(t)
	cfg := map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://127.0.0.1:" + peerPort, "addr": "127.0.0.1:" + peerPort,
			"name": "peer", "version": "1", "type": "streamable-http",
			"options": map[string]any{"logEnabled": false, "authTokens": []string{"peer-token"}},
		},
		"mcpServers": map[string]any{"brain": map[string]any{
			"command": bin,
			"args":    []string{"shard", "--stdio", "--brain", peerBrain, "--wing", "payments", "--email", "bench@example.com", "--admin-listen", ""},
		}},
	}
	cfgPath := filepath.Join(dir, "peer.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	start(ctx, t, "listening on", peerBin, "-config", cfgPath)
	peer := side{url: "http://127.0.0.1:" + peerPort + "/brain/mcp", token: "peer-token"}

	for _, c := range sbsCalls {
		// Warm up, untimed: connections, sessions, mints and caches made,
		// and the brain's fresh copies older than the store's racy window
		// (2 s), past which a note read is served from its cache, as every
		// note is in a brain that is not being copied that second.
		for _, sd := range []side{ours, peer} {
			if _, err := sd.run(ctx, c.tool, c.args, clients, 3*time.Second); err != nil {
				t.Fatalf("%s against %s (warm-up): %v", c.name, sd.url, err)
			}
		}
		var ratios []float64
		for r := range rounds {
			var got [2]result
			for i, sd := range []side{ours, peer} {
				res, err := sd.run(ctx, c.tool, c.args, clients, time.Duration(seconds)*time.Second)
				if err != nil {
					t.Fatalf("%s against %s: %v", c.name, sd.url, err)
				}
				got[i] = res
			}
			ratio := got[0].perSecond / got[1].perSecond
			ratios = append(ratios, ratio)
			t.Logf("%s, c=%d, round %d: ours %.0f calls/s (p50 %s, p99 %s), peer %.0f calls/s (p50 %s, p99 %s): %.2f×",
				c.name, clients, r+1, got[0].perSecond, got[0].p50, got[0].p99, got[1].perSecond, got[1].p50, got[1].p99, ratio)
		}
		slices.Sort(ratios)
		t.Logf("%s, c=%d: ours ÷ peer, calls/s, over %d rounds: min %.2f×, median %.2f×, max %.2f×",
			c.name, clients, rounds, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
	}
}

// start runs a server until the test ends and returns once a line of its
// output contains ready (its readiness signal); it fails the test if the
// process ends first.
func start(ctx context.Context, t *testing.T, ready, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() { // read to the end, so the server never blocks on its output
			if !signalled && strings.Contains(sc.Text(), ready) {
				signalled = true
				close(found)
			}
		}
	}()
	select {
	case <-found:
	case err := <-exited:
		t.Fatalf("%s %v exited before it was ready (%v)", name, args, err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s %v was not ready within 2 minutes", name, args)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// side is one server under test.
type side struct {
	url, token string
	// stateless: the 2026-07-28 revision (no session, the _meta and the
	// Mcp-Method/Mcp-Name headers on every request); otherwise 2025-06-18
	// with an initialized session per client, as the peer speaks.
	stateless bool
}

// result is what one run of one side measured.
type result struct {
	perSecond float64
	p50, p99  time.Duration
}

const sbsMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"brainstem-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// run has clients clients call tool with args back to back for d, and
// fails at the first call that is not answered with a result.
func (s side) run(ctx context.Context, tool, args string, clients int, d time.Duration) (result, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	meta := ""
	if s.stateless {
		meta = "," + sbsMeta
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + meta + `}}`)
	sessions := make([]string, clients)
	if !s.stateless {
		for i := range sessions {
			id, err := s.initialize(ctx, hc)
			if err != nil {
				return result{}, err
			}
			sessions[i] = id
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lat := make([][]time.Duration, clients)
	errs := make(chan error, clients)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				b, err := s.post(ctx, hc, sessions[i], tool, body)
				if ctx.Err() != nil {
					return
				}
				if err == nil && (!bytes.Contains(b, []byte(`"result"`)) || bytes.Contains(b, []byte(`"isError":true`))) {
					err = fmt.Errorf("not a result: %.300s", b)
				}
				if err != nil {
					errs <- err
					cancel()
					return
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	select {
	case err := <-errs:
		return result{}, err
	default:
	}
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return result{}, errors.New("no call was answered")
	}
	slices.Sort(all)
	return result{perSecond: float64(len(all)) / elapsed.Seconds(), p50: all[(len(all)-1)/2], p99: all[(len(all)-1)*99/100]}, nil
}

// initialize opens a 2025-06-18 session and returns its id.
func (s side) initialize(ctx context.Context, hc *http.Client) (string, error) {
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"brainstem-bench","version":"1"}}}`)
	req, err := s.request(ctx, "", "initialize", "", init)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id") // "" from a server without sessions (the peer's)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: %s", resp.Status)
	}
	if _, err := s.post(ctx, hc, id, "", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return "", fmt.Errorf("notifications/initialized: %w", err)
	}
	return id, nil
}

func (s side) request(ctx context.Context, session, method, name string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Authorization", "Bearer "+s.token)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	switch {
	case s.stateless:
		h.Set("MCP-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", method)
		if name != "" {
			h.Set("Mcp-Name", name)
		}
	case method != "initialize":
		h.Set("MCP-Protocol-Version", "2025-06-18")
		if session != "" {
			h.Set("Mcp-Session-Id", session)
		}
	}
	return req, nil
}

// post sends one message (a tools/call of tool, or a notification when
// tool is "") and returns the answer's body.
func (s side) post(ctx context.Context, hc *http.Client, session, tool string, body []byte) ([]byte, error) {
	method := "tools/call"
	if tool == "" {
		method = "notifications/initialized"
	}
	req, err := s.request(ctx, session, method, tool, body)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: %.300s", resp.Status, b)
	}
	return b, nil
}
