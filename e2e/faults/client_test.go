package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// callTimeout bounds one call from the test's side: long enough that a
// stalled gateway shows up as a measured latency, not a cut-off.
const callTimeout = 20 * time.Second

// user is one person's MCP client of the gateway.
type user struct {
	email string
	c     *client.Client
}

func (c *cluster) newUser(email string) *user {
	c.t.Helper()
	u, err := c.tryUser(email, c.token(email))
	if err != nil {
		c.t.Fatal(err)
	}
	return u
}

func (c *cluster) tryUser(email, tok string) (*user, error) {
	mc, err := client.NewStreamableHttpClient(c.mcpURL(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := mc.Start(ctx); err != nil {
		return nil, err
	}
	if _, err := mc.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "brainstem-faults", Version: "0"}}}); err != nil {
		mc.Close()
		return nil, err
	}
	c.t.Cleanup(func() { mc.Close() })
	return &user{email: email, c: mc}, nil
}

// callRec is one call as the agent saw it.
type callRec struct {
	start   time.Time
	latency time.Duration
	user    string
	tool    string
	wing    string // "*" for cross-wing
	code    string // "ok", a tool error code, or "transport"
	text    string
}

func (r callRec) end() time.Time { return r.start.Add(r.latency) }

func (u *user) call(tool, wing, args string) callRec {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	start := time.Now()
	res, err := u.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
	rec := callRec{start: start, latency: time.Since(start), user: u.email, tool: tool, wing: wing, code: "ok"}
	switch {
	case err != nil:
		rec.code, rec.text = "transport", err.Error()
	case len(res.Content) != 1:
		rec.code, rec.text = "transport", fmt.Sprintf("%d contents", len(res.Content))
	default:
		tc, _ := res.Content[0].(mcp.TextContent)
		rec.text = tc.Text
		if res.IsError {
			var te struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(tc.Text), &te)
			rec.code = te.Error.Code
			if rec.code == "" {
				rec.code = "tool_error"
			}
		}
	}
	return rec
}

// write creates a note with a unique title; an acknowledged write is
// returned for verification on disk.
func (u *user) write(wing, title string) (callRec, *written) {
	return u.writeArgs(wing, string(noteArgs(u.email, wing, title, "")))
}

// noteArgs are the arguments of a brain_write of a note titled title, with
// an idempotency_key when key is not "".
func noteArgs(email, wing, title, key string) []byte {
	m := map[string]any{"wing": wing, "hall": "facts", "title": title,
		"body": "Written by the fault suite as " + email + ".\n\n" + strings.Repeat("Lorem ipsum dolor sit amet. ", 20)}
	if key != "" {
		m["idempotency_key"] = key
	}
	b, _ := json.Marshal(m)
	return b
}

// writeArgs calls brain_write with args; an acknowledged write is returned
// for verification on disk.
func (u *user) writeArgs(wing, args string) (callRec, *written) {
	rec := u.call("brain_write", wing, args)
	if rec.code != "ok" {
		return rec, nil
	}
	var out struct {
		Path        string `json:"path"`
		ContentHash string `json:"content_hash"`
	}
	if err := json.Unmarshal([]byte(rec.text), &out); err != nil || out.Path == "" {
		rec.code = "bad_answer"
		return rec, nil
	}
	return rec, &written{Path: out.Path, Hash: out.ContentHash, Author: u.email}
}

// recorder collects calls and acknowledged writes from many goroutines.
type recorder struct {
	mu     sync.Mutex
	calls  []callRec
	writes []written
	kws    []*keyedWrite // every keyed write, in the order first sent
}

// keyedWrite is one intended write and every answer it got, each sending
// with the same arguments and idempotency_key.
type keyedWrite struct {
	wing, title, key string
	args             []byte
	codes            []string // the answer of each sending, in order
	acked            *written // the acknowledgement, nil if none
}

// keyed records the answer to one sending of kw.
func (r *recorder) keyed(kw *keyedWrite, code string, w *written) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(kw.codes) == 0 {
		r.kws = append(r.kws, kw)
	}
	kw.codes = append(kw.codes, code)
	if w != nil {
		kw.acked = w
	}
}

func (r *recorder) keyedWrites() []*keyedWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.kws)
}

func (r *recorder) add(rec callRec, w *written) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, rec)
	if w != nil {
		r.writes = append(r.writes, *w)
	}
}

func (r *recorder) snapshot() ([]callRec, []written) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls), slices.Clone(r.writes)
}

// stats summarises calls.
type stats struct {
	n        int
	max, p50 time.Duration
	p99      time.Duration
	codes    map[string]int
}

func summarize(recs []callRec) stats {
	s := stats{n: len(recs), codes: map[string]int{}}
	if len(recs) == 0 {
		return s
	}
	lat := make([]time.Duration, len(recs))
	for i, r := range recs {
		lat[i] = r.latency
		s.codes[r.code]++
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	s.max, s.p50, s.p99 = lat[len(lat)-1], lat[len(lat)/2], lat[len(lat)*99/100]
	return s
}

func (s stats) String() string {
	keys := make([]string, 0, len(s.codes))
	for k := range s.codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.codes[k]))
	}
	return fmt.Sprintf("%d calls, p50 %s, p99 %s, max %s (%s)", s.n, ms(s.p50), ms(s.p99), ms(s.max), strings.Join(parts, ", "))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

func filter(recs []callRec, keep func(callRec) bool) []callRec {
	var out []callRec
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// report records a figure: in the test log, and in $BRAINSTEM_FAULTS_REPORT
// when set (one "test: figure" line each, appended).
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	if p := os.Getenv("BRAINSTEM_FAULTS_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Errorf("report: %v", err)
			return
		}
		fmt.Fprintf(f, "%s: %s\n", t.Name(), line)
		f.Close()
	}
}

// slowest describes the n slowest calls, relative to t0.
func slowest(recs []callRec, n int, t0 time.Time) string {
	recs = slices.Clone(recs)
	sort.Slice(recs, func(i, j int) bool { return recs[i].latency > recs[j].latency })
	var parts []string
	for _, r := range recs[:min(n, len(recs))] {
		parts = append(parts, fmt.Sprintf("%s %s %s %s at %+.3fs", ms(r.latency), r.tool, r.wing, r.code, r.start.Sub(t0).Seconds()))
	}
	return strings.Join(parts, "; ")
}
