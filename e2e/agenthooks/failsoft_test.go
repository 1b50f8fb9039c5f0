package agenthooks

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/hooks"
)

// stalledListener accepts connections and never answers, until the test
// ends; it returns its MCP URL.
func stalledListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// TestFailSoft: a gateway that is down, one that never answers, an expired
// sign-in, a token the gateway refuses and garbage on stdin: every hook
// process exits 0 within its time box, prints one JSON object and no
// token, adds no context and blocks nothing, naming the fix (at most one
// systemMessage) where there is one.
func TestFailSoft(t *testing.T) {
	env := startEnv(t)
	repo := gitRepo(t)
	boxes := `{"session_start":{"timeout":"1s"},"prompt":{"timeout":"500ms"},"stop":{"timeout":"1s"},"pre_compact":{"timeout":"1s"}}`
	box := map[string]time.Duration{hooks.NameSessionStart: time.Second, hooks.NamePrompt: 500 * time.Millisecond, hooks.NameStop: time.Second, hooks.NamePreCompact: time.Second}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, p *person)
		garbage bool
		message string // in session-start's systemMessage
	}{
		{"gateway down", func(t *testing.T, p *person) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p.url = "http://" + ln.Addr().String() + "/mcp"
			ln.Close()
			p.store(t, env, p.token, time.Now().Add(time.Hour), "")
		}, false, "did not answer"},
		{"stalled gateway", func(t *testing.T, p *person) {
			p.url = stalledListener(t)
			p.store(t, env, p.token, time.Now().Add(time.Hour), "")
		}, false, ""},
		{"expired sign-in", func(t *testing.T, p *person) {
			p.store(t, env, p.token, time.Now().Add(-time.Minute), "")
		}, false, "brainstem login " + env.MCPURL},
		{"refused token", func(t *testing.T, p *person) {
			p.token = "eyJhbGciOiJub25lIn0.eyJlbWFpbCI6ImFsaWNlQGV4YW1wbGUuY29tIn0.bm90LWEtc2lnbmF0dXJl"
			p.store(t, env, p.token, time.Now().Add(time.Hour), "")
		}, false, "brainstem login " + env.MCPURL},
		{"garbage stdin", func(*testing.T, *person) {}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPerson(t, env, "alice@example.com")
			tc.setup(t, p)
			p.settings(t, boxes)
			transcript := writeTranscript(t, toolUse("toolu_1", "Edit", map[string]any{}))
			for _, e := range hooks.Events() {
				in := input(t, e.Name, "s-"+strings.ReplaceAll(tc.name, " ", "-"), repo, transcript,
					map[string]any{"source": "startup", "prompt": "how do we handle retries on the payment API", "trigger": "auto"})
				if tc.garbage {
					in = "{\"session_id\": \x00 not json"
				}
				a := p.hook(t, e.Name, in, "--url", p.url) // as the plugin runs them
				if a.elapsed > box[e.Name]+2*time.Second {
					t.Errorf("%s took %s; its time box is %s", e.Name, a.elapsed, box[e.Name])
				}
				if a.out.HookSpecificOutput != nil || a.out.Decision != "" {
					t.Errorf("%s answered %s", e.Name, a.stdout)
				}
				msg := a.out.SystemMessage
				if e.Name == hooks.NameSessionStart && !strings.Contains(msg, tc.message) || tc.message == "" && msg != "" {
					t.Errorf("%s: systemMessage %q, want one with %q", e.Name, msg, tc.message)
				}
			}
		})
	}
}
