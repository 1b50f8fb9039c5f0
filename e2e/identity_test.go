package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/brainstem/brainstem/tooling/devenv"
)

// These tests hold the identity rules of docs/security.md through the real
// thing: the development IdP minting tokens, the gateway, and the three
// sample shards with their sample policies (deploy/examples/policies).

// token mints a development SSO token.
func token(t testing.TB, env *devenv.Env, email string, groups ...string) string {
	t.Helper()
	tok, _, err := env.Token(email, groups)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// callErr calls a tool that must fail and returns the code and message of
// its tool error.
func callErr(t testing.TB, c *client.Client, tool, args string) (code, message string) {
	t.Helper()
	text, isErr := call(t, c, tool, args)
	if !isErr {
		t.Fatalf("%s %s: want a tool error, got %s", tool, args, text)
	}
	var te struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &te); err != nil || te.Error.Code == "" || te.Error.Message == "" {
		t.Fatalf("not a tool error: %s", text)
	}
	return te.Error.Code, te.Error.Message
}

// mints reads brainstem_gateway_mints_total{wing, outcome} from the
// gateway's metrics.
func mints(t testing.TB, env *devenv.Env, wing, outcome string) int {
	t.Helper()
	resp, err := http.Get(env.AdminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := fmt.Sprintf(`brainstem_gateway_mints_total{outcome=%q,wing=%q} `, outcome, wing)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q", sc.Text())
			}
			return int(n)
		}
	}
	return 0
}

const peopleNote = `{"id":"people-ops/facts/leave-policy-summary"}`

// TestGroupsFollowTheToken (D1): people-ops admits the group people-team.
// A group removed at the IdP stops working on the very next call made with
// the new token, and a group granted works on the very next call, although
// the gateway holds a grant (or a remembered refusal) for the same email.
func TestGroupsFollowTheToken(t *testing.T) {
	env := startEnv(t)

	t.Run("removed group stops working", func(t *testing.T) {
		with := httpClient(t, env.MCPURL, token(t, env, "carol@example.com", "people-team"))
		if text, isErr := call(t, with, "brain_get", peopleNote); isErr {
			t.Fatalf("carol in people-team cannot read people-ops: %s", text)
		}
		if text, isErr := call(t, with, "brain_write", `{"wing":"people-ops","inbox":true,"title":"Carol's note","body":"as a member"}`); isErr {
			t.Fatalf("carol in people-team cannot write people-ops: %s", text)
		}
		without := httpClient(t, env.MCPURL, token(t, env, "carol@example.com"))
		code, _ := callErr(t, without, "brain_get", peopleNote)
		if code == "" {
			t.Fatal("no code")
		}
		if text, isErr := call(t, without, "brain_write", `{"wing":"people-ops","inbox":true,"title":"Carol again","body":"removed from the group"}`); !isErr {
			t.Fatalf("carol removed from people-team still writes people-ops: %s", text)
		}
		if text, _ := call(t, without, "brain_wings", `{}`); strings.Contains(text, "people-ops") {
			t.Fatalf("brain_wings without the group names people-ops: %s", text)
		}
		// The old token still carries the group and still works: the grant
		// follows the token in hand, not the last token seen.
		if text, isErr := call(t, with, "brain_get", peopleNote); isErr {
			t.Fatalf("the token with the group stopped working: %s", text)
		}
	})

	t.Run("granted group works at once", func(t *testing.T) {
		// dave is refused (and the refusal remembered for deny_ttl)...
		before := httpClient(t, env.MCPURL, token(t, env, "dave@example.com"))
		callErr(t, before, "brain_get", peopleNote)
		callErr(t, before, "brain_get", peopleNote)
		// ...then gains the group: the very next call succeeds.
		after := httpClient(t, env.MCPURL, token(t, env, "dave@example.com", "people-team"))
		if text, isErr := call(t, after, "brain_get", peopleNote); isErr {
			t.Fatalf("dave granted people-team is still refused: %s", text)
		}
		if text, _ := call(t, after, "brain_wings", `{}`); !strings.Contains(text, "people-ops") {
			t.Fatalf("brain_wings with the group lacks people-ops: %s", text)
		}
	})

	t.Run("group order does not matter", func(t *testing.T) {
		m0 := mints(t, env, "people-ops", "ok")
		a := httpClient(t, env.MCPURL, token(t, env, "erin@example.com", "people-team", "eng", "people-team"))
		b := httpClient(t, env.MCPURL, token(t, env, "erin@example.com", "eng", "people-team"))
		for i := range 3 {
			for _, c := range []*client.Client{a, b} {
				if text, isErr := call(t, c, "brain_get", peopleNote); isErr {
					t.Fatalf("call %d: %s", i, text)
				}
			}
		}
		if n := mints(t, env, "people-ops", "ok") - m0; n != 1 {
			t.Fatalf("%d mints for one email and one group set sent in two orders, want 1", n)
		}
	})
}

// TestWingExistenceIsNotDisclosed (D4): someone with no capability in a
// wing gets the same answer for it as for a wing that does not exist.
func TestWingExistenceIsNotDisclosed(t *testing.T) {
	env := startEnv(t)
	bob := httpClient(t, env.MCPURL, token(t, env, "bob@example.com"))
	for _, tool := range []struct{ name, real, fake string }{
		{"brain_get", `{"id":"people-ops/facts/leave-policy-summary"}`, `{"id":"hr-secrets/facts/leave-policy-summary"}`},
		{"brain_list", `{"wing":"people-ops"}`, `{"wing":"hr-secrets"}`},
		{"brain_write", `{"wing":"people-ops","inbox":true,"title":"t","body":"b"}`, `{"wing":"hr-secrets","inbox":true,"title":"t","body":"b"}`},
		{"brain_query", `{"wing":"people-ops","query":"leave"}`, `{"wing":"hr-secrets","query":"leave"}`},
	} {
		for range 2 { // first call mints (and is refused), the second is answered from the cache
			realCode, realMsg := callErr(t, bob, tool.name, tool.real)
			fakeCode, fakeMsg := callErr(t, bob, tool.name, tool.fake)
			if realCode != fakeCode || strings.ReplaceAll(realMsg, "people-ops", "hr-secrets") != fakeMsg {
				t.Fatalf("%s: a wing bob may not read answers %s %q, a wing that does not exist %s %q",
					tool.name, realCode, realMsg, fakeCode, fakeMsg)
			}
		}
	}
	if text, _ := call(t, bob, "brain_wings", `{}`); strings.Contains(text, "people-ops") {
		t.Fatalf("bob's brain_wings names people-ops: %s", text)
	}
	// (Notes bob can read may link to people-ops notes: that is their
	// content. The answer's own fields must not name it.)
	text, _ := call(t, bob, "brain_query", `{"query":"leave policy onboarding"}`)
	var q struct {
		Hits        []struct{ Wing string } `json:"hits"`
		Wings       []string                `json:"wings"`
		Unavailable []struct{ Wing string } `json:"unavailable"`
	}
	if err := json.Unmarshal([]byte(text), &q); err != nil {
		t.Fatal(err)
	}
	for _, w := range q.Wings {
		if w == "people-ops" {
			t.Fatalf("bob's cross-wing search names people-ops: %s", text)
		}
	}
	for _, h := range append(q.Hits, q.Unavailable...) {
		if h.Wing == "people-ops" {
			t.Fatalf("bob's cross-wing search names people-ops: %s", text)
		}
	}
}

// TestGetByPath (D6): brain_get with a wiki or inbox path as id (or as
// path) and no wing reaches the wing the path names.
func TestGetByPath(t *testing.T) {
	env := startEnv(t)
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	pending, isErr := call(t, alice, "brain_pending", `{"wing":"platform","limit":1}`)
	if isErr {
		t.Fatal(pending)
	}
	var p struct {
		Pending []struct{ Path string } `json:"pending"`
	}
	if err := json.Unmarshal([]byte(pending), &p); err != nil || len(p.Pending) != 1 {
		t.Fatalf("brain_pending: %v %s", err, pending)
	}
	inbox := p.Pending[0].Path
	for _, args := range []string{
		`{"id":"wiki/payments/decisions/use-idempotency-keys.md"}`,
		`{"id":"wiki/payments/decisions/use-idempotency-keys"}`,
		`{"path":"wiki/payments/decisions/use-idempotency-keys.md"}`,
		`{"id":"` + inbox + `"}`,
		`{"path":"` + inbox + `"}`,
	} {
		text, isErr := call(t, alice, "brain_get", args)
		if isErr {
			t.Errorf("brain_get %s: %s", args, text)
			continue
		}
		var n struct{ Path, Body string }
		if err := json.Unmarshal([]byte(text), &n); err != nil || n.Body == "" || !strings.Contains(args, strings.TrimSuffix(n.Path, ".md")) {
			t.Errorf("brain_get %s answered %s", args, text)
		}
	}
}

// TestArgumentNamesAreExact: an argument name in another case is an unknown
// argument through the gateway as on the shard, whatever the wing routing.
func TestArgumentNamesAreExact(t *testing.T) {
	env := startEnv(t)
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	for _, args := range []string{
		`{"wing":"payments","query":"ledger","LIMIT":3}`,
		`{"wing":"payments","Query":"ledger"}`,
		`{"WING":"payments","query":"ledger"}`,
		`{"wing":"payments","query":"ledger","Wing":"platform"}`,
	} {
		code, msg := callErr(t, alice, "brain_query", args)
		if code != "invalid_argument" || !strings.Contains(msg, "unknown argument") {
			t.Errorf("brain_query %s: %s %q, want invalid_argument naming the unknown argument", args, code, msg)
		}
	}
}
