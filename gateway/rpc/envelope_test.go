package rpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// modernMeta is the _meta of a 2026-07-28 request (as gateway's
// fastcall_test.go sends it).
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}`

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
		lb, ok := ParseLean(body)
		if !ok {
			return
		}
		var msg Message
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("the walk took %q, encoding/json refuses it: %v", body, err)
		}
		if msg.JSONRPC != lb.Msg.JSONRPC || msg.Method != lb.Msg.Method || !bytes.Equal(msg.ID, lb.Msg.ID) ||
			!bytes.Equal(bytes.TrimSpace(msg.Params), lb.Msg.Params) || msg.Result != nil || msg.Error != nil {
			t.Fatalf("%q: walk %+v, encoding/json %+v", body, lb.Msg, msg)
		}
		var p CallParams
		perr := json.Unmarshal(msg.Params, &p)
		if (lb.MetaShape == ShapeOther || (lb.MetaShape == ShapeObject && !lb.MetaFit)) != (perr != nil) {
			t.Fatalf("%q: walk meta %v fit %v; encoding/json: %v", body, lb.MetaShape, lb.MetaFit, perr)
		}
		if perr != nil {
			return
		}
		if p.Name != lb.Name || !bytes.Equal(p.Arguments, lb.ArgsRaw) || !bytes.Equal(p.Meta, MetaRef(lb.Meta)) {
			t.Fatalf("%q: walk name %q args %q meta %q; encoding/json %q %q %q", body, lb.Name, lb.ArgsRaw, lb.Meta, p.Name, p.Arguments, p.Meta)
		}
		args, fit := ScanArgs(p.Arguments)
		if args.shape != lb.Args.shape || fit != lb.ArgsFit || len(args.fields) != len(lb.Args.fields) {
			t.Fatalf("%q: walk args %+v fit %v; scan %+v fit %v", body, lb.Args, lb.ArgsFit, args, fit)
		}
		for i := range args.fields {
			if args.fields[i].name != lb.Args.fields[i].name || !bytes.Equal(args.fields[i].v, lb.Args.fields[i].v) {
				t.Fatalf("%q: member %d: walk %+v, scan %+v", body, i, lb.Args.fields[i], args.fields[i])
			}
		}
	})
}
