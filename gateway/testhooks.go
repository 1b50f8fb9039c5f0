package gateway

import "testing"

// Test hooks. The gateway's production code holds no test-only switches of
// its own: a test changes its behaviour only through the ForTest methods
// below, which panic outside a test binary (testing.Testing), so no
// production caller can reach them, while the tests of any package can.
// The hooks themselves live in one struct, zero in production.
// docs/decisions.md says why this pattern.

// testHooks are what the ForTest methods set.
type testHooks struct {
	noLeanPath bool // mcp-go serves every request (SetLeanPathForTest)
}

func mustBeTesting(method string) {
	if !testing.Testing() {
		panic("gateway: " + method + " is for tests only")
	}
}

// SetLeanPathForTest turns the lean path for stateless tool calls
// (gateway/rpc/lean.go) on or off; it is on unless a test turns it off, and then
// mcp-go serves every request, which the differential tests compare the
// lean path against. Call it before the requests it is meant for.
func (g *Gateway) SetLeanPathForTest(on bool) {
	mustBeTesting("SetLeanPathForTest")
	g.test.noLeanPath = !on
}

// OnMintJoinForTest makes fn be called each time a lookup of the grant
// cache has joined a mint flight, so that a test can wait until all its
// racing callers are in the flight. Call it before the calls it observes.
func (g *Gateway) OnMintJoinForTest(fn func()) {
	mustBeTesting("OnMintJoinForTest")
	g.grants.OnMintJoin = fn // route.GrantCache calls it
}

// countParse counts one decode of a request's JSON (a body, params or
// arguments) for ParsesForTest: a tools/call on the lean path is decoded
// once.
func (g *Gateway) countParse() { g.parses.Add(1) }

// ParsesForTest returns how many times the gateway has decoded a request's
// JSON (bodies, params, arguments) since it started.
func (g *Gateway) ParsesForTest() int64 {
	mustBeTesting("ParsesForTest")
	return g.parses.Load()
}
