package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// startLiveEnv is startEnv with the shards' policy polling off (the tests
// trigger reloads) and the gateway's memory of denials as short as it gets,
// so that what a test observes is the shard's decision on each call.
func startLiveEnv(t *testing.T) *devenv.Env {
	t.Helper()
	return devenvtest.Start(t, devenv.Config{PolicyPoll: -1, Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
		c.Grants.DenyTTL = time.Nanosecond
	}})
}

func toolCode(t *testing.T, text string) string {
	t.Helper()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		t.Fatalf("not a tool error: %s", text)
	}
	return e.Error.Code
}

// TestPolicyEditEnforcedOnTheNextCall: real shards over QUIC behind the real
// gateway. Users hold cached shard tokens; the payments policy file is
// edited and the shard told to look (what its 2-second poll or a SIGHUP
// does). The very next calls follow the new policy: a removed reader is
// refused, a demoted curator can no longer write, a new reader gets in,
// and the demoted curator still reads.
func TestPolicyEditEnforcedOnTheNextCall(t *testing.T) {
	env := startLiveEnv(t)
	client := func(email string) func(tool, args string) (string, bool) {
		tok, _, err := env.Token(email, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := httpClient(t, env.MCPURL, tok)
		return func(tool, args string) (string, bool) { return call(t, c, tool, args) }
	}
	alice, bob, dave := client("alice@example.com"), client("bob@example.com"), client("dave@example.com")
	get := `{"id":"payments/decisions/use-idempotency-keys"}`
	if text, isErr := bob("brain_get", get); isErr {
		t.Fatalf("bob reads before the edit: %s", text)
	}
	if text, isErr := alice("brain_write", `{"wing":"payments","title":"Before the edit","body":"b","hall":"facts"}`); isErr {
		t.Fatalf("alice writes before the edit: %s", text)
	}
	// Someone with no capability in a wing is told it is not one they can
	// reach, exactly as for a wing that does not exist (least disclosure).
	if text, isErr := dave("brain_get", get); !isErr || toolCode(t, text) != "unknown_wing" {
		t.Fatalf("dave before the edit: %s", text)
	}

	edited := "readers: [\"email:alice@example.com\", \"email:dave@example.com\"]\nwriters: []\ncurators: []\n"
	if err := os.WriteFile(env.PolicyPath("payments"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := env.ReloadPolicy("payments"); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	// bob read payments a moment ago, so being told he no longer may
	// discloses nothing new (he is not told "no such wing").
	if text, isErr := bob("brain_get", get); !isErr || toolCode(t, text) != "forbidden" {
		t.Errorf("bob, removed, on his next call: %s", text)
	}
	if text, isErr := alice("brain_write", `{"wing":"payments","title":"After the edit","body":"b","hall":"facts"}`); !isErr || toolCode(t, text) != "forbidden" {
		t.Errorf("alice, demoted to reader, writes: %s", text)
	}
	if _, err := os.Stat(filepath.Join(env.BrainDir, "wiki", "payments", "facts", "after-the-edit.md")); err == nil {
		t.Error("the refused write is on disk")
	}
	for name, c := range map[string]func(string, string) (string, bool){"alice": alice, "dave": dave} {
		if text, isErr := c("brain_get", get); isErr {
			t.Errorf("%s reads after the edit: %s", name, text)
		}
	}
	// A broken edit changes nothing.
	if err := os.WriteFile(env.PolicyPath("payments"), []byte("readers: [\"email:bob@example.com\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := env.ReloadPolicy("payments"); err == nil {
		t.Fatal("a broken policy file was accepted")
	}
	if text, isErr := bob("brain_get", get); !isErr {
		t.Errorf("bob after a broken edit: %s", text)
	}
}

// TestIdempotentWritesThroughTheGateway: an agent's idempotency_key goes
// through the gateway to a real shard: the retry answers the first bytes
// and writes nothing, other arguments are a conflict. And a CallRequest the
// gateway sends again (a retry after a lost answer, same gateway key) is
// applied once by the shard over QUIC.
func TestIdempotentWritesThroughTheGateway(t *testing.T) {
	env := startLiveEnv(t)
	tok, exp, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := httpClient(t, env.MCPURL, tok)
	facts := filepath.Join(env.BrainDir, "wiki", "payments", "facts")
	count := func() int {
		es, _ := os.ReadDir(facts)
		return len(es)
	}
	before := count()
	args := `{"wing":"payments","title":"Retries carry keys","body":"Always.\n","hall":"facts","idempotency_key":"6f1d0c1e-agent"}`
	first, isErr := call(t, gw, "brain_write", args)
	if isErr {
		t.Fatal(first)
	}
	again, isErr := call(t, gw, "brain_write", args)
	if isErr || again != first {
		t.Fatalf("retry through the gateway: %s, want %s", again, first)
	}
	other, isErr := call(t, gw, "brain_write", strings.Replace(args, "Always.", "Never.", 1))
	if !isErr || toolCode(t, other) != "conflict" {
		t.Fatalf("other arguments with the key: %s", other)
	}
	if n := count(); n != before+1 {
		t.Fatalf("%d notes written, want 1", n-before)
	}

	// The gateway's own retry: the same CallRequest twice over QUIC.
	c, err := env.DialShard("payments")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	m, err := c.Mint(ctx, &proto.MintRequest{Email: "alice@example.com", NotAfter: exp})
	if err != nil {
		t.Fatal(err)
	}
	req := &proto.CallRequest{Token: m.Token, Tool: "brain_write", IdempotencyKey: "gw-00112233445566778899aabbccddeeff",
		Args: []byte(`{"wing":"payments","title":"Sent twice","body":"b","hall":"facts"}`)}
	r1, err := c.Call(ctx, req)
	if err != nil || r1.IsError {
		t.Fatalf("%v %s", err, r1.Result)
	}
	r2, err := c.Call(ctx, req)
	if err != nil || string(r2.Result) != string(r1.Result) {
		t.Fatalf("the same CallRequest again: %v %s, want %s", err, r2.Result, r1.Result)
	}
	if n := count(); n != before+2 {
		t.Fatalf("%d notes written in all, want 2", n-before)
	}
}
