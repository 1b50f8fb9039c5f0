package gateway

// Test harness: a real development IdP (auth/devidp) on loopback HTTP, real
// brainstem/1 servers (proto) on loopback QUIC with mTLS from a real test CA
// (proto/pki), and a gateway served on a loopback listener, driven by
// mcp-go's real Streamable HTTP client.
//
// The wings behind the proto servers are small in-test handlers
// (testWing), honest about what they are: a map of notes, real shard tokens
// (auth.Minter / auth.TokenVerifier) and a real auth.Policy. They are not
// the shard; the lead's e2e tests run real shards.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/search"
)

// ---------- PKI ----------

type testPKI struct {
	ca       *pki.CA
	shardTLS *tls.Config // server side of every test shard
	gwTLS    *tls.Config // gateway client side (ServerName set per wing)
	// shardAsClient presents the shard certificate as a client: a
	// misconfigured gateway.
	shardAsClient *tls.Config
	resetSecret   []byte // the shards' TLS key, to derive reset keys
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	ca, err := pki.NewCA("brainstem test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	scert, skey, err := ca.Issue(pki.RoleShard, []string{"localhost", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	gcert, gkey, err := ca.Issue(pki.RoleGateway, []string{"gateway.test"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stls, err := pki.ServerTLS(ca.CertPEM(), scert, skey)
	if err != nil {
		t.Fatal(err)
	}
	gtls, err := pki.ClientTLS(ca.CertPEM(), gcert, gkey, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := pki.ClientTLS(ca.CertPEM(), scert, skey, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	secret, err := pki.PrivateKeyDER(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{ca: ca, shardTLS: stls, gwTLS: gtls, shardAsClient: wrong, resetSecret: secret}
}

// ---------- in-test wing ----------

type testNote struct {
	ID     string
	Body   string
	Author string
}

// testWing is a small proto.Handler standing in for a shard. Like the real
// shard it remembers the tokens it verified, so benchmarks charge the
// gateway, not an Ed25519 check the real shard does not make per call.
type testWing struct {
	name     string
	policy   auth.Policy
	minter   *auth.Minter
	verifier *auth.CachingVerifier

	mu    sync.Mutex
	notes map[string]testNote

	mints     atomic.Int64
	calls     atomic.Int64
	listTools atomic.Int64
	mintGate  atomic.Pointer[chan struct{}] // when set, Mint waits for it to close
	slowGate  chan struct{}                 // brain_slow waits on it (or its ctx)
	slowIn    chan struct{}                 // brain_slow signals arrival
	toolsJSON atomic.Pointer[string]
	failCalls atomic.Bool // Call answers CodeUnauthenticated always
	tokens    sync.Map    // every token a Call carried
	seen      []seenCall  // every Call, in order (under mu)
	applied   int         // brain_writes applied (under mu)
	// holdOnce, when set, makes the next Call of that tool signal its
	// entered channel and wait for its ctx (the connection dies under it);
	// with after set, a brain_write is applied first (its answer is lost).
	holdOnce atomic.Pointer[hold]
	// keyed is the answer of every brain_write that carried an idempotency
	// key, by caller and key: like the shard's journal, a key seen again
	// is answered its first answer and not applied again (under mu).
	keyed map[string][]byte
	// stall makes Stats and brain_query wait for their ctx (a stuck wing).
	stall      atomic.Bool
	toolCalls  sync.Map      // tool name → *atomic.Int64
	failFetch  atomic.Bool   // the fetch step fails (the wing went down in between)
	rendered   atomic.Int64  // brain_query hits rendered (whole answers and fetches)
	queryCalls atomic.Int64  // brain_query calls, rank and fetch steps
	statsCalls atomic.Int64  // Stats requests
	lastRender atomic.Int64  // the Render of the last Rank
	renderCap  atomic.Int64  // when set, Rank renders at most this many ahead
	gen        atomic.Uint64 // the index generation: changes with every note
}

// seenCall is what a Call carried besides its token.
type seenCall struct {
	tool, key string
	args      []byte
}

func (w *testWing) seenCalls() []seenCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seenCall(nil), w.seen...)
}

type hold struct {
	tool     string
	after    bool // hold after applying the call (brain_write only)
	entered  chan struct{}
	released chan struct{} // closed once the held call's ctx ended
}

// holdNext makes the next call of tool hang until its connection dies; the
// returned channel is closed when it arrives.
func (w *testWing) holdNext(tool string) <-chan struct{} {
	entered, _ := w.holdNextReleased(tool)
	return entered
}

// holdNextReleased is holdNext that also tells when the held call's
// context ended (released is closed then).
func (w *testWing) holdNextReleased(tool string) (entered, released <-chan struct{}) {
	h := &hold{tool: tool, entered: make(chan struct{}), released: make(chan struct{})}
	w.holdOnce.Store(h)
	return h.entered, h.released
}

// holdAfterWrite makes the next brain_write apply its note and then hang
// until its connection dies: a write that landed whose answer is lost.
func (w *testWing) holdAfterWrite() <-chan struct{} {
	h := &hold{tool: "brain_write", after: true, entered: make(chan struct{}), released: make(chan struct{})}
	w.holdOnce.Store(h)
	return h.entered
}

// heldHere makes the call wait for its ctx when a hold for it (at this
// point: before or after applying) is set, and reports whether it did.
func (w *testWing) heldHere(ctx context.Context, tool string, after bool) bool {
	h := w.holdOnce.Load()
	if h == nil || h.tool != tool || h.after != after || !w.holdOnce.CompareAndSwap(h, nil) {
		return false
	}
	close(h.entered)
	<-ctx.Done()
	close(h.released)
	return true
}

// firstAnswer is the answer recorded for a caller's idempotency key.
func (w *testWing) firstAnswer(email, key string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.keyed[email+"\x00"+key]
	return string(b), ok
}

func (w *testWing) toolCount(tool string) int64 {
	n, _ := w.toolCalls.LoadOrStore(tool, new(atomic.Int64))
	return n.(*atomic.Int64).Load()
}

const testToolsJSON = `[
 {"name":"brain_get","description":"get a note","inputSchema":{"type":"object","properties":{"id":{"type":"string"},"wing":{"type":"string"}},"anyOf":[{"required":["id"]},{"required":["path"]}]},"annotations":{"readOnlyHint":true},"_meta":{"brainstem/capability":"read","brainstem/route":[{"arg":"wing","as":"wing"},{"arg":"id","as":"ref"},{"arg":"path","as":"path"}]}},
 {"name":"brain_write","description":"write a note","inputSchema":{"type":"object","properties":{"wing":{"type":"string"},"id":{"type":"string"},"body":{"type":"string"}}},"_meta":{"brainstem/capability":"write","brainstem/route":[{"arg":"wing","as":"wing"},{"arg":"id","as":"ref"}]}},
 {"name":"brain_query","description":"search","inputSchema":{"type":"object","properties":{"query":{"type":"string"},"wing":{"type":"string"},"limit":{"type":"integer"}}},"_meta":{"brainstem/capability":"read","brainstem/route":[{"arg":"wing","as":"wing"}],"brainstem/fanout":"search"}},
 {"name":"brain_promote","description":"promote","inputSchema":{"type":"object","properties":{"wing":{"type":"string"}}},"_meta":{"brainstem/capability":"curate","brainstem/route":[{"arg":"wing","as":"wing"}]}},
 {"name":"brain_slow","description":"waits","inputSchema":{"type":"object","properties":{"wing":{"type":"string"}}},"_meta":{"brainstem/capability":"read","brainstem/route":[{"arg":"wing","as":"wing"}]}}
]`

func newTestWing(t testing.TB, name string, policy auth.Policy) *testWing {
	t.Helper()
	w := &testWing{name: name, policy: policy, notes: map[string]testNote{}, keyed: map[string][]byte{},
		slowGate: make(chan struct{}), slowIn: make(chan struct{}, 16)}
	w.rotateKey(t)
	s := testToolsJSON
	w.toolsJSON.Store(&s)
	return w
}

// rotateKey gives the wing a new signing key; tokens signed with the old
// one are refused from now on (a shard restarted with a new key).
func (w *testWing) rotateKey(t testing.TB) {
	t.Helper()
	key, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewCachingVerifier(auth.NewTokenVerifier(w.name, nil, key.Public()), 1024)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.minter = auth.NewMinter(w.name, key, 0, nil)
	w.verifier = v
	w.mu.Unlock()
}

func (w *testWing) addNote(id, body, author string) {
	w.mu.Lock()
	w.notes[id] = testNote{ID: id, Body: body, Author: author}
	w.gen.Add(1)
	w.mu.Unlock()
}

func (w *testWing) ListTools(ctx context.Context) (*proto.ListToolsResponse, error) {
	w.listTools.Add(1)
	return &proto.ListToolsResponse{Tools: json.RawMessage(*w.toolsJSON.Load())}, nil
}

func (w *testWing) Health(ctx context.Context) (*proto.HealthResponse, error) {
	return &proto.HealthResponse{Wing: w.name, Ready: true}, nil
}

func (w *testWing) Mint(ctx context.Context, peer proto.Peer, req *proto.MintRequest) (*proto.MintResponse, error) {
	w.mints.Add(1)
	if gate := w.mintGate.Load(); gate != nil {
		select {
		case <-*gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	caps := w.policy.Caps(req.Email, req.Groups)
	if caps == 0 {
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: "the policy of wing " + w.name + " does not admit " + req.Email}
	}
	w.mu.Lock()
	m := w.minter
	w.mu.Unlock()
	tok, exp, err := m.Mint(req.Email, caps, req.NotAfter)
	if err != nil {
		return nil, &proto.Error{Code: proto.CodeBadRequest, Message: err.Error()}
	}
	return &proto.MintResponse{Token: tok, Caps: caps.Strings(), Expiry: exp}, nil
}

func (w *testWing) toolNeed(tool string) (brain.Caps, bool) {
	switch tool {
	case "brain_get", "brain_query", "brain_slow", "brain_list":
		return brain.CapRead, true
	case "brain_write":
		return brain.CapWrite, true
	case "brain_promote":
		return brain.CapCurate, true
	}
	return 0, false
}

func toolErr(code brain.Code, msg string) *proto.CallResponse {
	return &proto.CallResponse{Result: brain.EncodeError(code, msg), IsError: true}
}

func (w *testWing) Call(ctx context.Context, req *proto.CallRequest) (*proto.CallResponse, error) {
	w.calls.Add(1)
	n, _ := w.toolCalls.LoadOrStore(req.Tool, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	w.tokens.Store(req.Token, true)
	w.mu.Lock()
	w.seen = append(w.seen, seenCall{tool: req.Tool, key: req.IdempotencyKey, args: bytes.Clone(req.Args)})
	w.mu.Unlock()
	if w.heldHere(ctx, req.Tool, false) {
		return nil, ctx.Err()
	}
	if req.Tool == "brain_query" && w.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if w.failCalls.Load() {
		return nil, &proto.Error{Code: proto.CodeUnauthenticated, Message: "token refused (test)"}
	}
	w.mu.Lock()
	v := w.verifier
	w.mu.Unlock()
	claims, err := v.Verify(req.Token)
	if err != nil {
		return nil, &proto.Error{Code: proto.CodeUnauthenticated, Message: err.Error()}
	}
	need, ok := w.toolNeed(req.Tool)
	if !ok {
		return nil, &proto.Error{Code: proto.CodeUnknownTool, Message: req.Tool}
	}
	if !claims.Caps.Has(need) {
		return toolErr("forbidden", fmt.Sprintf("%s needs %s in wing %s", req.Tool, need, w.name)), nil
	}
	var args struct {
		ID    string `json:"id"`
		Body  string `json:"body"`
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(req.Args, &args); err != nil {
		return toolErr("invalid_argument", err.Error()), nil
	}
	switch req.Tool {
	case "brain_get":
		w.mu.Lock()
		n, ok := w.notes[args.ID]
		w.mu.Unlock()
		if !ok {
			return toolErr("not_found", "no note "+args.ID), nil
		}
		// Odd spacing and HTML characters: the gateway must pass these
		// bytes through unchanged.
		b, _ := json.Marshal(n.Body)
		return &proto.CallResponse{Result: fmt.Appendf(nil, `{"id": %q,  "author":%q, "body":%s, "wing":"%s", "html":"<&>"}`, n.ID, n.Author, b, w.name)}, nil
	case "brain_write":
		if args.ID == "" || !strings.HasPrefix(args.ID, w.name+"/") {
			return toolErr("invalid_argument", "id must start with "+w.name+"/"), nil
		}
		k := claims.Email + "\x00" + req.IdempotencyKey
		w.mu.Lock()
		first, seen := w.keyed[k]
		if !seen {
			w.notes[args.ID] = testNote{ID: args.ID, Body: args.Body, Author: claims.Email}
			w.gen.Add(1)
			first = fmt.Appendf(nil, `{"id":%q,"author":%q}`, args.ID, claims.Email)
			if req.IdempotencyKey != "" {
				w.keyed[k] = first
			}
			w.applied++
		}
		w.mu.Unlock()
		if w.heldHere(ctx, req.Tool, true) {
			return nil, ctx.Err()
		}
		return &proto.CallResponse{Result: first}, nil
	case "brain_promote":
		return &proto.CallResponse{Result: []byte(`{"promoted":true}`)}, nil
	case "brain_list": // every note, by id, in one page
		w.mu.Lock()
		ids := slices.Sorted(maps.Keys(w.notes))
		w.mu.Unlock()
		type note struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		out := struct {
			Notes      []note `json:"notes"`
			NextCursor string `json:"next_cursor"`
		}{Notes: []note{}}
		for _, id := range ids {
			out.Notes = append(out.Notes, note{id, "Note " + id})
		}
		b, _ := json.Marshal(out)
		return &proto.CallResponse{Result: b}, nil
	case "brain_slow":
		select {
		case w.slowIn <- struct{}{}:
		default:
		}
		select {
		case <-w.slowGate:
			return &proto.CallResponse{Result: []byte(`{"slow":"done"}`)}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "brain_query":
		w.queryCalls.Add(1)
		if args.Query == "" {
			return toolErr("invalid_argument", "query is required"), nil
		}
		return w.query(search.Terms(args.Query), args.Limit, nil), nil
	}
	return nil, &proto.Error{Code: proto.CodeUnknownTool, Message: req.Tool}
}

// scored is a note id and its toy score.
type scored struct {
	id    string
	score float64
}

// score scores notes by a toy tf·idf over whole words, using the given
// corpus statistics when present, so merged cross-wing scores are
// comparable only if the gateway summed the statistics right. It returns
// every matching note, best first.
func (w *testWing) score(terms []string, st *search.Stats) []scored {
	local := w.stats(terms)
	if st == nil {
		st = &local
	}
	var hits []scored
	w.mu.Lock()
	for _, n := range w.notes {
		var score float64
		words := strings.Fields(strings.ToLower(n.Body))
		for _, term := range terms {
			tf := 0
			for _, wd := range words {
				if wd == term {
					tf++
				}
			}
			if tf > 0 && st.DocFreq[term] > 0 {
				score += float64(tf) * math.Log(1+float64(st.Docs)/float64(st.DocFreq[term]))
			}
		}
		if score > 0 {
			hits = append(hits, scored{n.ID, score})
		}
	}
	w.mu.Unlock()
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].id < hits[j].id
	})
	return hits
}

// renderHit writes a hit with odd spacing the gateway must keep.
func (w *testWing) renderHit(h scored) []byte {
	w.rendered.Add(1)
	return fmt.Appendf(nil, `{ "id":%q, "score":%s, "wing":%q }`, h.id, strconvF(h.score), w.name)
}

// query answers a whole brain_query: the best hits, rendered, and total.
func (w *testWing) query(terms []string, limit int, st *search.Stats) *proto.CallResponse {
	if limit <= 0 {
		limit = 10
	}
	hits := w.score(terms, st)
	var b bytes.Buffer
	b.WriteString(`{"hits":[`)
	for i, h := range hits[:min(limit, len(hits))] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(w.renderHit(h))
	}
	fmt.Fprintf(&b, `],"total":%d}`, len(hits))
	return &proto.CallResponse{Result: b.Bytes()}
}

func strconvF(f float64) string { b, _ := json.Marshal(f); return string(b) }

func (w *testWing) stats(terms []string) search.Stats {
	st := search.Stats{DocFreq: map[string]int64{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.notes {
		st.Docs++
		words := strings.Fields(strings.ToLower(n.Body))
		st.TotalLength += int64(len(words))
		for _, term := range terms {
			st.DocFreq[term] += 0
			for _, wd := range words {
				if wd == term {
					st.DocFreq[term]++
					break
				}
			}
		}
	}
	return st
}

func (w *testWing) Stats(ctx context.Context, req *proto.StatsRequest) (*proto.StatsResponse, error) {
	w.statsCalls.Add(1)
	if w.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	gen := w.gen.Load()
	return &proto.StatsResponse{StatsResponse: search.StatsResponse{Stats: w.stats(req.Terms), Generation: gen}}, nil
}

// Rank answers the rank step: keys and scores only, or stale with fresh
// statistics when the wing changed since the generation assumed.
func (w *testWing) Rank(ctx context.Context, req *proto.RankRequest) (*proto.RankResponse, error) {
	w.queryCalls.Add(1)
	if err := w.checkToken(req.Token); err != nil {
		return nil, err
	}
	if w.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	gen := w.gen.Load()
	if req.Generation != 0 && req.Generation != gen {
		st := w.stats(req.Query.Terms)
		return &proto.RankResponse{RankResponse: search.RankResponse{Generation: gen, Stale: true, Stats: &st}}, nil
	}
	hits := w.score(req.Query.Terms, req.Stats)
	resp := &proto.RankResponse{RankResponse: search.RankResponse{Generation: gen, Total: int64(len(hits))}}
	render := req.Render
	if c := int(w.renderCap.Load()); c > 0 {
		render = min(render, c)
	}
	for i, h := range hits[:min(max(req.Query.Limit, 1), len(hits))] {
		resp.Ranked = append(resp.Ranked, search.Ranked{Key: h.id, Score: h.score})
		if i < render {
			resp.Hits = append(resp.Hits, w.renderHit(h))
		}
	}
	w.lastRender.Store(int64(req.Render))
	return resp, nil
}

// checkToken refuses a search step's token as Call does.
func (w *testWing) checkToken(token string) error {
	w.tokens.Store(token, true)
	if w.failCalls.Load() {
		return &proto.Error{Code: proto.CodeUnauthenticated, Message: "token refused (test)"}
	}
	w.mu.Lock()
	v := w.verifier
	w.mu.Unlock()
	if _, err := v.Verify(token); err != nil {
		return &proto.Error{Code: proto.CodeUnauthenticated, Message: err.Error()}
	}
	return nil
}

// Fetch answers the fetch step: the named hits, rendered.
func (w *testWing) Fetch(_ context.Context, req *proto.FetchRequest) (*proto.FetchResponse, error) {
	w.queryCalls.Add(1)
	if err := w.checkToken(req.Token); err != nil {
		return nil, err
	}
	if w.failFetch.Load() {
		return nil, &proto.Error{Code: proto.CodeUnavailable, Message: "draining (test)"}
	}
	byID := map[string]scored{}
	for _, h := range w.score(req.Query.Terms, req.Stats) {
		byID[h.id] = h
	}
	resp := &proto.FetchResponse{}
	for _, k := range req.Keys {
		if h, ok := byID[k]; ok {
			resp.Hits = append(resp.Hits, w.renderHit(h))
		}
	}
	return resp, nil
}

// ---------- proto servers ----------

// shardServer runs a testWing behind a real proto.Server on loopback QUIC.
type shardServer struct {
	t    testing.TB
	pki  *testPKI
	wing *testWing
	addr string

	mu     sync.Mutex
	srv    *proto.Server
	pc     net.PacketConn
	cancel context.CancelFunc
	done   chan struct{}
}

func startShard(t testing.TB, p *testPKI, w *testWing, addr string) *shardServer {
	t.Helper()
	s := &shardServer{t: t, pki: p, wing: w}
	s.start(addr)
	t.Cleanup(s.stop)
	return s
}

func (s *shardServer) start(addr string) {
	s.t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	rk, err := proto.DeriveStatelessResetKey(s.pki.resetSecret, "wing "+s.wing.name)
	if err != nil {
		s.t.Fatal(err)
	}
	srv := proto.NewServer(s.wing, proto.ServerConfig{TLS: s.pki.shardTLS, StatelessResetKey: rk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, pc)
	}()
	select {
	case <-srv.Ready():
	case <-done:
		s.t.Fatal("proto server stopped before it was ready")
	}
	s.mu.Lock()
	s.srv, s.cancel, s.done, s.pc = srv, cancel, done, pc
	s.addr = pc.LocalAddr().String()
	s.mu.Unlock()
}

func (s *shardServer) stop() {
	s.mu.Lock()
	srv, cancel, done, pc := s.srv, s.cancel, s.done, s.pc
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, c := context.WithTimeout(context.Background(), 5*time.Second)
	_ = srv.Shutdown(ctx)
	c()
	cancel()
	<-done
	_ = pc.Close()
}

// restart stops the server and starts a new one on the same address.
func (s *shardServer) restart() {
	addr := s.addr
	s.stop()
	s.start(addr)
}

// crashAndRestart makes the server vanish without a word (its socket is
// closed, as when the process is killed) and starts a successor on the
// same address with the same stateless-reset key, which resets the
// gateway's old connection at its next packet.
func (s *shardServer) crashAndRestart() {
	s.mu.Lock()
	srv, cancel, done, pc, addr := s.srv, s.cancel, s.done, s.pc, s.addr
	s.srv = nil
	s.mu.Unlock()
	_ = pc.Close()
	<-done
	cancel()
	_ = srv
	s.start(addr)
}

// waitConnected waits until the gateway's client of wing holds a
// connection again (after a shard restart the gateway redials in the
// background and calls fail fast until then).
func (e *testEnv) waitConnected(wing string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.gw.byName[wing].Client.(*proto.Client).WaitConnected(ctx); err != nil {
		e.t.Fatalf("wing %s: %v", wing, err)
	}
}

// ---------- identity provider ----------

// testIdPSecret is the client secret of the gateway's authorization server
// at the test IdP.
const testIdPSecret = "gateway-client-secret"

type testIdP struct {
	p      *devidp.Provider
	offset atomic.Int64 // added to the IdP's clock (to mint expired tokens)
}

func startIdP(t testing.TB) *testIdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	idp := &testIdP{}
	p, err := devidp.Serve(ctx, ln, devidp.Config{ClientSecret: testIdPSecret,
		Now: func() time.Time { return time.Now().Add(time.Duration(idp.offset.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	idp.p = p
	return idp
}

func (i *testIdP) token(t testing.TB, email string, groups ...string) string {
	t.Helper()
	tok, _, err := i.p.Mint(email, groups, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ---------- gateway ----------

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// auditLines parses every audit line written so far.
func (s *syncBuffer) auditLines(t testing.TB) []AuditLine {
	t.Helper()
	var out []AuditLine
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if l == "" {
			continue
		}
		var a AuditLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, a)
	}
	return out
}

type testEnv struct {
	t      testing.TB
	pki    *testPKI
	idp    *testIdP
	wings  map[string]*testWing
	shards map[string]*shardServer
	gw     *Gateway
	url    string // MCP endpoint
	base   string // http://host:port
	audit  *syncBuffer
	logs   *syncBuffer
}

type envOpt func(*config.Config, *Options)

// newEnv starts an IdP, one proto server per wing and a gateway serving on
// loopback. wings maps a wing name to its policy; order follows names.
func newEnv(t testing.TB, names []string, policies map[string]auth.Policy, opts ...envOpt) *testEnv {
	t.Helper()
	e := &testEnv{t: t, pki: newTestPKI(t), idp: startIdP(t), wings: map[string]*testWing{},
		shards: map[string]*shardServer{}, audit: &syncBuffer{}, logs: &syncBuffer{}}
	var wcs []config.WingConfig
	for _, n := range names {
		w := newTestWing(t, n, policies[n])
		e.wings[n] = w
		e.shards[n] = startShard(t, e.pki, w, "")
		wcs = append(wcs, config.WingConfig{Name: n, Address: e.shards[n].addr, ServerName: "localhost"})
	}
	e.startGateway(wcs, opts...)
	return e
}

func (e *testEnv) config(wcs []config.WingConfig, base string) config.Config {
	cfg := config.DefaultConfig()
	cfg.PublicURL = base
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:1"
	cfg.OIDC.Issuers = []sso.IssuerConfig{{URL: e.idp.p.Issuer(), Audiences: []string{e.idp.p.ClientID()}}}
	cfg.Wings = wcs
	cfg.Shards.RetryBase = time.Millisecond
	cfg.Shards.CallTimeout = 10 * time.Second
	cfg.Limits.CallsPerSecond = 100000
	cfg.Limits.Burst = 100000
	cfg.Limits.FailedAuthPerMinute = 10000
	cfg.DrainGrace = 0 // TestDrainGrace has its own
	return cfg
}

// startGatewayOn builds and serves a gateway on ln; it returns the gateway.
// prep, if any, runs on the gateway before it serves.
func (e *testEnv) startGatewayOn(ln net.Listener, cfg config.Config, opt Options, prep ...func(*Gateway)) *Gateway {
	t := e.t
	t.Helper()
	opt.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opt.AuditLog = e.audit
	opt.ShardTLS = e.pki.gwTLS
	gw, err := New(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prep {
		p(gw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		_ = gw.Close()
	})
	return gw
}

func (e *testEnv) startGateway(wcs []config.WingConfig, opts ...envOpt) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	e.base = "http://" + ln.Addr().String()
	cfg := e.config(wcs, e.base)
	var opt Options
	for _, o := range opts {
		o(&cfg, &opt)
	}
	e.gw = e.startGatewayOn(ln, cfg, opt)
	e.url = e.base + "/mcp"
}

// client returns an initialized mcp-go Streamable HTTP client for token.
// legacy pins the session-based protocol (2025-06-18); otherwise the
// client's default negotiation (2026-07-28, stateless) is used.
func (e *testEnv) client(t testing.TB, token string, legacy bool) *client.Client {
	t.Helper()
	return newMCPClient(t, e.url, token, legacy)
}

func newMCPClient(t testing.TB, url, token string, legacy bool, topts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	topts = append([]transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}, topts...)
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if legacy {
		opts = append(opts, client.WithProtocolVersion(mcp.ProtocolVersion20250618))
	}
	c := client.NewClient(tr, opts...)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocolFor(legacy),
		ClientInfo:      mcp.Implementation{Name: "gateway-test", Version: "0"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func protocolFor(legacy bool) string {
	if legacy {
		return mcp.ProtocolVersion20250618
	}
	return ""
}

// call runs a tool and returns its text and isError.
func call(t testing.TB, c *client.Client, tool string, args string) (string, bool) {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatalf("CallTool %s %s: %v", tool, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("CallTool %s: %d contents", tool, len(res.Content))
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("CallTool %s: content %T", tool, res.Content[0])
	}
	return tc.Text, res.IsError
}

// errCode returns the code of a {"error":{"code"}} tool error.
func errCode(t testing.TB, text string) brain.Code {
	t.Helper()
	code, msg, ok := brain.DecodeError([]byte(text))
	if !ok {
		t.Fatalf("not a tool error: %q", text)
	}
	if msg == "" {
		t.Fatalf("tool error without message: %q", text)
	}
	return code
}

// rawPost sends one JSON-RPC body to the MCP endpoint with headers.
func rawPost(t testing.TB, url string, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

var policyOpen = auth.Policy{Readers: []string{"*"}, Writers: []string{"*"}}

// getRoutes are brain_get's routing arguments: the shape of every route
// (a wing, a note reference, a path), which testdata/routes.txt exercises.
var getRoutes = []toolspec.RouteArg{{Arg: "wing", As: toolspec.RouteWing}, {Arg: "id", As: toolspec.RouteRef}, {Arg: "path", As: toolspec.RoutePath}}

// routeWing parses args and routes them (rpc.Args.Route).
func routeWing(args []byte, routes []toolspec.RouteArg) (wing string, ok bool, err error) {
	a, err := rpc.ParseArgs(args)
	if err != nil {
		return "", false, err
	}
	return a.Route(routes)
}

// grantGet is route.GrantCache.GetKey for an identity's own key.
func grantGet(ctx context.Context, c *route.GrantCache, id auth.Identity, w *route.Wing, requestID string) (route.Grant, bool, error) {
	return c.GetKey(ctx, id, route.KeyOf(id), w, requestID)
}

// hitKey is what a test reads of a hit: its id and score.
type hitKey struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// shardHits is a brain_query result with each hit kept as raw bytes.
type shardHits struct {
	Hits  []json.RawMessage `json:"hits"`
	Total int64             `json:"total"`
}

// AdminHandler serves /metrics, /healthz, /readyz and the operator's
// /signins endpoints (offboarding.go).
func (g *Gateway) AdminHandler() http.Handler { return g.admin }
