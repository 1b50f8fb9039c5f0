package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/internal/logging"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// TestLogLines runs the whole environment (identity provider, shards,
// gateway) with the production logger, makes ordinary and failing calls,
// and checks every JSON log and audit line: no key appears twice in an
// object, one line per refused token names its kind, issuer and client IP
// and never the token, and durations are seconds.
func TestLogLines(t *testing.T) {
	logs, audit := &logcheck.Buffer{}, &logcheck.Buffer{}
	logger, err := logging.New(logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	env := devenvtest.Start(t, devenv.Config{Logger: logger, AuditLog: audit})
	alice, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := env.Token("bob@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := httpClient(t, env.MCPURL, alice)
	call(t, gw, "brain_query", `{"query":"incident"}`)
	call(t, gw, "brain_get", `{"id":"payments/facts/does-not-exist"}`)
	call(t, gw, "brain_get", `{"wing":"nowhere","id":"nowhere/facts/x"}`)
	call(t, httpClient(t, env.MCPURL, bob), "brain_write", `{"wing":"payments","hall":"facts","title":"x","body":"y"}`)

	// Refused tokens: a forged one, an expired-looking garbage one, none.
	forged := alice[:strings.LastIndexByte(alice, '.')] + ".AAAA"
	for _, tok := range []string{forged, "x.y.z", ""} {
		req, _ := http.NewRequest(http.MethodPost, env.MCPURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %.10q: %d", tok, resp.StatusCode)
		}
	}
	if err := env.Close(); err != nil { // flush every component's last lines
		t.Fatal(err)
	}

	refused := 0
	for name, text := range map[string]string{"log": logs.String(), "audit": audit.String()} {
		for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
			if err := logcheck.DuplicateKey(line); err != nil {
				t.Errorf("%s line %d: %v\n%s", name, i+1, err, line)
			}
			for _, tok := range []string{alice, bob, forged} {
				if strings.Contains(line, tok[strings.LastIndexByte(tok, '.'):]) {
					t.Errorf("%s line %d carries a token: %s", name, i+1, line)
				}
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(line), &m)
			if m["msg"] == "token refused" {
				refused++
				if m["kind"] == nil || m["client_ip"] != "127.0.0.1" || m["issuer"] == nil {
					t.Errorf("refused-token line lacks kind, issuer or client_ip: %s", line)
				}
			}
			for k, v := range m {
				if strings.HasSuffix(k, "_seconds") {
					if _, ok := v.(float64); !ok {
						t.Errorf("%s line %d: %s is %T, want seconds", name, i+1, k, v)
					}
				}
			}
		}
	}
	if refused != 2 {
		t.Errorf("%d 'token refused' lines, want 2 (the forged and the garbage token; a missing token is not a refusal)", refused)
	}
	if !strings.Contains(audit.String(), `"duration_seconds":`) {
		t.Error("audit lines lack duration_seconds")
	}
}
