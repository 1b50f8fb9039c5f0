package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/signin"
)

// secretToken is the access token of the tests' sign-ins: no output may
// hold it.
const secretToken = "hooks-test-secret-token-0123456789abcdef"

// signedIn stores a sign-in to mcpURL in a new configuration directory and
// returns the directory.
func signedIn(t *testing.T, mcpURL string, expires time.Time, refresh string) string {
	t.Helper()
	dir := t.TempDir()
	rec := &signin.Record{Version: signin.RecordVersion, MCPURL: mcpURL, Issuer: "http://127.0.0.1:9", TokenEndpoint: "http://127.0.0.1:9/token",
		ClientID: "client", AccessToken: secretToken, TokenType: "Bearer", ExpiresAt: expires, RefreshToken: refresh,
		Email: "alice@example.com", SignedInAt: time.Now()}
	if err := (&signin.Store{Dir: filepath.Join(dir, "signins")}).Save(rec); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeSettings writes hooks.json into dir.
func writeSettings(t *testing.T, dir, doc string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, SettingsFile), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// closedURL is the MCP URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	return u
}

// stalledURL is the MCP URL of a listener that accepts connections and
// never answers.
func stalledURL(t *testing.T) string {
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

// hookRun is one Run's answer.
type hookRun struct {
	out     Output
	raw     string
	elapsed time.Duration
}

func runHook(t *testing.T, name string, opt Options, stdin io.Reader) hookRun {
	t.Helper()
	var out bytes.Buffer
	opt.In, opt.Out = stdin, &out
	if opt.CacheDir == "" {
		opt.CacheDir = t.TempDir()
	}
	start := time.Now()
	if err := Run(context.Background(), name, opt); err != nil {
		t.Fatalf("Run: %v", err)
	}
	r := hookRun{raw: out.String(), elapsed: time.Since(start)}
	dec := json.NewDecoder(strings.NewReader(r.raw))
	if err := dec.Decode(&r.out); err != nil || dec.More() || !strings.HasSuffix(r.raw, "}\n") {
		t.Fatalf("the answer is not one JSON object: %q (%v)", r.raw, err)
	}
	if strings.Contains(r.raw, secretToken) {
		t.Fatalf("the answer holds the token: %s", r.raw)
	}
	return r
}

func input(name string) string {
	ev := event(name)
	return `{"session_id":"s-` + name + `","transcript_path":"","cwd":"/","hook_event_name":"` + ev.Claude +
		`","source":"startup","prompt":"how do we handle retries on the payment API","trigger":"auto"}`
}

// TestFailSoft: a gateway down or stalled, an expired or missing sign-in,
// garbage or endless stdin, a broken settings file: every hook answers one
// JSON object, within its time box, without the token, and at most with a
// systemMessage naming the fix.
func TestFailSoft(t *testing.T) {
	fresh, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	down := closedURL(t)
	stalled := stalledURL(t)
	for _, tc := range []struct {
		name    string
		config  func(t *testing.T) string // the configuration directory
		url     string
		stdin   func(name string) io.Reader
		message string // the systemMessage session-start answers ("" none)
	}{
		{"gateway down", func(t *testing.T) string { return signedIn(t, down, fresh, "") }, down, nil, "did not answer"},
		{"stalled gateway", func(t *testing.T) string {
			d := signedIn(t, stalled, fresh, "")
			writeSettings(t, d, `{"session_start":{"timeout":"300ms"},"prompt":{"timeout":"300ms"},"stop":{"timeout":"300ms"},"pre_compact":{"timeout":"300ms"}}`)
			return d
		}, stalled, nil, ""},
		{"expired sign-in", func(t *testing.T) string { return signedIn(t, down, past, "") }, down, nil, "brainstem login " + down},
		{"refresh fails", func(t *testing.T) string { return signedIn(t, down, past, "refresh-token") }, down, nil, ""},
		{"not signed in", func(t *testing.T) string { return t.TempDir() }, "", nil, "not signed in"},
		{"garbage stdin", func(t *testing.T) string { return signedIn(t, down, fresh, "") }, down,
			func(string) io.Reader { return strings.NewReader("\x00garbage{") }, ""},
		{"endless stdin", func(t *testing.T) string {
			d := signedIn(t, down, fresh, "")
			writeSettings(t, d, `{"session_start":{"timeout":"200ms"},"prompt":{"timeout":"200ms"},"stop":{"timeout":"200ms"},"pre_compact":{"timeout":"200ms"}}`)
			return d
		}, down, func(string) io.Reader { r, w := io.Pipe(); t.Cleanup(func() { w.Close() }); return r }, ""},
		{"broken settings", func(t *testing.T) string {
			d := signedIn(t, down, fresh, "")
			writeSettings(t, d, `{"prompt":{"timeout":"forever"}}`)
			return d
		}, down, nil, SettingsFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.config(t)
			settings, _ := LoadSettings(settingsPath(dir))
			for _, e := range Events() {
				var in io.Reader = strings.NewReader(input(e.Name))
				if tc.stdin != nil {
					in = tc.stdin(e.Name)
				}
				r := runHook(t, e.Name, Options{URL: tc.url, ConfigDir: dir}, in)
				box := time.Duration(settings.For(e.Name).Timeout)
				if r.elapsed > box+time.Second {
					t.Errorf("%s took %s, its time box is %s", e.Name, r.elapsed, box)
				}
				if r.out.HookSpecificOutput != nil || r.out.Decision != "" {
					t.Errorf("%s answered %s", e.Name, r.raw)
				}
				if e.Name == NameSessionStart && !strings.Contains(r.out.SystemMessage, tc.message) ||
					tc.message == "" && r.out.SystemMessage != "" {
					t.Errorf("%s: systemMessage %q, want one with %q", e.Name, r.out.SystemMessage, tc.message)
				}
			}
		})
	}
}

// TestWarnsOncePerSession: the fix is named once; the session's next
// hooks say nothing.
func TestWarnsOncePerSession(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	opt := Options{ConfigDir: dir, CacheDir: cache}
	first := runHook(t, NameSessionStart, opt, strings.NewReader(input(NameSessionStart)))
	if !strings.Contains(first.out.SystemMessage, "brainstem login") {
		t.Fatalf("first answer: %s", first.raw)
	}
	for _, name := range []string{NameSessionStart, NameStop} {
		in := strings.Replace(input(name), `"s-`+name+`"`, `"s-session-start"`, 1)
		if r := runHook(t, name, opt, strings.NewReader(in)); r.raw != "{}\n" {
			t.Errorf("%s after the warning: %s", name, r.raw)
		}
	}
}

// TestDisabled: a hook turned off answers {} and calls nothing.
func TestDisabled(t *testing.T) {
	dir := signedIn(t, stalledURL(t), time.Now().Add(time.Hour), "")
	writeSettings(t, dir, `{"prompt":{"enabled":false},"session_start":{"enabled":false}}`)
	for _, name := range []string{NamePrompt, NameSessionStart} {
		if r := runHook(t, name, Options{ConfigDir: dir}, strings.NewReader(input(name))); r.raw != "{}\n" || r.elapsed > time.Second {
			t.Errorf("%s: %s after %s", name, r.raw, r.elapsed)
		}
	}
}

func TestRunUnknownHook(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), "post-tool-use", Options{In: strings.NewReader("{}"), Out: &out}); !errors.Is(err, ErrUsage) || out.Len() != 0 {
		t.Fatalf("Run: %v, %q", err, out.String())
	}
}

// TestSettings: the defaults, a file that sets some keys (the others keep
// their defaults), and the refusals.
func TestSettings(t *testing.T) {
	dir := t.TempDir()
	if s, err := LoadSettings(settingsPath(dir)); err != nil || s != DefaultSettings() {
		t.Fatalf("no file: %+v, %v", s, err)
	}
	writeSettings(t, dir, `{"url":"https://brain.acme.com/mcp","prompt":{"min_score":3.5,"timeout":"750ms"},"stop":{"enabled":false}}`)
	s, err := LoadSettings(settingsPath(dir))
	want := DefaultSettings()
	want.URL, want.Prompt.MinScore, want.Prompt.Timeout, want.Stop.Enabled = "https://brain.acme.com/mcp", 3.5, Duration(750*time.Millisecond), false
	if err != nil || s != want {
		t.Fatalf("LoadSettings = %+v, %v; want %+v", s, err, want)
	}
	for _, bad := range []string{`{"prompt":{"timeout":"10ms"}}`, `{"prompt":{"min_coverage":2}}`, `{"promt":{}}`, `{"stop":{"timeout":5}}`, `[`} {
		writeSettings(t, dir, bad)
		if s, err := LoadSettings(settingsPath(dir)); !errors.Is(err, ErrSettings) || s != DefaultSettings() {
			t.Errorf("%s: %+v, %v", bad, s, err)
		}
	}
}
