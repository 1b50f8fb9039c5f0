package helmtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// brainstemBin builds ./cmd/brainstem of the enclosing repository once (or
// takes $BRAINSTEM_BIN, which run.sh sets).
var brainstemBin = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("BRAINSTEM_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "helmtest-brainstem")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "brainstem")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/brainstem")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New("go build ./cmd/brainstem: " + err.Error() + "\n" + string(out))
	}
	return bin, nil
})

// checkConfig runs `brainstem gateway --check-config --config <text>`.
func checkConfig(t *testing.T, text string) (string, error) {
	t.Helper()
	bin, err := brainstemBin()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	// The certificate files the config names live in the pods, not here.
	cmd := exec.Command(bin, "gateway", "--check-config", "--check-files=false", "--config", p)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// TestGatewayCheckConfig: the gateway itself accepts the gateway.yaml the
// chart renders for every scenario, and rejects a broken one (so the check
// can fail).
func TestGatewayCheckConfig(t *testing.T) {
	for _, file := range scenarios(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			text := gatewayYAML(t, render(t, []string{file}))
			if out, err := checkConfig(t, text); err != nil {
				t.Fatalf("brainstem gateway --check-config rejects the rendered config: %v\n%s\n---\n%s", err, out, text)
			}
		})
	}
	t.Run("overrides of every tunable", func(t *testing.T) {
		t.Parallel()
		text := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, `
oidc: {issuers: [{url: "https://login.acme.com", audiences: [brainstem], algorithms: [ES256]}], groupsClaim: realm_access.roles, allowedDomains: [acme.com], clockSkew: 1m}
gateway:
  config:
    allowed_origins: ["https://claude.ai"]
    drain_timeout: 10s
    shards: {call_timeout: 5s, max_in_flight: 64, refresh_interval: 5m, retry_base: 50ms}
    limits: {max_body_bytes: 4096, calls_per_second: 0.5, burst: 1, failed_auth_per_minute: 5, fanout_concurrency: 2, client_ip_header: ""}
    grants: {max_entries: 10, idle_ttl: 1h, deny_ttl: 30s}
    log: {format: text, level: debug}
    audit: {log_arguments: true}
`)}))
		if out, err := checkConfig(t, text); err != nil {
			t.Fatalf("rejected: %v\n%s\n---\n%s", err, out, text)
		}
	})
	t.Run("the former sessions key", func(t *testing.T) {
		t.Parallel()
		// gateway.config.sessions is still read for one release: its keys
		// override grants', and the gateway gets grants.
		text := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, `
gateway:
  config:
    sessions: {max_entries: 10, deny_ttl: 30s}
`)}))
		if g := parseGatewayConfig(t, text).Grants; g.MaxEntries != 10 || g.IdleTTL != "30m" || g.DenyTTL != "30s" || strings.Contains(text, "sessions:") {
			t.Fatalf("the former key is not rendered as grants (%+v):\n%s", g, text)
		}
		if out, err := checkConfig(t, text); err != nil {
			t.Fatalf("rejected: %v\n%s\n---\n%s", err, out, text)
		}
	})
	t.Run("broken config is rejected", func(t *testing.T) {
		t.Parallel()
		text := gatewayYAML(t, render(t, []string{defaultValues}))
		for _, bad := range []struct{ from, to, want string }{
			{"calls_per_second: 20", "calls_per_second: 0", "calls_per_second"},
			{"log:\n", "colour: blue\nlog:\n", "colour"},
		} {
			broken := strings.Replace(text, bad.from, bad.to, 1)
			if broken == text {
				t.Fatalf("%q not found in the rendered config", bad.from)
			}
			out, err := checkConfig(t, broken)
			if err == nil || !strings.Contains(out, bad.want) {
				t.Errorf("a config with %q passed the check (err %v):\n%s", bad.to, err, out)
			}
		}
	})
}
