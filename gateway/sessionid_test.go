package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/edge"
)

// TestSessionBoundToIdentity: an Mcp-Session-Id belongs to the identity
// that created it. Another user's DELETE, GET or POST with it is 404 (as
// for an unknown session), and cannot end or join the owner's session.
func TestSessionBoundToIdentity(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	alice := "Bearer " + e.idp.token(t, "alice@acme.com")
	aliceAgain := "Bearer " + e.idp.token(t, "ALICE@acme.com", "a-new-group") // same person, another token
	bob := "Bearer " + e.idp.token(t, "bob@acme.com")

	resp, body := rawPost(t, e.url, initBody, map[string]string{"Authorization": alice})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s, session %q", resp.StatusCode, body, sid)
	}
	listBody := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	session := func(auth string) map[string]string {
		return map[string]string{"Authorization": auth, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}
	}

	do := func(method, auth string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, e.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range session(auth) {
			req.Header.Set(k, v)
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req) // returns with the headers: a GET stream is not read
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if got := do(http.MethodGet, bob); got != http.StatusNotFound {
		t.Errorf("bob's GET with alice's session: %d, want 404", got)
	}
	if resp, body := rawPost(t, e.url, listBody, session(bob)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob's POST with alice's session: %d %s, want 404", resp.StatusCode, body)
	}
	if got := do(http.MethodDelete, bob); got != http.StatusNotFound {
		t.Errorf("bob's DELETE of alice's session: %d, want 404", got)
	}
	// alice's session is intact, whichever of her tokens she sends.
	for _, a := range []string{alice, aliceAgain} {
		if resp, body := rawPost(t, e.url, listBody, session(a)); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "brain_wings") {
			t.Fatalf("alice's own session after bob's attempts: %d %s", resp.StatusCode, body)
		}
	}
	if got := do(http.MethodDelete, alice); got != http.StatusOK {
		t.Errorf("alice's DELETE of her session: %d, want 200", got)
	}
	// A session id that was never issued is 404 too.
	sid = "mcp-session-" + strings.Repeat("0", 8) + "-0000-4000-8000-" + strings.Repeat("0", 12)
	if resp, body := rawPost(t, e.url, listBody, session(alice)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unissued session id: %d %s, want 404", resp.StatusCode, body)
	}
}

// TestJSONRPCIDs runs testdata/rpc-ids.txt: ids other than strings and
// numbers are refused with 400 and JSON-RPC invalid request, on the
// session path (2025-06-18) and on the stateless path (2026-07-28) alike.
func TestJSONRPCIDs(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	e.wings["payments"].addNote("payments/f/x", "hello", "a@acme.com")
	tok := "Bearer " + e.idp.token(t, "alice@acme.com")
	resp, body := rawPost(t, e.url, initBody, map[string]string{"Authorization": tok})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	for _, c := range readCases(t, "testdata/rpc-ids.txt") {
		want, id := c[0], c[1]
		requests := []struct {
			name string
			body string
			hdr  map[string]string
		}{
			{"initialize", strings.Replace(initBody, `"id":1`, `"id":`+id, 1), map[string]string{"Authorization": tok}},
			{"session tools/call", `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/f/x"}}}`,
				map[string]string{"Authorization": tok, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}},
			{"stateless tools/call", `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"brain_get","arguments":{"id":"payments/f/x"},` + modernMeta + `}}`,
				withHeader(modernHeaders("brain_get"), "Authorization", tok)},
		}
		for _, r := range requests {
			resp, body := rawPost(t, e.url, r.body, r.hdr)
			var rpc struct {
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(body, &rpc)
			refused := resp.StatusCode == http.StatusBadRequest && rpc.Error != nil && rpc.Error.Code == edge.RPCInvalidRequest
			if refused != (want == "refused") {
				t.Errorf("%s with id %s: %d %s; want %s", r.name, id, resp.StatusCode, body, want)
			}
		}
	}
}
