package proto

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

func TestDeriveStatelessResetKey(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	other := bytes.Repeat([]byte{8}, 32)
	a, err := DeriveStatelessResetKey(secret, "payments")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		secret []byte
		label  string
		same   bool
	}{
		{"same secret and label", secret, "payments", true},
		{"another label", secret, "platform", false},
		{"another secret", other, "payments", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := DeriveStatelessResetKey(tt.secret, tt.label)
			if err != nil {
				t.Fatal(err)
			}
			if (*a == *b) != tt.same {
				t.Fatalf("keys equal = %v, want %v", *a == *b, tt.same)
			}
			if *b == (quic.StatelessResetKey{}) {
				t.Fatal("zero key")
			}
		})
	}
	if _, err := DeriveStatelessResetKey([]byte("short"), "payments"); err == nil {
		t.Fatal("a 5-byte secret was accepted")
	}
}

// killableServer serves on a socket the test owns, so closing the socket
// makes the server vanish without a word, as a killed process does.
type killableServer struct {
	*Server
	pc   net.PacketConn
	done chan struct{}
}

func startKillable(t *testing.T, f *fixture, h Handler, cfg ServerConfig, addr string) *killableServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil {
		cfg.TLS = f.serverTLS(t)
	}
	s := &killableServer{Server: NewServer(h, cfg), pc: pc, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(s.done)
		_ = s.Serve(ctx, pc)
	}()
	<-s.Ready()
	t.Cleanup(func() { cancel(); pc.Close(); <-s.done })
	return s
}

// kill closes the socket: no CONNECTION_CLOSE reaches the clients.
func (s *killableServer) kill() {
	s.pc.Close()
	<-s.done
}

// blockingHandler blocks calls to "block" until their ctx ends, after
// signalling entered; other calls answer name.
func blockingHandler(name string, entered chan<- struct{}) *handler {
	return &handler{
		call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
			if req.Tool == "block" {
				entered <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &CallResponse{Result: []byte(name)}, nil
		},
		health: func(ctx context.Context) (*HealthResponse, error) {
			return &HealthResponse{Wing: name, Ready: true}, nil
		},
	}
}

// TestStatelessResetEndsTheOldConnection: a shard killed and restarted on
// the same address with the same reset key resets its predecessor's
// connection at the client's next packet. The client's idle timeout is an
// hour, so nothing else could end the in-flight call: it fails with
// ErrConnectionLost caused by the reset, and the next call reaches the
// successor.
func TestStatelessResetEndsTheOldConnection(t *testing.T) {
	f := newFixture(t)
	key, err := DeriveStatelessResetKey(f.shardKey, "payments")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 1)
	first := startKillable(t, f, blockingHandler("first", entered), ServerConfig{StatelessResetKey: key}, "127.0.0.1:0")
	addr := first.Addr().String()
	c := newClient(t, f, addr, ClientConfig{QUIC: &quic.Config{MaxIdleTimeout: time.Hour, KeepAlivePeriod: 50 * time.Millisecond}})
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil || string(r.Result) != "first" {
		t.Fatalf("first call: %v %v", r, err)
	}
	inflight := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &CallRequest{Tool: "block"})
		inflight <- err
	}()
	<-entered
	first.kill()
	startKillable(t, f, blockingHandler("second", entered), ServerConfig{StatelessResetKey: key}, addr)

	err = <-inflight
	var reset *quic.StatelessResetError
	if !errors.Is(err, ErrConnectionLost) || errors.Is(err, ErrUnavailable) || !errors.As(err, &reset) {
		t.Fatalf("in-flight call = %v, want ErrConnectionLost caused by a stateless reset", err)
	}
	// A reset means the successor listens: the client is not "down", it
	// redials at once and the next call waits for that dial.
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil || string(r.Result) != "second" {
		t.Fatalf("call after the reset: %v %v", r, err)
	}
	if st := c.State(); st.Losses != 1 || st.Down {
		t.Fatalf("State = %+v, want one loss and not down", st)
	}
}

// TestSilentShardIsGivenUp: a shard that vanishes (and whose successor has
// another reset key) is given up after the idle timeout: the in-flight call
// ends with ErrConnectionLost; the next call waits for the one short redial
// made at once (the silence might have been a stall), which fails; then the
// client is down and fails fast, and a background redial reaches the shard
// once it is back.
func TestSilentShardIsGivenUp(t *testing.T) {
	f := newFixture(t)
	entered := make(chan struct{}, 1)
	first := startKillable(t, f, blockingHandler("first", entered), ServerConfig{}, "127.0.0.1:0")
	addr := first.Addr().String()
	c := newClient(t, f, addr, ClientConfig{
		QUIC:         &quic.Config{MaxIdleTimeout: 300 * time.Millisecond, KeepAlivePeriod: 100 * time.Millisecond},
		ProbeTimeout: 200 * time.Millisecond, RedialMax: 100 * time.Millisecond,
	})
	inflight := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &CallRequest{Tool: "block"})
		inflight <- err
	}()
	<-entered
	first.kill()
	err := <-inflight
	var idle *quic.IdleTimeoutError
	if !errors.Is(err, ErrConnectionLost) || !errors.As(err, &idle) {
		t.Fatalf("in-flight call = %v, want ErrConnectionLost after an idle timeout", err)
	}
	_, err = c.Call(context.Background(), &CallRequest{Tool: "t"})
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnectionLost) {
		t.Fatalf("call after the loss = %v, want ErrUnavailable (the reconnect dial failed)", err)
	}
	if st := c.State(); !st.Down || st.Connected {
		t.Fatalf("State = %+v, want down", st)
	}
	_, err = c.Call(context.Background(), &CallRequest{Tool: "t"})
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "redialing in the background") {
		t.Fatalf("call while down = %v, want a fast ErrUnavailable", err)
	}
	startKillable(t, f, blockingHandler("second", entered), ServerConfig{}, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil || string(r.Result) != "second" {
		t.Fatalf("call after recovery: %v %v", r, err)
	}
}

// TestCallThatNeverLeftIsUnavailable: a call on a client whose shard never
// answered a dial is ErrUnavailable, never ErrConnectionLost.
func TestCallThatNeverLeftIsUnavailable(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f, closedUDPAddr(t), ClientConfig{DialTimeout: 100 * time.Millisecond})
	for i := range 2 { // the dial, then the fast failure while down
		_, err := c.Call(context.Background(), &CallRequest{Tool: "t"})
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnectionLost) {
			t.Fatalf("call %d = %v, want ErrUnavailable only", i, err)
		}
	}
	if st := c.State(); !st.Down || st.DialFailures < 1 {
		t.Fatalf("State = %+v", st)
	}
}
