package shardserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
)

// fixture is a brain with one note and a skipped file, a policy file, and
// an in-memory CA with a shard identity and a gateway client configuration.
type fixture struct {
	brain, policy string
	shardID       pki.Identity
	gateway       pki.Identity
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{brain: filepath.Join(dir, "brain"), policy: filepath.Join(dir, "policy.yaml")}
	for rel, content := range map[string]string{
		"wiki/payments/facts/good.md":  "# Good\nok\n",
		"wiki/payments/facts/Upper.md": "# Skipped\nx\n",
	} {
		p := filepath.Join(f.brain, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy(t, f.policy, "readers: [\"*\"]\n")
	ca, err := pki.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []struct {
		role  pki.Role
		names []string
		into  *pki.Identity
	}{{pki.RoleShard, []string{"localhost"}, &f.shardID}, {pki.RoleGateway, []string{"gateway"}, &f.gateway}} {
		cert, key, err := ca.Issue(id.role, id.names, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		*id.into = pki.Identity{CA: ca.CertPEM(), Cert: cert, Key: key}
	}
	return f
}

func writePolicy(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) config(logger *slog.Logger) Config {
	return Config{
		Shard:    shard.Config{Brain: f.brain, Wing: "payments", PolicyFile: f.policy, PolicyPoll: -1, Logger: logger, Version: "test"},
		Identity: f.shardID,
	}
}

// messages is a slog handler that sends every record's message on a channel.
type messages chan string

func (m messages) Enabled(context.Context, slog.Level) bool { return true }
func (m messages) Handle(_ context.Context, r slog.Record) error {
	select {
	case m <- r.Message:
	default:
	}
	return nil
}
func (m messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m messages) WithGroup(string) slog.Handler      { return m }

func (m messages) waitFor(t *testing.T, msg string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-m:
			if got == msg {
				return
			}
		case <-timeout:
			t.Fatalf("no %q log line", msg)
		}
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestServeProbesMetricsAndDrain serves a wing on loopback: a gateway
// mints and calls over QUIC; the admin listener answers the probes and the
// metrics (Go, process, the shard's own, skipped files); a policy reload
// on request is in force for the next call; cancelling the context drains
// and Serve returns, /readyz then says draining while /healthz stays ok,
// and Close closes the wing.
func TestServeProbesMetricsAndDrain(t *testing.T) {
	f := newFixture(t)
	logs := make(messages, 1024)
	reload := make(chan os.Signal, 1)
	cfg := f.config(slog.New(logs))
	cfg.Reload = reload
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, pc, admin) }()
	<-srv.Ready()

	adminURL := "http://" + admin.Addr().String()
	for path, want := range map[string]string{
		"/healthz": "ok payments 1 notes",
		"/readyz":  "ok payments 1 notes",
		"/metrics": `brainstem_shard_skipped_files{kind="name",wing="payments"} 1`,
	} {
		resp, err := http.Get(adminURL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%.500s", path, resp.StatusCode, want, body)
		}
		if path == "/metrics" {
			for _, series := range []string{"go_goroutines", "process_resident_memory_bytes", "brainstem_shard_idempotency_keys"} {
				if !strings.Contains(string(body), series) {
					t.Errorf("/metrics lacks %s", series)
				}
			}
		}
	}

	tc, err := f.gateway.ClientTLS("localhost")
	if err != nil {
		t.Fatal(err)
	}
	c := proto.NewClient(pc.LocalAddr().String(), proto.ClientConfig{TLS: tc})
	defer c.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	if _, err := c.Mint(cctx, &proto.MintRequest{Email: "alice@example.com", NotAfter: time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("mint: %v", err)
	}

	// SIGHUP: the new policy (nobody) is in force for the next mint.
	writePolicy(t, f.policy, "readers: [\"email:bob@example.com\"]\n")
	reload <- syscall.SIGHUP
	logs.waitFor(t, "policy reloaded")
	var pe *proto.Error
	if _, err := c.Mint(cctx, &proto.MintRequest{Email: "alice@example.com", NotAfter: time.Now().Add(time.Hour)}); !errors.As(err, &pe) || pe.Code != proto.CodeForbidden {
		t.Fatalf("mint after the reload: %v, want forbidden", err)
	}

	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if code, body := get(t, srv.AdminHandler(), "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz after the drain: %d %q, want 503 draining", code, body)
	}
	if code, _ := get(t, srv.AdminHandler(), "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after the drain: %d, want 200", code)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(context.Background(), pc, nil); err == nil {
		t.Error("a second Serve succeeded")
	}
}

// TestCloseStopsServe: Close ends a running Serve (drained) before it
// closes the wing, and a later Close does nothing.
func TestCloseStopsServe(t *testing.T) {
	f := newFixture(t)
	srv, err := New(context.Background(), f.config(nil))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), pc, nil) }()
	<-srv.Ready()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestValidate: every problem of a configuration is reported at once, and
// nothing is opened.
func TestValidate(t *testing.T) {
	f := newFixture(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writePolicy(t, bad, "readers: [\"nobody\"]\n")
	tests := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"valid", func(*Config) {}, nil},
		{"nothing", func(c *Config) { *c = Config{} }, []string{"--brain and --wing are required", "[--tls-ca --tls-cert --tls-key --policy] required to serve over QUIC"}},
		{"TLS files instead of an identity", func(c *Config) {
			c.Identity = pki.Identity{}
			c.TLS = pki.Files{CA: "ca.crt", Cert: "tls.crt"}
		}, []string{"[--tls-key] required"}},
		{"a fixed policy instead of a file", func(c *Config) { c.Shard.PolicyFile, c.Shard.Policy.Readers = "", []string{"*"} }, nil},
		{"bad policy", func(c *Config) { c.Shard.PolicyFile = bad }, []string{"nobody"}},
		{"hit cache off", func(c *Config) { c.Shard.HitCacheBytes = -1 }, nil},
		{"bad hit cache bound", func(c *Config) { c.Shard.HitCacheBytes = -2 }, []string{"--hit-cache-bytes -2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := f.config(nil)
			tt.edit(&cfg)
			err := cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate: %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v, want it to say %q", err, w)
				}
			}
			if _, err := New(context.Background(), cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("New: %v, want ErrConfig", err)
			}
		})
	}
}

// TestTLSFromFiles: a shard identity read from files serves, and a missing
// file is an error naming its flag.
func TestTLSFromFiles(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	files := pki.Files{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"),
		CAName: "--tls-ca", CertName: "--tls-cert", KeyName: "--tls-key"}
	for p, b := range map[string][]byte{files.CA: f.shardID.CA, files.Cert: f.shardID.Cert} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.config(nil)
	cfg.Identity, cfg.TLS = pki.Identity{}, files
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--tls-key: open ") {
		t.Fatalf("New without the key file: %v", err)
	}
	if err := os.WriteFile(files.Key, f.shardID.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSkippedFilesMetric: brainstem_shard_skipped_files exports the files
// the shard does not load, by kind, on the admin endpoint's /metrics.
func TestSkippedFilesMetric(t *testing.T) {
	f := newFixture(t)
	for _, rel := range []string{"wiki/payments/facts/ends-in-dash-.md", "wiki/payments/loose.md"} {
		p := filepath.Join(f.brain, filepath.FromSlash(rel))
		if err := os.WriteFile(p, []byte("# Bad\nx\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(context.Background(), f.config(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, body := get(t, srv.AdminHandler(), "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for kind, n := range map[string]string{"name": "2", "place": "1", "type": "0", "size": "0", "read": "0"} {
		want := `brainstem_shard_skipped_files{kind="` + kind + `",wing="payments"} ` + n + "\n"
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// Ready is closed once Serve listens for QUIC (it is never closed when
// Serve fails first).
func (s *Server) Ready() <-chan struct{} { return s.quic.Ready() }

// AdminHandler serves /healthz, /readyz, /metrics and POST
// /remote/webhook (a git host's signed push event: a pull at once).
func (s *Server) AdminHandler() http.Handler { return s.admin }
