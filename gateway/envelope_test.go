package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzLeanParse: whatever the body, the one walk either declines or finds
// what encoding/json finds, as mcp-go reads it: the envelope's fields, the
// params' name, arguments and _meta, and the arguments' members.
func FuzzLeanParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"a"},` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"n","arguments":{"a":1,"a":2,"\u0062":[1e3]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"n","arguments":"x","_meta":null}}`,
		`{"Method":"tools/call","params":{}}`, `{"method":"tools/list","method":"tools/call","params":{}}`,
		`{"params":{"name":"a\u0062","task":{}}}`, `{"params":{"arguments":{"n":1e999}},"x":[]}`, `[]`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lb, ok := leanParse(body)
		if !ok {
			return
		}
		var msg rpcMessage
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("the walk took %q, encoding/json refuses it: %v", body, err)
		}
		if msg.JSONRPC != lb.msg.JSONRPC || msg.Method != lb.msg.Method || !bytes.Equal(msg.ID, lb.msg.ID) ||
			!bytes.Equal(bytes.TrimSpace(msg.Params), lb.msg.Params) || msg.Result != nil || msg.Error != nil {
			t.Fatalf("%q: walk %+v, encoding/json %+v", body, lb.msg, msg)
		}
		var p callParams
		perr := json.Unmarshal(msg.Params, &p)
		if (lb.metaShape == argsOther || (lb.metaShape == argsObject && !lb.metaFit)) != (perr != nil) {
			t.Fatalf("%q: walk meta %v fit %v; encoding/json: %v", body, lb.metaShape, lb.metaFit, perr)
		}
		if perr != nil {
			return
		}
		if p.Name != lb.name || !bytes.Equal(p.Arguments, lb.argsRaw) || !bytes.Equal(p.Meta, metaRef(lb.meta)) {
			t.Fatalf("%q: walk name %q args %q meta %q; encoding/json %q %q %q", body, lb.name, lb.argsRaw, lb.meta, p.Name, p.Arguments, p.Meta)
		}
		args, fit := scanArgs(p.Arguments)
		if args.shape != lb.args.shape || fit != lb.argsFit || len(args.fields) != len(lb.args.fields) {
			t.Fatalf("%q: walk args %+v fit %v; scan %+v fit %v", body, lb.args, lb.argsFit, args, fit)
		}
		for i := range args.fields {
			if args.fields[i].name != lb.args.fields[i].name || !bytes.Equal(args.fields[i].v, lb.args.fields[i].v) {
				t.Fatalf("%q: member %d: walk %+v, scan %+v", body, i, lb.args.fields[i], args.fields[i])
			}
		}
	})
}

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
