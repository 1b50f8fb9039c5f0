package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
)

// shardProcess is `brainstem shard` running as a child process.
type shardProcess struct {
	cmd  *exec.Cmd
	addr string
	logs chan map[string]any // every JSON log line, after the serving line
	seen []map[string]any    // the log lines up to serving
}

// startShard starts `brainstem shard` with args and waits for its "shard
// serving" log line.
func startShard(t *testing.T, args ...string) *shardProcess {
	t.Helper()
	cmd := brainstem(context.Background(), append([]string{"shard", "--log-format", "json", "--listen", "127.0.0.1:0", "--admin-listen", ""}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &shardProcess{cmd: cmd, logs: make(chan map[string]any, 1024)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stderr)
	for p.addr == "" && sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		p.seen = append(p.seen, m)
		if m["msg"] == "shard serving" {
			p.addr, _ = m["listen"].(string)
		}
	}
	if p.addr == "" {
		t.Fatalf("the shard exited before serving: %v", p.seen)
	}
	go func() {
		defer close(p.logs)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case p.logs <- m:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *shardProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range p.logs { // drain until the process closes stderr
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("the shard did not exit cleanly on SIGTERM: %v", err)
	}
}

// TestShardFlushesOnSIGTERM: a shard writing _index.md behind (here with an
// hour's delay, so that only shutdown can write it) loses nothing on
// SIGTERM: the notes it acknowledged are in _index.md afterwards, and the
// index snapshot it saved makes the next start restore the wing instead of
// reading every note.
func TestShardFlushesOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brainstem shard")
	}
	dir := t.TempDir()
	brain, caDir, pol := filepath.Join(dir, "brain"), filepath.Join(dir, "ca"), filepath.Join(dir, "policy.yaml")
	for _, d := range []string{brain, filepath.Join(brain, "wiki")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb strings.Builder
	for _, args := range [][]string{
		{"ca", "init", "--dir", caDir},
		{"ca", "issue", "--dir", caDir, "--role", "shard", "--name", "localhost,127.0.0.1", "--out", filepath.Join(dir, "shard")},
		{"ca", "issue", "--dir", caDir, "--role", "gateway", "--name", "gateway", "--out", filepath.Join(dir, "gw")},
	} {
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("brainstem %v: %d %s", args, code, errb.String())
		}
	}
	if err := os.WriteFile(pol, []byte("writers:\n  - \"email:alice@example.com\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--brain", brain, "--wing", "payments", "--policy", pol, "--index-delay", "1h",
		"--tls-ca", filepath.Join(dir, "shard", "ca.crt"), "--tls-cert", filepath.Join(dir, "shard", "tls.crt"), "--tls-key", filepath.Join(dir, "shard", "tls.key")}
	sh := startShard(t, args...)

	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "gw", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tlsConf, err := pki.ClientTLS(read("ca.crt"), read("tls.crt"), read("tls.key"), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	c := proto.NewClient(sh.addr, proto.ClientConfig{TLS: tlsConf})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := c.Mint(ctx, &proto.MintRequest{Email: "alice@example.com", NotAfter: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"Settlement cut-off", "Chargeback window"} {
		resp, err := c.Call(ctx, &proto.CallRequest{Token: tok.Token, Tool: "brain_write",
			Args: []byte(`{"title":"` + title + `","body":"Written just before shutdown.","hall":"facts"}`)})
		if err != nil || resp.IsError {
			t.Fatalf("brain_write: %v %s", err, resp.Result)
		}
	}
	toc := filepath.Join(brain, "wiki", "payments", "_index.md")
	if b, _ := os.ReadFile(toc); strings.Contains(string(b), "settlement-cut-off") {
		t.Fatal("_index.md already lists the note: the test cannot tell a flush on shutdown")
	}
	sh.stop(t)
	b, err := os.ReadFile(toc)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"[[payments/facts/settlement-cut-off]] — Settlement cut-off", "[[payments/facts/chargeback-window]] — Chargeback window"} {
		if !strings.Contains(string(b), id) {
			t.Errorf("_index.md after SIGTERM lacks %q:\n%s", id, b)
		}
	}

	// The restart restores the wing from the snapshot saved on shutdown.
	sh = startShard(t, args...)
	restored := false
	for _, m := range sh.seen {
		if m["msg"] == "store: loaded the index snapshot" && m["notes"] == float64(2) {
			restored = true
		}
	}
	if !restored {
		t.Errorf("the restarted shard did not load its snapshot: %v", sh.seen)
	}
	sh.stop(t)
}
