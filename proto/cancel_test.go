package proto

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// The handler of a call is cancelled when its caller goes away, not only
// when the caller resets the stream (TestCancelResetsStreamAndFreesHandler):
// when the caller's client closes, and when the caller vanishes without a
// word (its process or host is gone), so that a shard never works on for
// a caller who cannot read the answer (issue 34).

// cancelled is a handler whose calls block until their ctx ends, and the
// cause each saw.
type cancelled struct {
	*handler
	entered  chan struct{}
	observed chan error
}

func newCancelled() *cancelled {
	h := &cancelled{handler: &handler{}, entered: make(chan struct{}, 1), observed: make(chan error, 1)}
	h.handler.call = func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		h.entered <- struct{}{}
		<-ctx.Done()
		h.observed <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	return h
}

// wait runs a call on c, lets leave end the caller once the handler runs,
// and returns the cause the handler's ctx ended with.
func (h *cancelled) wait(t *testing.T, c *Client, leave func()) error {
	t.Helper()
	go c.Call(context.Background(), &CallRequest{Tool: "slow"})
	<-h.entered
	leave()
	select {
	case cause := <-h.observed:
		return cause
	case <-time.After(30 * time.Second):
		t.Fatal("the handler's context was not cancelled after its caller went away")
		return nil
	}
}

func TestClientCloseCancelsHandler(t *testing.T) {
	f := newFixture(t)
	h := newCancelled()
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	cause := h.wait(t, c, func() { c.Close() })
	var ae *quic.ApplicationError
	if !errors.Is(cause, errStreamEnded) || !errors.As(cause, &ae) || ae.ErrorCode != connCodeClosed || !ae.Remote {
		t.Fatalf("handler ctx cause = %v, want the caller's connection closed", cause)
	}
}

func TestSilentClientCancelsHandler(t *testing.T) {
	f := newFixture(t)
	h := newCancelled()
	short := &quic.Config{MaxIdleTimeout: 300 * time.Millisecond, KeepAlivePeriod: 100 * time.Millisecond}
	srv := startServer(t, f, h, ServerConfig{QUIC: short}, "127.0.0.1:0")
	r := newMute(t, srv.Addr().String())
	c := newClient(t, f, r.addr(), ClientConfig{QUIC: short})
	cause := h.wait(t, c, func() { r.silent.Store(true) })
	var idle *quic.IdleTimeoutError
	if !errors.Is(cause, errStreamEnded) || !errors.As(cause, &idle) {
		t.Fatalf("handler ctx cause = %v, want the connection's idle timeout", cause)
	}
}

// mute relays UDP between one client and a server until silent is set;
// then it drops every packet, as if the client's host were gone.
type mute struct {
	pc     net.PacketConn
	silent atomic.Bool
}

func newMute(t *testing.T, server string) *mute {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up, err := net.Dial("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close(); up.Close() })
	m := &mute{pc: pc}
	var client atomic.Pointer[net.Addr]
	go func() { // client → server
		buf := make([]byte, 64<<10)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			client.Store(&from)
			if !m.silent.Load() {
				up.Write(buf[:n])
			}
		}
	}()
	go func() { // server → client
		buf := make([]byte, 64<<10)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			if to := client.Load(); to != nil && !m.silent.Load() {
				pc.WriteTo(buf[:n], *to)
			}
		}
	}()
	return m
}

func (m *mute) addr() string { return m.pc.LocalAddr().String() }
