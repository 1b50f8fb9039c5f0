package gateway

import (
	"bytes"
	"net/http"
	"testing"
)

// TestToolCallDecodedOnce: a stateless tools/call is decoded once on the
// gateway (its body walked once, envelope, params and arguments together)
// and once on the shard (the tool's spec decodes the arguments), whatever
// tool; a session-era call goes through mcp-go and its own decoding.
func TestToolCallDecodedOnce(t *testing.T) {
	e := newLeanEnv(t)
	token := e.idp.token(t, "ann@acme.com")
	hdr := modernHeaders("brain_get")
	hdr["Authorization"] = "Bearer " + token
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/decisions/idem"},` + modernMeta + `}}`
	rawPost(t, e.url, body, hdr) // warm: mints, the catalog
	before := e.gw.ParsesForTest()
	resp, out := rawPost(t, e.url, body, hdr)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`payments/decisions/idem`)) {
		t.Fatalf("call: %d %s", resp.StatusCode, out)
	}
	if n := e.gw.ParsesForTest() - before; n != 1 {
		t.Fatalf("the gateway decoded the call %d times, want once", n)
	}
}
