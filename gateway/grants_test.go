package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/proto"
)

// closeNotifyListener reports when the gateway closes its listener.
type closeNotifyListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeNotifyListener) Close() error {
	err := l.Listener.Close() // closed before anyone hears of it
	l.once.Do(func() { close(l.closed) })
	return err
}

// TestSingleflightMint: 100 concurrent first calls for one (email, wing)
// cause exactly one mint (counted by the shard); after the shard restarts
// with a new key, the next call succeeds after one transparent re-mint.
func TestSingleflightMint(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	w := e.wings["payments"]
	w.addNote("payments/f/x", "hello", "a@acme.com")
	tok := e.idp.token(t, "alice@acme.com")
	c := e.client(t, tok, false)

	gate := make(chan struct{})
	w.mintGate.Store(&gate)
	const n = 100
	joined := make(chan struct{}, n)
	e.gw.OnMintJoinForTest(func() { joined <- struct{}{} })
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_get", Arguments: json.RawMessage(`{"id":"payments/f/x"}`)}})
			if err != nil || res.IsError {
				failures.Add(1)
			}
		}()
	}
	// Every caller has joined the one in-flight mint before it is let go.
	for range n {
		<-joined
	}
	close(gate)
	wg.Wait()
	w.mintGate.Store(nil)
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d calls failed", f)
	}
	if m := w.mints.Load(); m != 1 {
		t.Fatalf("%d mints for %d concurrent first calls, want 1", m, n)
	}

	// Shard restarts with a new key: the cached token is refused once.
	w.rotateKey(t)
	e.shards["payments"].restart()
	e.waitConnected("payments")
	text, isErr := call(t, c, "brain_get", `{"id":"payments/f/x"}`)
	if isErr {
		t.Fatalf("after restart: %s", text)
	}
	if m := w.mints.Load(); m != 2 {
		t.Fatalf("%d mints after the restart, want 2 (one transparent re-mint)", m)
	}
	// And the new token is cached again.
	call(t, c, "brain_get", `{"id":"payments/f/x"}`)
	if m := w.mints.Load(); m != 2 {
		t.Fatalf("%d mints, the re-minted token was not cached", m)
	}
}

// TestFreshTokenRejected: a wing that refuses even freshly minted tokens is
// retried with bounded backoff (3 fresh tries), then a clear error.
func TestFreshTokenRejected(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	w := e.wings["payments"]
	c := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	w.addNote("payments/f/x", "hello", "a@acme.com")
	call(t, c, "brain_get", `{"id":"payments/f/x"}`) // caches a token
	mints, calls := w.mints.Load(), w.calls.Load()
	w.failCalls.Store(true)
	text, isErr := call(t, c, "brain_get", `{"id":"payments/f/x"}`)
	if !isErr || errCode(t, text) != brain.CodeUnavailable || !strings.Contains(text, "rejected 3 freshly minted tokens") {
		t.Fatalf("got %v %s", isErr, text)
	}
	if dm, dc := w.mints.Load()-mints, w.calls.Load()-calls; dm != 3 || dc != 4 {
		t.Fatalf("%d mints and %d calls, want 3 and 4 (cached try + 3 fresh)", dm, dc)
	}
	w.failCalls.Store(false)
	if text, isErr := call(t, c, "brain_get", `{"id":"payments/f/x"}`); isErr {
		t.Fatalf("after recovery: %s", text)
	}
}

// TestGrantCacheUnit covers expiry rules without the network: a grant is
// never used past its expiry, never outlives the SSO token, and two emails
// never share one.
func TestGrantCacheUnit(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	fc := &fakeMintClient{exp: now.Add(10 * time.Minute)}
	w := &route.Wing{Idx: 0, Name: "w", Client: fc}
	sc := route.NewGrantCache([]*route.Wing{w}, 10, time.Hour, time.Minute, time.Second, clock, nopMetrics{}, slog.New(slog.DiscardHandler))
	alice := auth.Identity{Email: "alice@acme.com", Expiry: now.Add(2 * time.Minute)}
	bob := auth.Identity{Email: "bob@acme.com", Expiry: now.Add(time.Hour)}

	g, fresh, err := grantGet(context.Background(), sc, alice, w, "r1")
	if err != nil || !fresh {
		t.Fatal(err, fresh)
	}
	if !g.Expiry.Equal(alice.Expiry) {
		t.Fatalf("grant expiry %v outlives the SSO token %v", g.Expiry, alice.Expiry)
	}
	gb, _, _ := grantGet(context.Background(), sc, bob, w, "r2")
	if gb.Token == g.Token || !strings.Contains(gb.Token, "bob@acme.com") {
		t.Fatalf("emails share a token: %q %q", g.Token, gb.Token)
	}
	if _, fresh, _ := grantGet(context.Background(), sc, alice, w, "r3"); fresh {
		t.Fatal("second lookup minted again")
	}
	now = now.Add(2*time.Minute - route.ExpiryMargin + time.Second) // within the margin of expiry
	if _, fresh, _ := grantGet(context.Background(), sc, alice, w, "r4"); !fresh {
		t.Fatal("a grant about to expire was used")
	}
	if fc.n.Load() != 3 {
		t.Fatalf("%d mints, want 3", fc.n.Load())
	}
	// Denial is remembered for deny_ttl, then asked again.
	fc.deny.Store(true)
	carol := auth.Identity{Email: "carol@acme.com", Expiry: now.Add(time.Hour)}
	for range 3 {
		if _, _, err := grantGet(context.Background(), sc, carol, w, "r"); edge.Classify(err, "").Code != brain.CodeForbidden {
			t.Fatalf("denied: %v", err)
		}
	}
	if fc.n.Load() != 4 {
		t.Fatalf("%d mints, denial not remembered", fc.n.Load())
	}
	now = now.Add(time.Minute + time.Second)
	_, _, _ = grantGet(context.Background(), sc, carol, w, "r")
	if fc.n.Load() != 5 {
		t.Fatalf("%d mints, denial remembered past deny_ttl", fc.n.Load())
	}
}

type nopMetrics struct{}

func (nopMetrics) CacheHit()             {}
func (nopMetrics) CacheMiss()            {}
func (nopMetrics) Minted(string, string) {}

// fakeMintClient is a shardClient whose Mint returns "tok:<email>:<n>"; it
// exists only for TestGrantCacheUnit's clock-driven checks.
type fakeMintClient struct {
	route.ShardClient
	n    atomic.Int64
	exp  time.Time
	deny atomic.Bool
}

func (f *fakeMintClient) Mint(ctx context.Context, req *proto.MintRequest) (*proto.MintResponse, error) {
	n := f.n.Add(1)
	if f.deny.Load() {
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: "no"}
	}
	return &proto.MintResponse{Token: fmt.Sprintf("tok:%s:%d", req.Email, n), Caps: []string{"read"}, Expiry: f.exp}, nil
}
func (f *fakeMintClient) Connected() bool { return true }

func (f *fakeMintClient) State() proto.State { return proto.State{Connected: true} }

// TestTwoReplicas: two gateways behind a round-robin reverse proxy, no
// sticky sessions: one client session completes every call, and both
// replicas served it.
func TestTwoReplicas(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	e.wings["payments"].addNote("payments/f/x", "hello", "a@acme.com")
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + pl.Addr().String()
	var backends []*url.URL
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.config([]config.WingConfig{{Name: "payments", Address: e.shards["payments"].addr, ServerName: "localhost"}}, base)
		e.startGatewayOn(ln, cfg, Options{})
		u, _ := url.Parse("http://" + ln.Addr().String())
		backends = append(backends, u)
	}
	var next atomic.Int64
	var served [2]atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		i := next.Add(1) % 2
		served[i].Add(1)
		r.SetURL(backends[i])
		r.Out.Host = r.In.Host // keep the public host, as an ingress does
	}}
	srv := httptest.NewUnstartedServer(proxy)
	srv.Listener.Close()
	srv.Listener = pl
	srv.Start()
	t.Cleanup(srv.Close)

	tok := e.idp.token(t, "alice@acme.com")
	for _, legacy := range []bool{true, false} {
		c := newMCPClient(t, base+"/mcp", tok, legacy)
		if _, err := c.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
			t.Fatalf("legacy=%v tools/list: %v", legacy, err)
		}
		for i := range 6 {
			text, isErr := call(t, c, "brain_get", `{"id":"payments/f/x"}`)
			if isErr || !strings.Contains(text, `"body":"hello"`) {
				t.Fatalf("legacy=%v call %d: %s", legacy, i, text)
			}
			if text, isErr := call(t, c, "brain_wings", `{}`); isErr || !strings.Contains(text, "payments") {
				t.Fatalf("legacy=%v brain_wings: %s", legacy, text)
			}
		}
		if legacy && c.GetSessionId() == "" {
			t.Fatal("the legacy client got no session id")
		}
	}
	if served[0].Load() < 5 || served[1].Load() < 5 {
		t.Fatalf("requests per replica %d / %d: the proxy did not spread them", served[0].Load(), served[1].Load())
	}
}

// TestGracefulDrain: cancelling Serve lets an in-flight call finish before
// Serve returns.
func TestGracefulDrain(t *testing.T) {
	e := &testEnv{t: t, pki: newTestPKI(t), idp: startIdP(t), wings: map[string]*testWing{}, shards: map[string]*shardServer{}, audit: &syncBuffer{}, logs: &syncBuffer{}}
	w := newTestWing(t, "payments", policyOpen)
	sh := startShard(t, e.pki, w, "")
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &closeNotifyListener{Listener: tcp, closed: make(chan struct{})}
	base := "http://" + ln.Addr().String()
	cfg := e.config([]config.WingConfig{{Name: "payments", Address: sh.addr, ServerName: "localhost"}}, base)
	gw, err := New(context.Background(), cfg, Options{AuditLog: e.audit, ShardTLS: e.pki.gwTLS})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, ln, nil) }()

	c := newMCPClient(t, base+"/mcp", e.idp.token(t, "alice@acme.com"), false)
	result := make(chan string, 1)
	go func() {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_slow", Arguments: json.RawMessage(`{"wing":"payments"}`)}})
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		result <- res.Content[0].(mcp.TextContent).Text
	}()
	<-w.slowIn // the call is in the shard
	cancel()
	// The listener closes first: new connections are refused while the
	// call is still in flight.
	<-ln.closed
	if conn, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		conn.Close()
		t.Fatal("the listener still accepts connections after Serve began draining")
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) with a call in flight", err)
	default:
	}
	close(w.slowGate)
	if got := <-result; got != `{"slow":"done"}` {
		t.Fatalf("in-flight call: %s", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestSSOTokenNeverReachesShard: the user's SSO token is never sent to a
// shard; every call carries a shard token the wing itself minted.
func TestSSOTokenNeverReachesShard(t *testing.T) {
	e := newEnv(t, []string{"payments", "platform"}, map[string]auth.Policy{"payments": policyOpen, "platform": policyOpen})
	e.wings["payments"].addNote("payments/f/x", "hello", "a@acme.com")
	sso := e.idp.token(t, "alice@acme.com")
	c := e.client(t, sso, false)
	for _, args := range []string{`{"id":"payments/f/x"}`, `{"wing":"platform","id":"platform/f/none"}`} {
		call(t, c, "brain_get", args)
	}
	call(t, c, "brain_query", `{"query":"hello"}`)
	seen := 0
	for name, w := range e.wings {
		w.tokens.Range(func(k, _ any) bool {
			seen++
			tok := k.(string)
			if tok == sso || strings.Contains(tok, sso) {
				t.Errorf("wing %s received the SSO token", name)
			}
			if _, err := w.verifier.Verify(tok); err != nil {
				t.Errorf("wing %s received a token it did not mint: %v", name, err)
			}
			return true
		})
	}
	if seen < 2 {
		t.Fatalf("the wings saw %d distinct tokens, want one per wing", seen)
	}
}
