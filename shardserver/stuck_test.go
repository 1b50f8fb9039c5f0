package shardserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadyzWhenWritesStopped: a wing whose branch holds a file named
// "wiki" (a person's commit in the brain) cannot commit what it finds on
// disk; the shard still starts and serves, /readyz says why with the fix
// (200, the pod stays in its Service for reads), /readyz?writes answers
// 503, and the metrics say writes are stopped.
func TestReadyzWhenWritesStopped(t *testing.T) {
	f := newFixture(t)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", f.brain}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+f.brain, "GIT_AUTHOR_NAME=P", "GIT_AUTHOR_EMAIL=p@example.com",
			"GIT_COMMITTER_NAME=P", "GIT_COMMITTER_EMAIL=p@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet", "--initial-branch=main", ".")
	git("add", "-A")
	git("commit", "--quiet", "-m", "notes")
	planted := filepath.Join(t.TempDir(), "planted")
	if err := os.WriteFile(planted, []byte("planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("rm", "-r", "--cached", "--quiet", "wiki")
	git("update-index", "--add", "--cacheinfo", "100644,"+git("hash-object", "-w", planted)+",wiki")
	git("commit", "--quiet", "-m", "a file named wiki")
	if err := os.WriteFile(filepath.Join(f.brain, "wiki/payments/facts/later.md"), []byte("# Later\nwritten while the shard was down\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	srv, err := New(context.Background(), f.config(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("the shard must start: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
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
	go srv.Serve(ctx, pc, admin)
	<-srv.Ready()
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/readyz", http.StatusOK, "not ready for writes: history stuck at wiki/payments/facts/"},
		{"/readyz", http.StatusOK, "fix: remove wiki from branch main"},
		{"/readyz?writes", http.StatusServiceUnavailable, "not ready for writes"},
		{"/healthz", http.StatusOK, "ok payments"},
		{"/metrics", http.StatusOK, `brainstem_shard_writes_stopped{wing="payments"} 1`},
	} {
		resp, err := http.Get("http://" + admin.Addr().String() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("GET %s: %d, want %d with %q:\n%.600s", c.path, resp.StatusCode, c.code, c.want, body)
		}
	}
}
