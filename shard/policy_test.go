package shard

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// sample returns the value of the series name (counter or gauge) on reg
// whose labels include every pair in labels, and whether it exists.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue metric
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// configMap lays a policy out as a Kubernetes ConfigMap volume does:
// policy.yaml -> ..data/policy.yaml, ..data -> ..<version>/; a new version
// is a new directory and an atomic swap of the ..data symlink.
type configMap struct {
	dir     string
	version int
}

func newConfigMap(t *testing.T, policy string) *configMap {
	t.Helper()
	c := &configMap{dir: t.TempDir()}
	c.update(t, policy)
	if err := os.Symlink(filepath.Join("..data", "policy.yaml"), filepath.Join(c.dir, "policy.yaml")); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *configMap) path() string { return filepath.Join(c.dir, "policy.yaml") }

func (c *configMap) update(t *testing.T, policy string) {
	t.Helper()
	c.version++
	v := filepath.Join(c.dir, ".."+strings.Repeat("v", c.version))
	if err := os.Mkdir(v, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v, "policy.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(c.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(v), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func openLive(t *testing.T, file string, logs *logcheck.Buffer, reg prometheus.Registerer) *Service {
	t.Helper()
	now := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	svc, err := Open(context.Background(), Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t), Now: now.Now,
		PolicyFile: file, PolicyPoll: -1, Metrics: reg,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// TestPolicyEditEnforcedOnNextCall: a policy mounted as a ConfigMap is
// edited (symlink swap); after the reload, the next call of a reader who
// was removed is refused — the cached token notwithstanding — and a mint
// for them is refused; a writer added gets write on the next call (after a
// re-mint the gateway does on its own); a group removed from the policy
// loses its members' access; a broken edit is refused loudly and the
// policy in force stays.
func TestPolicyEditEnforcedOnNextCall(t *testing.T) {
	cm := newConfigMap(t, "readers: [\"email:rita@example.com\", \"group:auditors\"]\nwriters: [\"email:will@example.com\"]\n")
	var logs logcheck.Buffer
	reg := prometheus.NewRegistry()
	svc := openLive(t, cm.path(), &logs, reg)
	ctx := context.Background()
	sso := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	get := []byte(`{"id":"payments/facts/retry-budgets"}`)
	write := []byte(`{"title":"From Rita","body":"b","hall":"facts"}`)
	call := func(tok, tool string, args []byte) error {
		resp, err := svc.Call(ctx, &proto.CallRequest{Token: tok, Tool: tool, Args: args})
		if err == nil && resp.IsError {
			code, msg, _ := brain.DecodeError(resp.Result)
			return brain.Errorf(code, "%s", msg)
		}
		return err
	}
	rita := mint(t, svc, "rita@example.com", sso).Token
	audit, err := svc.Mint(ctx, proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: "ann@example.com", Groups: []string{"auditors", "unrelated"}, NotAfter: sso})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{rita, audit.Token} {
		if err := call(tok, "brain_get", get); err != nil {
			t.Fatalf("before the edit: %v", err)
		}
	}
	if e, ok := brain.As(call(rita, "brain_write", write)); !ok || e.Code != brain.CodeForbidden {
		t.Fatalf("reader writes before the edit: %v, want forbidden", err)
	}

	// A broken edit: refused, logged, counted; the policy in force stays.
	sha, _ := svc.PolicySHA256()
	cm.update(t, "readers: [email:rita@example.com]\nwriterz: []\n")
	if changed, err := svc.ReloadPolicy(false); changed || err == nil {
		t.Fatalf("a broken policy was taken: %v %v", changed, err)
	}
	if got, _ := svc.PolicySHA256(); got != sha {
		t.Fatal("the policy in force changed after a broken edit")
	}
	if len(logs.Lines("policy file rejected")) != 1 {
		t.Fatalf("the broken policy was not logged (once): %v", logs.Lines("policy file rejected"))
	}
	if _, err := svc.ReloadPolicy(false); err == nil || len(logs.Lines("policy file rejected")) != 1 {
		t.Fatal("the same broken version is logged again or accepted")
	}
	if err := call(rita, "brain_get", get); err != nil {
		t.Fatalf("after a broken edit: %v", err)
	}

	// The real edit: Rita moves from readers to writers; the auditors
	// group is removed; Will is removed.
	will := mint(t, svc, "will@example.com", sso).Token
	cm.update(t, "readers: [\"email:nobody@example.com\"]\nwriters: [\"email:rita@example.com\"]\n")
	if changed, err := svc.ReloadPolicy(false); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	tests := []struct {
		name string
		tok  string
		tool string
		args []byte
		code proto.Code // 0: runs
	}{
		{"a removed writer is refused at once (mint again)", will, "brain_get", get, proto.CodeUnauthenticated},
		{"a removed group's member is refused at once", audit.Token, "brain_get", get, proto.CodeUnauthenticated},
		{"a reader whose grant only grew still reads", rita, "brain_get", get, 0},
		{"a new writer's old token cannot write yet (mint again)", rita, "brain_write", write, proto.CodeUnauthenticated},
	}
	for _, tt := range tests {
		if err := call(tt.tok, tt.tool, tt.args); proto.CodeOf(err) != tt.code || (tt.code == 0) != (err == nil) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.code)
		}
	}
	if _, err := svc.Mint(ctx, proto.Peer{Role: "gateway", CommonName: "gw-1"}, &proto.MintRequest{RequestID: "m-9", Email: "will@example.com", NotAfter: sso}); proto.CodeOf(err) != proto.CodeForbidden {
		t.Errorf("mint for a removed writer: %v, want forbidden", err)
	}
	if err := call(mint(t, svc, "rita@example.com", sso).Token, "brain_write", write); err != nil {
		t.Errorf("the new writer after a re-mint: %v", err)
	}

	// Logs and metrics.
	refused := logs.Lines("mint refused")
	if len(refused) != 1 || refused[0]["peer_role"] != "gateway" || refused[0]["peer_cn"] != "gw-1" || refused[0]["request_id"] != "m-9" ||
		!strings.Contains(refused[0]["reason"].(string), "policy") {
		t.Errorf("refused mints logged as %v", refused)
	}
	if len(logs.Lines("policy reloaded")) != 1 {
		t.Error("the reload was not logged")
	}
	ok, _ := sample(t, reg, "brainstem_shard_policy_reloads_total", "result", "ok")
	ko, _ := sample(t, reg, "brainstem_shard_policy_reloads_total", "result", "error")
	if ok != 1 || ko != 1 {
		t.Errorf("reload metrics ok=%v error=%v, want 1 and 1", ok, ko)
	}
	if n, _ := sample(t, reg, "brainstem_shard_stale_grant_refusals_total"); n != 3 {
		t.Errorf("stale grant refusals = %v, want 3", n)
	}
	if n, _ := sample(t, reg, "brainstem_shard_mints_total", "outcome", "no_access"); n != 1 {
		t.Errorf("refused mints counted %v, want 1", n)
	}
	if at, ok := sample(t, reg, "brainstem_shard_policy_loaded_timestamp_seconds"); !ok || at == 0 {
		t.Error("no policy_loaded_timestamp_seconds")
	}
	if _, ok := sample(t, reg, "brainstem_shard_idempotency_keys"); !ok {
		t.Error("no idempotency_keys gauge")
	}

	// Touching the file without changing it is not a reload; SIGHUP
	// (force) re-reads it anyway.
	now := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(cm.dir, "..data", "policy.yaml"), now, now)
	if changed, err := svc.ReloadPolicy(true); changed || err != nil {
		t.Errorf("a forced reload of the same policy: %v %v", changed, err)
	}
}

// TestPolicyFileMustBeValidAtStart: a shard does not start on a broken
// policy file.
func TestPolicyFileMustBeValidAtStart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(p, []byte("readers: [bogus]\n"), 0o644)
	_, err := Open(context.Background(), Config{Brain: newBrain(t), Wing: "payments", Key: key(t), PolicyFile: p})
	if err == nil || !strings.Contains(err.Error(), "readers[0]") {
		t.Fatalf("Open with a broken policy: %v", err)
	}
}

// TestCallKeyFromTheRequest: the idempotency key the gateway sends beside
// the arguments makes a retried write answer the first result.
func TestCallKeyFromTheRequest(t *testing.T) {
	now := &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	brain := newBrain(t)
	svc := openService(t, brain, key(t), now)
	w := mint(t, svc, "wendy@example.com", now.Now().Add(time.Hour)).Token
	req := &proto.CallRequest{Token: w, Tool: "brain_write", Args: []byte(`{"title":"Once","body":"b","hall":"facts"}`), IdempotencyKey: "gw-1"}
	first, err := svc.Call(context.Background(), req)
	if err != nil || first.IsError {
		t.Fatalf("%v %s", err, first.Result)
	}
	again, err := svc.Call(context.Background(), req)
	if err != nil || string(again.Result) != string(first.Result) {
		t.Fatalf("retry: %v %s, want %s", err, again.Result, first.Result)
	}
	if _, err := os.Stat(filepath.Join(brain, ".brainstem", "payments", "idempotency.journal")); err != nil {
		t.Fatalf("no journal in the default state directory: %v", err)
	}
}
