package proto

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/search"
	"github.com/quic-go/quic-go"
)

func TestALPNMatchesPKI(t *testing.T) {
	if ALPN != pki.ALPN {
		t.Fatalf("proto.ALPN %q != pki.ALPN %q", ALPN, pki.ALPN)
	}
}

func TestAllMessages(t *testing.T) {
	f := newFixture(t)
	type seen struct {
		id   string
		peer Peer
	}
	got := make(chan seen, 10)
	h := &handler{
		call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
			got <- seen{id: RequestIDFrom(ctx)}
			return &CallResponse{Result: append([]byte("echo:"), req.Args...), IsError: req.Tool == "fails"}, nil
		},
		mint: func(ctx context.Context, peer Peer, req *MintRequest) (*MintResponse, error) {
			got <- seen{id: RequestIDFrom(ctx), peer: peer}
			return &MintResponse{Token: "tok:" + req.Email + ":" + strings.Join(req.Groups, ","), Caps: []string{"read", "write"}, Expiry: req.NotAfter}, nil
		},
		listTools: func(ctx context.Context) (*ListToolsResponse, error) {
			got <- seen{id: RequestIDFrom(ctx)}
			return &ListToolsResponse{Tools: []byte(`[{"name":"brain_get"}]`)}, nil
		},
	}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	ctx := context.Background()

	cr, err := c.Call(ctx, &CallRequest{RequestID: "call-1", Token: "t", Tool: "fails", Args: []byte(`{"a":1}`)})
	if err != nil || string(cr.Result) != `echo:{"a":1}` || !cr.IsError {
		t.Fatalf("Call = %+v, %v", cr, err)
	}
	if s := <-got; s.id != "call-1" {
		t.Errorf("handler saw request id %q, want call-1", s.id)
	}

	notAfter := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mr, err := c.Mint(ctx, &MintRequest{RequestID: "mint-1", Email: "ada@acme.com", Groups: []string{"eng", "ops"}, NotAfter: notAfter})
	if err != nil || mr.Token != "tok:ada@acme.com:eng,ops" || !mr.Expiry.Equal(notAfter) || len(mr.Caps) != 2 {
		t.Fatalf("Mint = %+v, %v", mr, err)
	}
	if s := <-got; s.id != "mint-1" || s.peer != (Peer{Role: "gateway", CommonName: "gateway-test"}) {
		t.Errorf("Mint handler saw %+v", s)
	}

	lt, err := c.ListTools(WithRequestID(ctx, "lt-1"))
	if err != nil || string(lt.Tools) != `[{"name":"brain_get"}]` {
		t.Fatalf("ListTools = %+v, %v", lt, err)
	}
	if s := <-got; s.id != "lt-1" {
		t.Errorf("ListTools handler saw request id %q", s.id)
	}
	// Without an id the client generates one.
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.id == "" {
		t.Error("no generated request id")
	}

	st, err := c.Stats(ctx, &StatsRequest{StatsRequest: search.StatsRequest{Terms: []string{"keys"}}})
	if err != nil || st.Stats.Docs != 3 || st.Stats.DocFreq["keys"] != 2 || st.Generation != 7 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	q := search.Query{Text: "idempotency keys", Terms: []string{"idempotency", "keys"}, Tokens: 2, Limit: 10}
	rk, err := c.Rank(ctx, &RankRequest{Token: "t", RankRequest: search.RankRequest{Query: q, Stats: &st.Stats, Generation: 7}})
	if err != nil || len(rk.Ranked) != 2 || rk.Ranked[1] != (search.Ranked{Key: "keys", Score: 1.5}) || rk.Total != 2 {
		t.Fatalf("Rank = %+v, %v", rk, err)
	}
	fr, err := c.Fetch(ctx, &FetchRequest{Token: "t", FetchRequest: search.FetchRequest{Query: q, Keys: []string{"w/facts/a"}}})
	if err != nil || len(fr.Hits) != 1 || string(fr.Hits[0]) != `{"id":"w/facts/a"}` {
		t.Fatalf("Fetch = %+v, %v", fr, err)
	}
	hr, err := c.Health(ctx)
	if err != nil || *hr != (HealthResponse{Wing: "payments", Ready: true, Notes: 7, Version: "test"}) {
		t.Fatalf("Health = %+v, %v", hr, err)
	}
	if !c.Connected() {
		t.Error("Connected() = false after successful calls")
	}
}

func TestMutualTLS(t *testing.T) {
	f := newFixture(t)
	other := newFixture(t) // another CA
	srv := startServer(t, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	addr := srv.Addr().String()

	noCert, err := pki.ClientTLS(f.ca.CertPEM(), f.gwCert, f.gwKey, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	noCert.Certificates = nil

	tests := []struct {
		name       string
		tls        *tls.Config
		connect    bool
		mintCode   Code
		mintWorked bool
	}{
		{"no client certificate", noCert, false, 0, false},
		{"certificate from another CA", other.clientTLS(t, pki.RoleGateway), false, 0, false},
		{"shard certificate", f.clientTLS(t, pki.RoleShard), true, CodeWrongRole, false},
		{"gateway certificate", f.clientTLS(t, pki.RoleGateway), true, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, f, addr, ClientConfig{TLS: tt.tls, DialTimeout: 2 * time.Second})
			ctx := context.Background()
			_, herr := c.Health(ctx)
			mr, merr := c.Mint(ctx, &MintRequest{Email: "ada@acme.com"})
			if !tt.connect {
				if !isUnavailable(herr) || !isUnavailable(merr) {
					t.Fatalf("Health err = %v, Mint err = %v; want ErrUnavailable", herr, merr)
				}
				return
			}
			if herr != nil {
				t.Fatalf("Health: %v", herr)
			}
			if tt.mintWorked {
				if merr != nil || mr.Token != "token-for-ada@acme.com" {
					t.Fatalf("Mint = %+v, %v", mr, merr)
				}
				return
			}
			if CodeOf(merr) != tt.mintCode {
				t.Fatalf("Mint err = %v, want code %s", merr, tt.mintCode)
			}
		})
	}

	// The client refuses a server that is not a shard (a gateway cert
	// cannot serve: it lacks server auth; and the role is checked too).
	t.Run("client refuses a server of another CA", func(t *testing.T) {
		srv2 := startServer(t, other, &handler{}, ServerConfig{}, "127.0.0.1:0")
		c := newClient(t, f, srv2.Addr().String(), ClientConfig{DialTimeout: 2 * time.Second})
		if _, err := c.Health(context.Background()); !isUnavailable(err) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
}

func TestConcurrentCallsShareOneConnection(t *testing.T) {
	f := newFixture(t)
	srv := startServer(t, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := fmt.Appendf(nil, `{"i":%d}`, i)
			r, err := c.Call(context.Background(), &CallRequest{Tool: "t", Args: args})
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(r.Result, args) {
				errs <- fmt.Errorf("call %d got %q", i, r.Result)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	srv.mu.Lock()
	conns := len(srv.conns)
	srv.mu.Unlock()
	if conns != 1 {
		t.Fatalf("server has %d connections, want 1 (one shared dial)", conns)
	}
}

func TestCancelResetsStreamAndFreesHandler(t *testing.T) {
	f := newFixture(t)
	entered := make(chan struct{})
	observed := make(chan error, 1)
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		close(entered)
		<-ctx.Done()
		observed <- context.Cause(ctx)
		return nil, ctx.Err()
	}}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &CallRequest{Tool: "slow"})
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call err = %v, want context.Canceled", err)
	}
	cause := <-observed
	var se *quic.StreamError
	if !errors.Is(cause, errStreamEnded) || !errors.As(cause, &se) || se.ErrorCode != streamCodeCanceled || !se.Remote {
		t.Fatalf("handler ctx cause = %v, want the caller's stream reset", cause)
	}
	// The connection survives a cancelled stream.
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatalf("Health after cancel: %v", err)
	}
}

func TestDeadlinePropagation(t *testing.T) {
	f := newFixture(t)
	type result struct {
		dl  time.Time
		ok  bool
		err error
	}
	seen := make(chan result, 1)
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		dl, ok := ctx.Deadline()
		if req.Tool == "wait" {
			<-ctx.Done()
			seen <- result{dl, ok, ctx.Err()}
			return nil, ctx.Err()
		}
		seen <- result{dl, ok, nil}
		return &CallResponse{}, nil
	}}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})

	t.Run("no deadline", func(t *testing.T) {
		if _, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil {
			t.Fatal(err)
		}
		if r := <-seen; r.ok {
			t.Fatalf("handler has deadline %v; the caller had none", r.dl)
		}
	})
	t.Run("deadline travels", func(t *testing.T) {
		want := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.Background(), want)
		defer cancel()
		if _, err := c.Call(ctx, &CallRequest{Tool: "t"}); err != nil {
			t.Fatal(err)
		}
		r := <-seen
		// Sent as the remaining duration: the handler's deadline is the
		// caller's shifted by the transit time (same clock here).
		if !r.ok || r.dl.Before(want.Add(-time.Minute)) || r.dl.After(want.Add(time.Minute)) {
			t.Fatalf("handler deadline %v (ok=%v), caller's %v", r.dl, r.ok, want)
		}
	})
	t.Run("deadline expires", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Call(ctx, &CallRequest{Tool: "wait"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Call err = %v, want context.DeadlineExceeded", err)
		}
		if r := <-seen; !errors.Is(r.err, context.DeadlineExceeded) && !errors.Is(r.err, context.Canceled) {
			t.Fatalf("handler ctx err = %v", r.err)
		}
	})
	t.Run("already expired", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		if _, err := c.Call(ctx, &CallRequest{Tool: "t"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTooLarge(t *testing.T) {
	f := newFixture(t)
	var calls atomic.Int32
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		calls.Add(1)
		switch req.Tool {
		case "big": // over the server's limit
			return &CallResponse{Result: bytes.Repeat([]byte("r"), 8<<10)}, nil
		case "3k": // within the server's limit, over the small client's
			return &CallResponse{Result: bytes.Repeat([]byte("r"), 3<<10)}, nil
		}
		return &CallResponse{Result: req.Args}, nil
	}}
	srv := startServer(t, f, h, ServerConfig{MaxMessageBytes: 4 << 10}, "127.0.0.1:0")
	addr := srv.Addr().String()
	big := bytes.Repeat([]byte("a"), 6<<10)

	t.Run("client refuses before sending", func(t *testing.T) {
		c := newClient(t, f, addr, ClientConfig{MaxMessageBytes: 1 << 10})
		before := calls.Load()
		if _, err := c.Call(context.Background(), &CallRequest{Tool: "t", Args: big}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if c.Connected() || calls.Load() != before {
			t.Fatal("an over-limit request was sent")
		}
	})
	t.Run("server refuses a large request", func(t *testing.T) {
		c := newClient(t, f, addr, ClientConfig{})
		before := calls.Load()
		_, err := c.Call(context.Background(), &CallRequest{Tool: "t", Args: big})
		if CodeOf(err) != CodeTooLarge {
			t.Fatalf("err = %v, want CodeTooLarge", err)
		}
		if calls.Load() != before {
			t.Fatal("the handler ran for an over-limit request")
		}
		if _, err := c.Health(context.Background()); err != nil {
			t.Fatalf("connection unusable after refusal: %v", err)
		}
	})
	t.Run("server refuses to send a large response", func(t *testing.T) {
		c := newClient(t, f, addr, ClientConfig{})
		if _, err := c.Call(context.Background(), &CallRequest{Tool: "big"}); CodeOf(err) != CodeTooLarge {
			t.Fatalf("err = %v, want CodeTooLarge", err)
		}
	})
	t.Run("client refuses a large response", func(t *testing.T) {
		c := newClient(t, f, addr, ClientConfig{MaxMessageBytes: 2 << 10})
		if _, err := c.Call(context.Background(), &CallRequest{Tool: "t", Args: bytes.Repeat([]byte("a"), 1<<10)}); err != nil {
			t.Fatalf("within limits: %v", err)
		}
		if _, err := c.Call(context.Background(), &CallRequest{Tool: "3k"}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
		if _, err := c.Health(context.Background()); err != nil {
			t.Fatalf("connection unusable after refusing a response: %v", err)
		}
	})
}

func TestHandlerErrorsAndPanics(t *testing.T) {
	f := newFixture(t)
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		switch req.Tool {
		case "panic":
			panic("boom")
		case "coded":
			return nil, &Error{Code: CodeUnknownTool, Message: "no tool x"}
		case "wrapped":
			return nil, fmt.Errorf("tools: %w", &Error{Code: CodeUnauthenticated, Message: "expired"})
		case "secret":
			return nil, errors.New("disk /var/secret/key unreadable")
		case "deadline":
			return nil, fmt.Errorf("store: %w", context.DeadlineExceeded)
		case "nil":
			return nil, nil
		case "zero code":
			return nil, &Error{Message: "forgot the code"}
		}
		return &CallResponse{Result: []byte("ok")}, nil
	}}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	tests := []struct {
		tool string
		want *Error
	}{
		{"panic", &Error{Code: CodeInternal, Message: "internal error"}},
		{"coded", &Error{Code: CodeUnknownTool, Message: "no tool x"}},
		{"wrapped", &Error{Code: CodeUnauthenticated, Message: "expired"}},
		{"secret", &Error{Code: CodeInternal, Message: "internal error"}},
		{"deadline", &Error{Code: CodeDeadline}},
		{"nil", &Error{Code: CodeInternal}},
		{"zero code", &Error{Code: CodeInternal, Message: "forgot the code"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			_, err := c.Call(context.Background(), &CallRequest{Tool: tt.tool})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) || strings.Contains(pe.Message, "secret") {
				t.Fatalf("err = %#v leaks detail or is not *Error", err)
			}
		})
	}
	// The server survived the panic.
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "fine"}); err != nil || string(r.Result) != "ok" {
		t.Fatalf("after panic: %v, %v", r, err)
	}
}

func TestServerRestartAndReconnect(t *testing.T) {
	f := newFixture(t)
	entered := make(chan struct{}, 2)
	gen := func(name string) *handler {
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
				if name == "first" {
					entered <- struct{}{}
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &HealthResponse{Wing: name, Ready: true}, nil
			},
		}
	}
	srv1 := startServer(t, f, gen("first"), ServerConfig{}, "127.0.0.1:0")
	addr := srv1.Addr().String()
	c := newClient(t, f, addr, ClientConfig{DialTimeout: 10 * time.Second})
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil || string(r.Result) != "first" {
		t.Fatalf("first call: %v %v", r, err)
	}

	// Two requests are in flight when the server stops: a Call (never
	// retried once sent: fails with ErrConnectionLost, its fate unknown)
	// and a Health (idempotent, but the shard said it stopped: the client
	// knows it is down and fails fast instead of retrying). Retrying an
	// idempotent request on a restarted shard is TestStatelessReset's.
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &CallRequest{Tool: "block"})
		callErr <- err
	}()
	healthRes := make(chan string, 1)
	go func() {
		h, err := c.Health(context.Background())
		if err != nil {
			healthRes <- "error: " + err.Error()
			return
		}
		healthRes <- h.Wing
	}()
	<-entered
	<-entered
	srv1.stop(t)
	if err := <-callErr; !errors.Is(err, ErrConnectionLost) || isUnavailable(err) {
		t.Fatalf("in-flight Call err = %v, want ErrConnectionLost (and not ErrUnavailable)", err)
	}
	if got := <-healthRes; !strings.Contains(got, "error: ") || !strings.Contains(got, "server stopped") {
		t.Fatalf("in-flight Health = %q, want a fast failure naming the stop", got)
	}
	srv2 := startServer(t, f, gen("second"), ServerConfig{}, addr)
	wctx0, wcancel0 := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel0()
	if err := c.WaitConnected(wctx0); err != nil {
		t.Fatalf("WaitConnected: %v", err)
	}
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil || string(r.Result) != "second" {
		t.Fatalf("after restart: %v %v", r, err)
	}
	if !c.Connected() {
		t.Fatal("not connected after restart")
	}

	// During a gap, calls fail with ErrUnavailable; afterwards the same
	// client succeeds again.
	srv2.stop(t)
	gap := newClient(t, f, addr, ClientConfig{DialTimeout: 300 * time.Millisecond})
	if _, err := gap.Health(context.Background()); !isUnavailable(err) {
		t.Fatalf("Health during the gap: %v, want ErrUnavailable", err)
	}
	if _, err := gap.Call(context.Background(), &CallRequest{Tool: "t"}); !isUnavailable(err) {
		t.Fatalf("Call during the gap: %v, want ErrUnavailable", err)
	}
	// The old client found the shard stopped: it fails fast, saying so,
	// rather than waiting for a dial.
	if _, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); !isUnavailable(err) || !strings.Contains(err.Error(), "redialing in the background") {
		t.Fatalf("Call while the shard is down: %v, want a fast ErrUnavailable", err)
	}
	if st := c.State(); !st.Down || st.Connected || st.Err == nil {
		t.Fatalf("State while down = %+v", st)
	}
	// A caller whose deadline passes while it waits for a first dial sees
	// both facts.
	cold := newClient(t, f, addr, ClientConfig{DialTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := cold.Call(ctx, &CallRequest{Tool: "t"}); !isUnavailable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call with deadline during the gap: %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	startServer(t, f, gen("third"), ServerConfig{}, addr)
	// The background redial reaches the restarted shard.
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	for _, cl := range []*Client{c, gap} {
		if err := cl.WaitConnected(wctx); err != nil {
			t.Fatalf("WaitConnected: %v", err)
		}
	}
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "t"}); err != nil || string(r.Result) != "third" {
		t.Fatalf("after the gap: %v %v", r, err)
	}
	if st := c.State(); !st.Connected || st.Down || st.Losses == 0 {
		t.Fatalf("State after the gap = %+v", st)
	}
	if r, err := gap.Health(context.Background()); err != nil || r.Wing != "third" {
		t.Fatalf("gap client after the gap: %v %v", r, err)
	}
}

func TestGracefulShutdownDrains(t *testing.T) {
	f := newFixture(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		close(entered)
		<-release
		return &CallResponse{Result: []byte("finished")}, nil
	}}
	// CloseGrace is huge: Shutdown can only finish in time if the client
	// closes its drained connection itself after GOAWAY.
	srv := startServer(t, f, h, ServerConfig{CloseGrace: time.Hour}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{DialTimeout: 300 * time.Millisecond})
	res := make(chan string, 1)
	go func() {
		r, err := c.Call(context.Background(), &CallRequest{Tool: "slow"})
		if err != nil {
			res <- "error: " + err.Error()
			return
		}
		res <- string(r.Result)
	}()
	<-entered
	shutdownDone := make(chan error, 1)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { shutdownDone <- srv.Shutdown(sctx) }()
	<-srv.shutdown // draining has begun

	// New requests are refused while draining: on the old connection
	// (CodeUnavailable, flagged unprocessed) or, once the client heard
	// GOAWAY, by failing to reach a new one (ErrUnavailable).
	if _, err := c.Call(context.Background(), &CallRequest{Tool: "new"}); CodeOf(err) != CodeUnavailable && !isUnavailable(err) {
		t.Fatalf("Call while draining: %v", err)
	}
	select {
	case err := <-shutdownDone:
		t.Fatalf("Shutdown returned (%v) with a handler in flight", err)
	default:
	}
	close(release)
	if got := <-res; got != "finished" {
		t.Fatalf("in-flight call = %q, want it to finish", got)
	}
	if err := <-shutdownDone; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := srv.wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestShutdownContextExpiresCancelsHandlers(t *testing.T) {
	f := newFixture(t)
	entered := make(chan struct{})
	observed := make(chan error, 1)
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		close(entered)
		<-ctx.Done()
		observed <- context.Cause(ctx)
		return nil, ctx.Err()
	}}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	callErr := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &CallRequest{Tool: "stuck"})
		callErr <- err
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown = %v, want context.Canceled", err)
	}
	// Connections are closed before handlers are cancelled, so the
	// handler sees its stream end (or the stop, whichever lands first).
	if cause := <-observed; !errors.Is(cause, errStreamEnded) && !errors.Is(cause, errServerStopping) {
		t.Fatalf("handler cause = %v", cause)
	}
	if err := <-callErr; err == nil {
		t.Fatal("stuck call succeeded")
	}
}

func TestMaxInFlight(t *testing.T) {
	f := newFixture(t)
	var calls atomic.Int32
	entered := make(chan struct{})
	release := make(chan struct{})
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		calls.Add(1)
		if req.Tool == "hold" {
			close(entered)
			<-release
		}
		return &CallResponse{}, nil
	}}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{MaxInFlight: 1})
	held := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &CallRequest{Tool: "hold"})
		held <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, &CallRequest{Tool: "queued"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call err = %v, want DeadlineExceeded while waiting for a slot", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1 (slot bound)", n)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), &CallRequest{Tool: "next"}); err != nil {
		t.Fatalf("after the slot freed: %v", err)
	}
}

func TestUnreachableAndClosed(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f, closedUDPAddr(t), ClientConfig{DialTimeout: 200 * time.Millisecond})
	_, err := c.Health(context.Background())
	if !isUnavailable(err) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if c.Connected() {
		t.Fatal("Connected() = true")
	}
	srv := startServer(t, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	c2 := newClient(t, f, srv.Addr().String(), ClientConfig{})
	if _, err := c2.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	_, err = c2.Health(context.Background())
	if !errors.Is(err, ErrClientClosed) || !isUnavailable(err) {
		t.Fatalf("after Close: %v", err)
	}
	if c2.Close() != nil {
		t.Fatal("second Close failed")
	}
	// No TLS configured: a clear error, no panic.
	c3 := NewClient(srv.Addr().String(), ClientConfig{})
	defer c3.Close()
	if _, err := c3.Health(context.Background()); !isUnavailable(err) || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("no TLS: %v", err)
	}
}

// rawExchange sends raw bytes on one stream and returns the answer frame.
func rawExchange(t *testing.T, f *fixture, addr string, raw []byte) (header, []byte) {
	t.Helper()
	conn, err := quic.DialAddr(context.Background(), addr, f.clientTLS(t, pki.RoleGateway), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	st, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Write(raw)
	st.Close()
	h, p, err := readFrame(st, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, st)
	return h, p
}

func TestServerRefusesBadFrames(t *testing.T) {
	f := newFixture(t)
	var calls atomic.Int32
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		calls.Add(1)
		return &CallResponse{}, nil
	}}
	srv := startServer(t, f, h, ServerConfig{}, "127.0.0.1:0")
	addr := srv.Addr().String()
	good := mustEncodeRequest(t, MsgCall, reqHeader{RequestID: "r"}, &CallRequest{Tool: "t"})
	withVersion := bytes.Clone(good)
	withVersion[1] = 2
	unknown := bytes.Clone(good)
	unknown[2] = 0x33
	badMagic := bytes.Clone(good)
	badMagic[0] = 'G'
	hugeLen := bytes.Clone(good[:HeaderSize])
	hugeLen[4], hugeLen[5], hugeLen[6], hugeLen[7] = 0xff, 0xff, 0xff, 0xff
	badPayload := finishFrame(append(beginFrame(nil, MsgCall), 0x00, 0x05, 'r'), 0)
	tests := []struct {
		name string
		raw  []byte
		want Code
	}{
		{"unknown version", withVersion, CodeVersion},
		{"unknown message type", unknown, CodeUnknownMethod},
		{"bad magic", badMagic, CodeBadRequest},
		{"length over limit", hugeLen, CodeTooLarge},
		{"truncated payload", good[:len(good)-1], CodeBadRequest},
		{"trailing bytes after the frame", append(bytes.Clone(good), 0), CodeBadRequest},
		{"malformed payload", badPayload, CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, p := rawExchange(t, f, addr, tt.raw)
			if h.typ != MsgError {
				t.Fatalf("answer type %s, want error", h.typ)
			}
			e, err := decodeError(p)
			if err != nil || e.Code != tt.want {
				t.Fatalf("answer %v (%v), want code %s", e, err, tt.want)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times for bad frames", n)
	}
	if h, _ := rawExchange(t, f, addr, good); h.typ != MsgCallResponse {
		t.Fatalf("good frame answered with %s", h.typ)
	}
	// Versioning rule: unknown flag bits and trailing payload fields from
	// a newer peer are ignored (after the optional idempotency key, rank
	// and fetch fields: an empty key, rank false, no ids).
	newer := append(bytes.Clone(good), 0x00, 0x00, 0x00, 0x07, 0x08)
	newer[3] = 0xF0
	newer = finishFrame(newer, 0)
	if h, _ := rawExchange(t, f, addr, newer); h.typ != MsgCallResponse {
		t.Fatalf("frame with new flags and fields answered with %s", h.typ)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

func TestCrashRestartWithStatelessReset(t *testing.T) {
	f := newFixture(t)
	var key quic.StatelessResetKey
	copy(key[:], "a secret that survives restarts")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	srv1 := NewServer(&handler{}, ServerConfig{TLS: f.serverTLS(t), StatelessResetKey: &key})
	served := make(chan error, 1)
	go func() { served <- srv1.Serve(context.Background(), pc) }()
	<-srv1.Ready()

	// Long idle timeout: without a stateless reset the client would not
	// notice the crash before the test's deadline.
	c := newClient(t, f, addr, ClientConfig{QUIC: &quic.Config{MaxIdleTimeout: 5 * time.Minute, KeepAlivePeriod: time.Minute}})
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Crash: the socket disappears, no CONNECTION_CLOSE is sent.
	pc.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve after the crash: %v", err)
	}
	startServer(t, f, &handler{health: func(context.Context) (*HealthResponse, error) {
		return &HealthResponse{Wing: "restarted"}, nil
	}}, ServerConfig{StatelessResetKey: &key}, addr)

	// The stale connection is reset by the new server; Health is retried
	// on a fresh connection.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := c.Health(ctx)
	if err != nil || h.Wing != "restarted" {
		t.Fatalf("Health after crash+restart = %+v, %v", h, err)
	}
}

func TestShutdownIdleClientLeavesOnGoAway(t *testing.T) {
	f := newFixture(t)
	srv := startServer(t, f, &handler{}, ServerConfig{CloseGrace: time.Hour}, "127.0.0.1:0")
	clients := []*Client{
		newClient(t, f, srv.Addr().String(), ClientConfig{}),
		newClient(t, f, srv.Addr().String(), ClientConfig{}),
	}
	for _, c := range clients {
		if _, err := c.Health(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Only the clients closing their idle connections on GOAWAY let
	// Shutdown finish before its deadline (CloseGrace is an hour).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v; idle clients did not leave on GOAWAY", err)
	}
	for i, c := range clients {
		if c.Connected() {
			t.Errorf("client %d still connected after Shutdown", i)
		}
	}
	if err := srv.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestServeMisuse(t *testing.T) {
	f := newFixture(t)
	srv := startServer(t, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	if err := srv.ListenAndServe(context.Background(), "127.0.0.1:0"); !errors.Is(err, ErrServerStarted) {
		t.Fatalf("second Serve = %v, want ErrServerStarted", err)
	}
	noTLS := NewServer(&handler{}, ServerConfig{})
	if err := noTLS.ListenAndServe(context.Background(), "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("Serve without TLS = %v", err)
	}
	if err := NewServer(&handler{}, ServerConfig{TLS: f.serverTLS(t)}).Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of a server never started = %v", err)
	}
	if err := NewServer(&handler{}, ServerConfig{TLS: f.serverTLS(t)}).ListenAndServe(context.Background(), "not an address"); err == nil {
		t.Fatal("bad address accepted")
	}
}

func TestNilRequests(t *testing.T) {
	c := NewClient("127.0.0.1:1", ClientConfig{})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Call(ctx, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Call(nil) = %v", err)
	}
	if _, err := c.Mint(ctx, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Mint(nil) = %v", err)
	}
	if _, err := c.Stats(ctx, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Stats(nil) = %v", err)
	}
}

// TestRestartUnderTraffic stops a server while 16 callers hammer it and
// starts a new one on the same address: every failure is ErrUnavailable
// (never a stray cancellation or a hang), and every caller gets through
// again on the same Client.
func TestRestartUnderTraffic(t *testing.T) {
	f := newFixture(t)
	srv := startServer(t, f, &handler{}, ServerConfig{}, "127.0.0.1:0")
	addr := srv.Addr().String()
	c := newClient(t, f, addr, ClientConfig{DialTimeout: 10 * time.Second})
	const callers = 16
	restarted := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int32
	errs := make(chan error, callers)
	warm := make(chan struct{}, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := fmt.Appendf(nil, `{"caller":%d}`, i)
			warmed := false
			for {
				select {
				case <-restarted:
					// One success after the restart ends this caller.
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					r, err := c.Call(ctx, &CallRequest{Tool: "t", Args: args})
					cancel()
					if err == nil && bytes.Equal(r.Result, args) {
						return
					}
					if err != nil && !isUnavailable(err) && !errors.Is(err, ErrConnectionLost) {
						errs <- fmt.Errorf("after restart: %w", err)
						return
					}
					failures.Add(1)
					// The shard is known down until a background redial
					// reaches its successor: wait for that.
					wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
					werr := c.WaitConnected(wctx)
					wcancel()
					if werr != nil {
						errs <- fmt.Errorf("waiting for the restarted shard: %w", werr)
						return
					}
					continue
				default:
				}
				r, err := c.Call(context.Background(), &CallRequest{Tool: "t", Args: args})
				switch {
				case err == nil && !bytes.Equal(r.Result, args):
					errs <- fmt.Errorf("caller %d got %q", i, r.Result)
					return
				case err != nil && !isUnavailable(err) && !errors.Is(err, ErrConnectionLost):
					errs <- fmt.Errorf("during restart: %w", err)
					return
				case err != nil:
					failures.Add(1)
				}
				if !warmed {
					warmed = true
					warm <- struct{}{}
				}
			}
		}()
	}
	for range callers {
		<-warm // everyone is in the loop
	}
	srv.stop(t)
	startServer(t, f, &handler{}, ServerConfig{}, addr)
	close(restarted)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d calls failed with ErrUnavailable or ErrConnectionLost around the restart", failures.Load())
}

func TestShutdownCloseGraceExpires(t *testing.T) {
	f := newFixture(t)
	// Clients that ignore GOAWAY (raw QUIC connections) keep their
	// connections open: Shutdown closes them once CloseGrace is over.
	srv := startServer(t, f, &handler{}, ServerConfig{CloseGrace: 50 * time.Millisecond}, "127.0.0.1:0")
	var conns []*quic.Conn
	for range 3 {
		conn, err := quic.DialAddr(context.Background(), srv.Addr().String(), f.clientTLS(t, pki.RoleGateway), nil)
		if err != nil {
			t.Fatal(err)
		}
		// One request makes sure the server accepted the connection.
		st, err := conn.OpenStreamSync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st.Write(mustEncodeRequest(t, MsgHealth, reqHeader{RequestID: "raw"}, nil))
		st.Close()
		if h, _, err := readFrame(st, 1<<20); err != nil || h.typ != MsgHealthResponse {
			t.Fatalf("raw health: %v %v", h.typ, err)
		}
		conns = append(conns, conn)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	for i, c := range conns {
		<-c.Context().Done()
		var app *quic.ApplicationError
		if !errors.As(context.Cause(c.Context()), &app) || app.ErrorCode != connCodeShutdown || !app.Remote {
			t.Errorf("conn %d closed with %v, want the server's shutdown code", i, context.Cause(c.Context()))
		}
	}
}

func TestMaxInFlightBytes(t *testing.T) {
	f := newFixture(t)
	entered := make(chan string, 3)
	release := make(chan struct{})
	h := &handler{call: func(ctx context.Context, req *CallRequest) (*CallResponse, error) {
		entered <- req.Tool
		if req.Tool == "hold" {
			<-release
		}
		return &CallResponse{Result: []byte(req.Tool)}, nil
	}}
	// Room for one 3 KiB request at a time; a request waits at most
	// RequestTimeout for room.
	srv := startServer(t, f, h, ServerConfig{MaxMessageBytes: 4 << 10, MaxInFlightBytes: 4 << 10, RequestTimeout: 300 * time.Millisecond}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{})
	big := bytes.Repeat([]byte("a"), 3<<10)
	held := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &CallRequest{Tool: "hold", Args: big})
		held <- err
	}()
	if got := <-entered; got != "hold" {
		t.Fatalf("entered %q", got)
	}
	_, err := c.Call(context.Background(), &CallRequest{Tool: "waits", Args: big})
	if CodeOf(err) != CodeUnavailable {
		t.Fatalf("second big request = %v, want CodeUnavailable (busy)", err)
	}
	// Small requests still fit next to the held one.
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "small"}); err != nil || string(r.Result) != "small" {
		t.Fatalf("small request: %v %v", r, err)
	}
	if got := <-entered; got != "small" {
		t.Fatalf("entered %q, want small (the refused request must not run)", got)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if r, err := c.Call(context.Background(), &CallRequest{Tool: "after", Args: big}); err != nil || string(r.Result) != "after" {
		t.Fatalf("big request after release: %v %v", r, err)
	}
}
