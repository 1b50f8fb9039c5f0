package proto

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/search"
)

// fixture is a CA with a shard and a gateway certificate.
type fixture struct {
	ca                  *pki.CA
	shardCert, shardKey []byte
	gwCert, gwKey       []byte
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ca, err := pki.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ca: ca}
	if f.shardCert, f.shardKey, err = ca.Issue(pki.RoleShard, []string{"localhost", "127.0.0.1", "::1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if f.gwCert, f.gwKey, err = ca.Issue(pki.RoleGateway, []string{"gateway-test"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) serverTLS(t testing.TB) *tls.Config {
	t.Helper()
	c, err := pki.ServerTLS(f.ca.CertPEM(), f.shardCert, f.shardKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clientTLS returns a client config presenting a certificate of role
// (RoleGateway or RoleShard).
func (f *fixture) clientTLS(t testing.TB, role pki.Role) *tls.Config {
	t.Helper()
	cert, key := f.gwCert, f.gwKey
	if role == pki.RoleShard {
		cert, key = f.shardCert, f.shardKey
	}
	c, err := pki.ClientTLS(f.ca.CertPEM(), cert, key, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runningServer is a server serving in a goroutine.
type runningServer struct {
	*Server
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returned
	err    error         // Serve's result, valid after done
}

// stop cancels Serve's context (immediate stop) and waits for it.
func (r *runningServer) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	if err := r.wait(); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// wait waits for Serve to return and returns its error.
func (r *runningServer) wait() error {
	<-r.done
	return r.err
}

// startServer serves h on addr ("127.0.0.1:0" for any port) until the test
// ends.
func startServer(t testing.TB, f *fixture, h Handler, cfg ServerConfig, addr string) *runningServer {
	t.Helper()
	if cfg.TLS == nil {
		cfg.TLS = f.serverTLS(t)
	}
	s := NewServer(h, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningServer{Server: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = s.ListenAndServe(ctx, addr)
		close(r.done)
	}()
	select {
	case <-s.Ready():
	case <-r.done:
		t.Fatalf("server did not start: %v", r.err)
	}
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func newClient(t testing.TB, f *fixture, addr string, cfg ClientConfig) *Client {
	t.Helper()
	if cfg.TLS == nil {
		cfg.TLS = f.clientTLS(t, pki.RoleGateway)
	}
	c := NewClient(addr, cfg)
	t.Cleanup(func() { c.Close() })
	return c
}

// handler is a Handler whose behaviour each test sets; nil funcs answer a
// fixed response (Call echoes its arguments).
type handler struct {
	listTools func(ctx context.Context) (*ListToolsResponse, error)
	call      func(ctx context.Context, req *CallRequest) (*CallResponse, error)
	mint      func(ctx context.Context, peer Peer, req *MintRequest) (*MintResponse, error)
	stats     func(ctx context.Context, req *StatsRequest) (*StatsResponse, error)
	health    func(ctx context.Context) (*HealthResponse, error)
}

var _ Handler = (*handler)(nil)

func (h *handler) ListTools(ctx context.Context) (*ListToolsResponse, error) {
	if h.listTools != nil {
		return h.listTools(ctx)
	}
	return &ListToolsResponse{Tools: []byte(`[{"name":"brain_get"}]`)}, nil
}

func (h *handler) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	if h.call != nil {
		return h.call(ctx, req)
	}
	return &CallResponse{Result: req.Args}, nil
}

func (h *handler) Mint(ctx context.Context, peer Peer, req *MintRequest) (*MintResponse, error) {
	if h.mint != nil {
		return h.mint(ctx, peer, req)
	}
	return &MintResponse{Token: "token-for-" + req.Email, Caps: []string{"read"}, Expiry: req.NotAfter}, nil
}

func (h *handler) Stats(ctx context.Context, req *StatsRequest) (*StatsResponse, error) {
	if h.stats != nil {
		return h.stats(ctx, req)
	}
	df := map[string]int64{}
	for _, t := range req.Terms {
		df[t] = 2
	}
	return &StatsResponse{search.StatsResponse{Stats: search.Stats{Docs: 3, TotalLength: 30, DocFreq: df}, Generation: 7}}, nil
}

// Rank ranks every term as a key, scored by its position.
func (h *handler) Rank(_ context.Context, req *RankRequest) (*RankResponse, error) {
	resp := &RankResponse{search.RankResponse{Generation: 7, Total: int64(len(req.Query.Terms))}}
	for i, t := range req.Query.Terms {
		resp.Ranked = append(resp.Ranked, search.Ranked{Key: t, Score: float64(i) + 0.5})
	}
	return resp, nil
}

// Fetch renders each key as a hit of its own bytes.
func (h *handler) Fetch(_ context.Context, req *FetchRequest) (*FetchResponse, error) {
	resp := &FetchResponse{}
	for _, k := range req.Keys {
		resp.Hits = append(resp.Hits, []byte(`{"id":"`+k+`"}`))
	}
	return resp, nil
}

func (h *handler) Health(ctx context.Context) (*HealthResponse, error) {
	if h.health != nil {
		return h.health(ctx)
	}
	return &HealthResponse{Wing: "payments", Ready: true, Notes: 7, Version: "test"}, nil
}

// freeUDPAddr is the address of a server that was started and stopped, so
// nothing listens there (used to test unreachable shards).
func closedUDPAddr(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

func isUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
