package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
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
)

// readCases reads a testdata attack list: one case per line, the expected
// outcome, one space, the input; # comments and blank lines are skipped.
func readCases(t *testing.T, name string) [][2]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, input, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", name, line)
		}
		out = append(out, [2]string{want, input})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no cases", name)
	}
	return out
}

// TestRouteWingCases runs testdata/routes.txt through routeWing: a wiki or
// inbox path in id or path routes to the wing it names, and argument names
// are matched exactly.
func TestRouteWingCases(t *testing.T) {
	for _, c := range readCases(t, "testdata/routes.txt") {
		want, args := c[0], c[1]
		wing, ok, err := routeWing([]byte(args), getRoutes)
		var got string
		switch {
		case err != nil:
			got = "!"
			if e := edge.Classify(err, ""); e.Code != brain.CodeInvalidArgument {
				t.Errorf("routeWing(%s): error code %s, want %s", args, e.Code, brain.CodeInvalidArgument)
			}
		case !ok:
			got = "-"
		default:
			got = wing
		}
		if got != want {
			t.Errorf("routeWing(%s) = %q (ok=%v, err=%v), want %q", args, wing, ok, err, want)
		}
	}
}

// TestDownWingNotDisclosed: while a wing's shard is down the gateway cannot
// ask it whether a caller may read it, so it names that wing only to callers
// holding a grant for it. An outsider sees it neither in brain_wings nor in a
// cross-wing search, and a call naming it gets the answer a wing that does
// not exist gets.
func TestDownWingNotDisclosed(t *testing.T) {
	e := newEnv(t, []string{"open", "closed"}, map[string]auth.Policy{
		"open":   policyOpen,
		"closed": {Readers: []string{"email:alice@acme.com"}},
	}, func(c *config.Config, _ *Options) { c.Shards.CallTimeout = 2 * time.Second })
	e.wings["open"].addNote("open/f/1", "rust", "x@acme.com")
	e.wings["closed"].addNote("closed/f/1", "rust secret", "x@acme.com")
	alice := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	if text, _ := call(t, alice, "brain_wings", `{}`); !strings.Contains(text, `"closed"`) {
		t.Fatalf("alice's brain_wings: %s", text)
	}
	e.shards["closed"].stop()

	bob := e.client(t, e.idp.token(t, "bob@acme.com"), false)
	for _, tc := range []struct{ tool, args string }{
		{"brain_wings", `{}`},
		{"brain_query", `{"query":"rust"}`},
		{"brain_wings", `{}`}, // again, now that the wing is known to be down
	} {
		text, _ := call(t, bob, tc.tool, tc.args)
		if strings.Contains(text, "closed") {
			t.Errorf("bob's %s names the down wing he cannot read: %s", tc.tool, text)
		}
	}
	down, isErr := call(t, bob, "brain_get", `{"id":"closed/f/1"}`)
	none, _ := call(t, bob, "brain_get", `{"id":"nowhere/f/1"}`)
	if !isErr || errCode(t, down) != brain.CodeUnknownWing || strings.ReplaceAll(down, "closed", "nowhere") != none {
		t.Errorf("bob's call to the down wing: %s; to a wing that does not exist: %s", down, none)
	}
	// alice holds a grant: she is told the truth.
	if text, _ := call(t, alice, "brain_get", `{"id":"closed/f/1"}`); errCode(t, text) != brain.CodeUnavailable {
		t.Errorf("alice's call to the down wing: %s", text)
	}
	if text, _ := call(t, alice, "brain_query", `{"query":"rust"}`); !strings.Contains(text, `"unavailable":[{"wing":"closed"`) {
		t.Errorf("alice's cross-wing search does not report the down wing: %s", text)
	}
}

// TestSingleflightPerGroupSet: the grant cache keys on email and group
// set. Concurrent first calls by one email with the same groups in two
// orders share one mint; the same email with another group set gets its
// own mint (and its own answer: here the policy's refusal).
func TestSingleflightPerGroupSet(t *testing.T) {
	e := newEnv(t, []string{"team"}, map[string]auth.Policy{"team": {Readers: []string{"group:a"}}})
	w := e.wings["team"]
	w.addNote("team/f/x", "hello", "a@acme.com")
	clients := []struct {
		groups []string
		ok     bool
	}{{[]string{"a", "b"}, true}, {[]string{"b", "a", "b"}, true}, {[]string{"b"}, false}}
	gate := make(chan struct{})
	w.mintGate.Store(&gate)
	const n = 30
	joined := make(chan struct{}, len(clients)*n)
	e.gw.OnMintJoinForTest(func() { joined <- struct{}{} })
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for _, cl := range clients {
		c := e.client(t, e.idp.token(t, "alice@acme.com", cl.groups...), false)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "brain_get", Arguments: json.RawMessage(`{"id":"team/f/x"}`)}})
				if err != nil || res.IsError == cl.ok {
					wrong.Add(1)
				}
			}()
		}
	}
	for range len(clients) * n {
		<-joined
	}
	close(gate)
	wg.Wait()
	w.mintGate.Store(nil)
	if f := wrong.Load(); f != 0 {
		t.Fatalf("%d calls got the wrong answer", f)
	}
	if m := w.mints.Load(); m != 2 {
		t.Fatalf("%d mints for one email with two group sets (one of them in two orders), want 2", m)
	}
}

// TestHeldCapsOutliveTheToken: when a grant's token expires the cache
// forgets the token but remembers the capabilities (which decide whether a
// wing that cannot be reached may be named); a refusal is never a
// capability, and another group set holds nothing.
func TestHeldCapsOutliveTheToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fc := &fakeMintClient{exp: now.Add(10 * time.Minute)}
	w := &route.Wing{Idx: 0, Name: "w", Client: fc}
	sc := route.NewGrantCache([]*route.Wing{w}, 10, time.Hour, time.Minute, time.Second, func() time.Time { return now }, nopMetrics{}, slog.New(slog.DiscardHandler))
	alice := auth.Identity{Email: "alice@acme.com", Groups: []string{"x"}, Expiry: now.Add(time.Hour)}
	if _, _, err := grantGet(context.Background(), sc, alice, w, "r"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(11 * time.Minute)
	if _, ok := sc.Cached(route.KeyOf(alice), w); ok {
		t.Fatal("an expired token was used")
	}
	if got := sc.Held(route.KeyOf(alice), w); got != brain.CapRead {
		t.Fatalf("held after expiry = %v, want read", got)
	}
	other := alice
	other.Groups = []string{"y"}
	if got := sc.Held(route.KeyOf(other), w); got != 0 {
		t.Fatalf("another group set holds %v", got)
	}
	fc.deny.Store(true)
	bob := auth.Identity{Email: "bob@acme.com", Expiry: now.Add(time.Hour)}
	if _, _, err := grantGet(context.Background(), sc, bob, w, "r"); !errors.Is(err, route.ErrNotAdmitted) {
		t.Fatalf("denied mint: %v", err)
	}
	if got := sc.Held(route.KeyOf(bob), w); got != 0 {
		t.Fatalf("a refusal holds %v", got)
	}
}
