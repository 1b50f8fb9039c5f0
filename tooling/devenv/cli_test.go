package devenv

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEveryBusyPortAtOnce: Start tries every port before it starts
// anything and reports each busy one, with its address and the flag that
// moves it, in one ErrUsage.
func TestEveryBusyPortAtOnce(t *testing.T) {
	gw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	shard, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shard.Close()
	gwPort, shardPort := gw.Addr().(*net.TCPAddr).Port, shard.LocalAddr().(*net.UDPAddr).Port
	// The first wing's shard port is the one held; the others are free.
	env, err := Start(context.Background(), Config{Data: t.TempDir(), GatewayPort: gwPort, ShardBasePort: shardPort})
	if err == nil {
		env.Close()
		t.Fatal("Start succeeded on busy ports")
	}
	var pe *PortsError
	if !errors.As(err, &pe) || !errors.Is(err, ErrUsage) || len(pe.Ports) != 2 {
		t.Fatalf("Start: %v, want a PortsError (ErrUsage) naming 2 ports", err)
	}
	for _, want := range []string{"2 ports are taken", gw.Addr().String() + " ", "gateway (--port)", shard.LocalAddr().String() + " ", "payments, UDP (--shard-port)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
}

// TestConfigValidate: a host elsewhere than loopback, a port out of range
// and a token lifetime under a minute are usage errors, all reported.
func TestConfigValidate(t *testing.T) {
	err := Config{Host: "10.0.0.1", GatewayPort: 70000, TokenTTL: 30 * time.Second}.Validate()
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("Validate: %v, want ErrUsage", err)
	}
	for _, want := range []string{`--host "10.0.0.1"`, "--port 70000", "--token-ttl 30s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
	if err := (Config{TokenTTL: time.Minute}).Validate(); err != nil {
		t.Errorf("a valid config: %v", err)
	}
}

// TestMainRemovesTheTemporaryLogs: `brainstem dev` without --data stops
// cleanly on Ctrl-C and leaves nothing in the temporary directory (the
// brain copy and the log directory are both removed), unless --keep-logs.
func TestMainRemovesTheTemporaryLogs(t *testing.T) {
	for _, keep := range []bool{false, true} {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		fs := flag.NewFlagSet("dev", flag.ContinueOnError)
		o := Flags(fs)
		args := []string{"--port", "0", "--admin-port", "0", "--idp-port", "0", "--shard-port", "0"}
		if keep {
			args = append(args, "--keep-logs")
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		out := &readyWriter{ready: make(chan struct{})}
		done := make(chan error, 1)
		go func() { done <- Main(ctx, o, "test", out) }()
		select {
		case <-out.ready:
		case err := <-done:
			t.Fatalf("Main: %v\n%s", err, out.text())
		case <-time.After(time.Minute):
			t.Fatalf("not ready:\n%s", out.text())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Main after Ctrl-C: %v", err)
		}
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range left {
			names = append(names, d.Name())
		}
		want := 0
		if keep {
			want = 1
		}
		if len(names) != want || keep && !strings.HasPrefix(names[0], "brainstem-dev-logs-") {
			t.Errorf("keep-logs %v: left %v in the temporary directory", keep, names)
		}
	}
}

// readyWriter collects what Main prints and closes ready at the banner's
// last line.
type readyWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	ready chan struct{}
	once  sync.Once
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), "Press Ctrl-C to stop.") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *readyWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

var _ io.Writer = (*readyWriter)(nil)

// TestStatusBetweenIndexAndReady: Start says what it does after each
// wing's index is built (its history opens) and before the banner (the
// gateway starts), in order.
func TestStatusBetweenIndexAndReady(t *testing.T) {
	var mu sync.Mutex
	var said []string
	env, err := Start(context.Background(), Config{Data: t.TempDir(), Status: func(m string) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, m)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	got := strings.Join(said, "\n")
	want := []string{"payments: loading notes…", "payments: opening history…", "payments: ready (" + strconv.FormatInt(env.Notes["payments"], 10) + " notes",
		"platform: opening history…", "gateway: starting…"}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("Status did not say %q after %q:\n%s", w, got[:at], got)
		}
		at += i + len(w)
	}
}
