package shard

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const note = `---
title: Retry budgets
wing: payments
hall: facts
---
Clients retry with a budget.
`

func openService(t *testing.T, brain string, key auth.KeyPair, now *clock) *Service {
	t.Helper()
	svc, err := Open(context.Background(), Config{
		Brain: brain, Wing: "payments", Key: key, Now: now.Now,
		Policy: auth.Policy{Readers: []string{"domain:example.com"}, Writers: []string{"email:wendy@example.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func newBrain(t *testing.T) string {
	t.Helper()
	brain := t.TempDir()
	dir := filepath.Join(brain, "wiki", "payments", "facts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "retry-budgets.md"), []byte(note), 0o644); err != nil {
		t.Fatal(err)
	}
	return brain
}

func key(t *testing.T) auth.KeyPair {
	t.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mint(t *testing.T, svc *Service, email string, notAfter time.Time) *proto.MintResponse {
	t.Helper()
	resp, err := svc.Mint(context.Background(), proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: email, NotAfter: notAfter})
	if err != nil {
		t.Fatalf("mint %s: %v", email, err)
	}
	return resp
}

func TestServiceMintAndCall(t *testing.T) {
	now := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	root := newBrain(t)
	svc := openService(t, root, key(t), now)
	ctx := context.Background()
	sso := now.Now().Add(time.Hour)

	reader := mint(t, svc, " Reader@Example.com ", sso)
	if got := reader.Caps; len(got) != 1 || got[0] != "read" {
		t.Errorf("reader caps %v", got)
	}
	if !reader.Expiry.After(now.Now()) || reader.Expiry.After(sso) {
		t.Errorf("expiry %v not within (now, SSO expiry]", reader.Expiry)
	}
	writer := mint(t, svc, "wendy@example.com", sso)

	get := []byte(`{"id":"payments/facts/retry-budgets"}`)
	write := []byte(`{"hall":"facts","title":"New fact","body":"x"}`)
	tests := []struct {
		name  string
		token string
		tool  string
		args  []byte
		code  proto.Code // 0: the call succeeds, or is refused with toolErr
		// toolErr is the code of the tool error a call is refused with:
		// capabilities are checked once, by the tool set, like any refusal.
		toolErr brain.Code
	}{
		{"reader reads", reader.Token, "brain_get", get, 0, ""},
		{"reader reads again (cached token)", reader.Token, "brain_get", get, 0, ""},
		{"reader cannot write", reader.Token, "brain_write", write, 0, brain.CodeForbidden},
		{"writer writes", writer.Token, "brain_write", write, 0, ""},
		{"unknown tool", reader.Token, "brain_nope", get, proto.CodeUnknownTool, ""},
		{"garbage token", "not-a-token", "brain_get", get, proto.CodeUnauthenticated, ""},
		{"no token", "", "brain_get", get, proto.CodeUnauthenticated, ""},
	}
	for _, tt := range tests {
		resp, err := svc.Call(ctx, &proto.CallRequest{Token: tt.token, Tool: tt.tool, Args: tt.args})
		if tt.toolErr != "" {
			if code, _, _ := brain.DecodeError(resp.Result); err != nil || !resp.IsError || code != tt.toolErr {
				t.Errorf("%s: %v %s, want the tool error %s", tt.name, err, resp.Result, tt.toolErr)
			}
			continue
		}
		if tt.code == 0 {
			if err != nil || resp.IsError {
				t.Errorf("%s: %v %s", tt.name, err, resp.Result)
			}
			continue
		}
		if got := proto.CodeOf(err); got != tt.code {
			t.Errorf("%s: code %v (%v), want %v", tt.name, got, err, tt.code)
		}
	}

	// An outsider is refused a token; so is an empty email.
	_, err := svc.Mint(ctx, proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: "eve@evil.test", NotAfter: sso})
	if proto.CodeOf(err) != proto.CodeForbidden {
		t.Errorf("outsider mint: %v", err)
	}
	_, err = svc.Mint(ctx, proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: " ", NotAfter: sso})
	if proto.CodeOf(err) != proto.CodeBadRequest {
		t.Errorf("empty email mint: %v", err)
	}

	// A token the service has verified (and remembers) still expires.
	now.Add(reader.Expiry.Sub(now.Now()) + auth.ShardTokenLeeway + time.Second)
	_, err = svc.Call(ctx, &proto.CallRequest{Token: reader.Token, Tool: "brain_get", Args: get})
	if proto.CodeOf(err) != proto.CodeUnauthenticated {
		t.Errorf("expired cached token: %v", err)
	}
}

func TestServiceRefusesOtherKeysAndWings(t *testing.T) {
	now := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	dir := newBrain(t)
	old := openService(t, dir, key(t), now)
	tok := mint(t, old, "reader@example.com", now.Now().Add(time.Hour)).Token
	get := []byte(`{"id":"payments/facts/retry-budgets"}`)
	if _, err := old.Call(context.Background(), &proto.CallRequest{Token: tok, Tool: "brain_get", Args: get}); err != nil {
		t.Fatal(err)
	}

	// The shard restarted with a new key: the old token must be re-minted.
	old.Close()
	restarted := openService(t, dir, key(t), now)
	_, err := restarted.Call(context.Background(), &proto.CallRequest{Token: tok, Tool: "brain_get", Args: get})
	if proto.CodeOf(err) != proto.CodeUnauthenticated {
		t.Errorf("token of the previous key: %v", err)
	}

	// A token another wing minted is refused as such.
	other, _, err := auth.NewMinter("platform", key(t), 0, now.Now).Mint("reader@example.com", brain.CapRead, now.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, err = restarted.Call(context.Background(), &proto.CallRequest{Token: other, Tool: "brain_get", Args: get})
	var pe *proto.Error
	if !errors.As(err, &pe) || (pe.Code != proto.CodeForbidden && pe.Code != proto.CodeUnauthenticated) {
		t.Errorf("token of another wing: %v", err)
	}

	// Stats and health answer for the wing.
	st, err := restarted.Stats(context.Background(), &proto.StatsRequest{StatsRequest: search.StatsRequest{Terms: search.Terms("retry budget")}})
	if err != nil || st.Stats.Docs != 1 || st.Stats.DocFreq["retry"] != 1 || st.Generation == 0 {
		t.Errorf("stats %+v, %v", st, err)
	}
	h, err := restarted.Health(context.Background())
	if err != nil || h.Wing != "payments" || h.Notes != 1 || !h.Ready {
		t.Errorf("health %+v, %v", h, err)
	}
	lt, err := restarted.ListTools(context.Background())
	var descs []map[string]any
	if err != nil || json.Unmarshal(lt.Tools, &descs) != nil || len(descs) != len(restarted.Tools().Specs()) || len(descs) < 17 { // 18 tools, brain_purge unlisted while purging is off
		t.Errorf("tools: %d descriptors, %v", len(descs), err)
	}
}
