package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/check"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
)

// purgeSecret is the text a purge must remove from the remote too.
const purgeSecret = "the-vault-pin-is-2468-1357"

const (
	budgets    = "wiki/payments/facts/retry-budgets.md"
	budgetsID  = `{"id":"payments/facts/retry-budgets"}`
	curatorOfT = "cora@example.com"
)

// purgeRig is a remote rig whose wing allows purge with the force-push
// setting, its note holding a secret version that has been pushed (the
// blob id of that version) and a redacted current version. forceOK sets
// whether the remote accepts a force push.
func purgeRig(t *testing.T, forceOK bool) (*remoteRig, string) {
	t.Helper()
	g := newRemoteRigWith(t, 50*time.Millisecond, time.Hour, func(c *Config) {
		c.History.AllowPurge = true
		c.Remote.ForcePushOnPurge = true
		c.Policy.Curators = []string{"email:" + curatorOfT}
	})
	adaGit(t, g.bare, "config", "receive.denyNonFastForwards", fmt.Sprint(!forceOK))
	g.call(t, "wendy@example.com", "brain_update", `{"id":"payments/facts/retry-budgets","body":"Retries: `+purgeSecret+`\n","reason":"oops"}`)
	var blob string
	eventually(t, "the secret version pushed", func() bool {
		out, err := ada.Git(g.bare, "show", "main:"+budgets)
		if err != nil || !strings.Contains(out, purgeSecret) {
			return false
		}
		blob = strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main:"+budgets))
		return true
	})
	g.call(t, "wendy@example.com", "brain_update", `{"id":"payments/facts/retry-budgets","body":"Retries: redacted\n","reason":"redact"}`)
	eventually(t, "the redaction pushed", func() bool {
		out, err := ada.Git(g.bare, "show", "main:"+budgets)
		return err == nil && strings.Contains(out, "redacted")
	})
	return g, blob
}

// gets reports whether brain_get of id answers with want in its text (a
// tool error: false).
func (g *remoteRig) gets(t *testing.T, id, want string) bool {
	t.Helper()
	tok := mint(t, g.svc, "reader@example.com", g.now.Now().Add(time.Hour)).Token
	resp, err := g.svc.Call(context.Background(), &proto.CallRequest{Token: tok, Tool: "brain_get", Args: []byte(`{"id":"` + id + `"}`)})
	return err == nil && !resp.IsError && strings.Contains(string(resp.Result), want)
}

// versionsOf returns the note's versions as brain_history lists them.
func (g *remoteRig) versionsOf(t *testing.T) []struct {
	Version string
	Purged  bool
} {
	t.Helper()
	var h struct {
		Versions []struct {
			Version string
			Purged  bool
		}
	}
	if err := json.Unmarshal([]byte(g.call(t, "reader@example.com", "brain_history", budgetsID)), &h); err != nil {
		t.Fatal(err)
	}
	return h.Versions
}

// purgeSecretVersion purges the secret version (the second newest) with
// brain_purge and returns the tool's result and whether it is an error.
func (g *remoteRig) purgeSecretVersion(t *testing.T) (string, bool) {
	t.Helper()
	vs := g.versionsOf(t)
	if len(vs) < 3 {
		t.Fatalf("versions %+v", vs)
	}
	tok := mint(t, g.svc, curatorOfT, g.now.Now().Add(time.Hour)).Token
	args := fmt.Sprintf(`{"id":"payments/facts/retry-budgets","version":%q,"reason":"a secret was pasted"}`, vs[1].Version)
	resp, err := g.svc.Call(context.Background(), &proto.CallRequest{Token: tok, Tool: "brain_purge", Args: []byte(args)})
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.Result), resp.IsError
}

// freshClone clones the remote with the git CLI over its HTTP server
// (a clone of the bare repository's path would copy its every object,
// unreachable ones too, which the host's own gc removes in its time).
func (g *remoteRig) freshClone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fresh")
	adaGit(t, t.TempDir(), "clone", "--quiet", "--mirror", g.url, dir)
	return dir
}

// assertNoSecret checks that a fresh clone of the remote holds no object
// with the secret, nor the secret version's blob.
func assertNoSecret(t *testing.T, g *remoteRig, blob string) {
	t.Helper()
	fresh := g.freshClone(t)
	if log := adaGit(t, fresh, "log", "--all", "-p"); strings.Contains(log, purgeSecret) {
		t.Errorf("git log --all -p of a fresh clone shows the secret")
	}
	if out, err := ada.Git(fresh, "cat-file", "-e", blob); err == nil {
		t.Errorf("a fresh clone holds the purged blob %s (%s)", blob, out)
	}
	if all := adaGit(t, fresh, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(all, purgeSecret) {
		t.Errorf("an object of a fresh clone holds the secret")
	}
}

// TestRemotePurgeForcePushes: a curator purges a pushed version; the
// remote's branch is force pushed, a fresh clone holds nothing of it,
// and brain_history shows the version purged.
func TestRemotePurgeForcePushes(t *testing.T) {
	g, blob := purgeRig(t, true)
	old := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main"))
	if res, isErr := g.purgeSecretVersion(t); isErr {
		t.Fatalf("brain_purge: %s", res)
	}
	head := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main"))
	if head == old {
		t.Fatal("the remote branch did not move")
	}
	if _, err := ada.Git(g.bare, "merge-base", "--is-ancestor", old, head); err == nil {
		t.Error("the remote branch moved by a fast-forward: the old history is still in it")
	}
	local := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD"))
	if local != head {
		t.Errorf("the remote is at %s, the wing at %s", head, local)
	}
	if vs := g.versionsOf(t); len(vs) < 3 || !vs[1].Purged {
		t.Errorf("brain_history after the purge: %+v", vs)
	}
	assertNoSecret(t, g, blob)
	if st := g.svc.Remote().Status(); st.ForcePushPending || st.LastError != "" {
		t.Errorf("status %+v", st)
	}
	// The syncer goes on as before: an agent's write is pushed, and a
	// person's note pushed from a new clone is pulled (through the
	// quarantine, since the wing has purged content).
	g.call(t, "wendy@example.com", "brain_write", `{"hall":"facts","title":"After purge","body":"later"}`)
	eventually(t, "a write after the purge pushed", func() bool {
		_, err := ada.Git(g.bare, "cat-file", "-e", "main:wiki/payments/facts/after-purge.md")
		return err == nil
	})
	clone := filepath.Join(t.TempDir(), "new")
	adaGit(t, t.TempDir(), "clone", "--quiet", g.url, clone)
	mustWrite(t, filepath.Join(clone, "wiki/payments/facts/new-clone.md"), []byte("---\ntitle: New clone\n---\nFrom a clone made after the purge: a wombat.\n"), 0o644)
	adaGit(t, clone, "add", "-A")
	adaGit(t, clone, "commit", "--quiet", "-m", "A note from a new clone")
	adaGit(t, clone, "push", "--quiet", "origin", "main")
	g.svc.Remote().Trigger()
	eventually(t, "the new clone's note in brain_get", func() bool { return g.gets(t, "payments/facts/new-clone", "wombat") })
	if _, err := ada.Git(g.svc.cfg.Brain, "cat-file", "-e", blob); err == nil {
		t.Error("the purged blob is on the wing's disk")
	}
}

// TestRemotePurgeNeedsRemote: with the remote down the purge is refused
// before anything changes.
func TestRemotePurgeNeedsRemote(t *testing.T) {
	g, _ := purgeRig(t, true)
	before := g.versionsOf(t)
	head := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD"))
	g.srv.Close()
	res, isErr := g.purgeSecretVersion(t)
	if !isErr || !strings.Contains(res, "unavailable") || !strings.Contains(res, "nothing was changed") {
		t.Fatalf("brain_purge with the remote down: %v %s", isErr, res)
	}
	_, err := g.svc.store.Purge(context.Background(), store.Purging{Ref: "payments/facts/retry-budgets", Version: before[1].Version, Reason: "r", By: curatorOfT})
	if !errors.Is(err, remote.ErrPurgeNeedsRemote) {
		t.Errorf("store.Purge = %v, want %v", err, remote.ErrPurgeNeedsRemote)
	}
	if now := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD")); now != head {
		t.Errorf("a refused purge moved the branch from %s to %s", head, now)
	}
	after := g.versionsOf(t)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("history changed: %+v, was %+v", after, before)
	}
	if _, err := os.Stat(filepath.Join(g.svc.cfg.Brain, ".git", filepath.FromSlash(remote.ForcePushFile))); err == nil {
		t.Error("a refused purge left a force push pending")
	}
	if out := adaGit(t, g.svc.cfg.Brain, "show", before[1].Version+":"+budgets); !strings.Contains(out, purgeSecret) {
		t.Error("the version's content is gone after a refused purge")
	}
}

// TestRemotePurgePending: a remote that refuses the force push (branch
// protection) leaves the purge done locally and the push pending, listed
// in Status and by brainstem check, across a restart; once the remote
// allows it, the next round force pushes.
func TestRemotePurgePending(t *testing.T) {
	g, blob := purgeRig(t, false)
	if res, isErr := g.purgeSecretVersion(t); isErr {
		t.Fatalf("brain_purge: %s", res)
	}
	if st := g.svc.Remote().Status(); !st.ForcePushPending || st.LastError == "" {
		t.Fatalf("status after a refused force push: %+v", st)
	}
	if v := pendingGauge(t, g.svc.Remote()); v != 1 {
		t.Errorf("brainstem_remote_force_push_pending = %v while pending", v)
	}
	if vs := g.versionsOf(t); !vs[1].Purged {
		t.Fatalf("the purge is not done locally: %+v", vs)
	}
	if _, err := ada.Git(g.svc.cfg.Brain, "cat-file", "-e", blob); err == nil {
		t.Error("the wing's repository still holds the purged blob")
	}
	rep, ok, err := remote.ReadReport(filepath.Join(g.svc.cfg.Brain, ".git"))
	if err != nil || !ok || !rep.ForcePushPending {
		t.Fatalf("status file %+v %v %v", rep, ok, err)
	}
	if text, _ := checkReport(t, g); !strings.Contains(text, "not force pushed") {
		t.Errorf("brainstem check does not list the pending force push:\n%s", text)
	}
	// The pending force push survives a restart.
	cfg := g.svc.cfg
	if err := g.svc.Close(); err != nil {
		t.Fatal(err)
	}
	svc, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	g.svc = svc
	if st := g.svc.Remote().Status(); !st.ForcePushPending {
		t.Fatalf("status after a restart: %+v", st)
	}
	adaGit(t, g.bare, "config", "receive.denyNonFastForwards", "false")
	g.svc.Remote().Trigger()
	eventually(t, "the pending force push done", func() bool { return !g.svc.Remote().Status().ForcePushPending })
	assertNoSecret(t, g, blob)
	if v := pendingGauge(t, g.svc.Remote()); v != 0 {
		t.Errorf("brainstem_remote_force_push_pending = %v once pushed", v)
	}
	if text, _ := checkReport(t, g); strings.Contains(text, "not force pushed") || !strings.Contains(text, "in sync") {
		t.Errorf("brainstem check after the force push:\n%s", text)
	}
	local := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD"))
	if head := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main")); head != local {
		t.Errorf("the remote is at %s, the wing at %s", head, local)
	}
}

// TestRemotePurgedContentRefused: a clone made before the purge force
// pushes the old history back; the shard refuses it (ErrPurgedContent),
// integrates nothing, writes none of it to its disk, keeps serving, and
// pushes nothing on top of it.
func TestRemotePurgedContentRefused(t *testing.T) {
	g, blob := purgeRig(t, true)
	adaGit(t, g.clone, "pull", "--quiet", "--ff-only") // the stale clone holds the secret version
	if res, isErr := g.purgeSecretVersion(t); isErr {
		t.Fatalf("brain_purge: %s", res)
	}
	local := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD"))
	adaGit(t, g.clone, "push", "--quiet", "--force", "origin", "main")
	stale := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main"))
	g.svc.Remote().Trigger()
	eventually(t, "the stale history refused", func() bool {
		return strings.Contains(g.svc.Remote().Status().LastError, remote.ErrPurgedContent.Error())
	})
	if now := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD")); now != local {
		t.Errorf("the wing's branch moved from %s to %s", local, now)
	}
	if got := g.call(t, "reader@example.com", "brain_get", budgetsID); strings.Contains(got, purgeSecret) || !strings.Contains(got, "redacted") {
		t.Errorf("brain_get: %s", got)
	}
	g.call(t, "wendy@example.com", "brain_write", `{"hall":"facts","title":"Meanwhile","body":"still serving"}`)
	g.svc.Remote().Trigger()
	if rep, _ := checkReport(t, g); !strings.Contains(rep, "holds purged content") {
		t.Errorf("brainstem check does not say why:\n%s", rep)
	}
	if err := g.svc.Remote().Round(context.Background()); !errors.Is(err, remote.ErrPurgedContent) {
		t.Errorf("a round = %v, want %v", err, remote.ErrPurgedContent)
	}
	if head := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main")); head != stale {
		t.Errorf("the shard pushed over the stale history: %s, was %s", head, stale)
	}
	if _, err := ada.Git(g.svc.cfg.Brain, "merge-base", "--is-ancestor", stale, "HEAD"); err == nil {
		t.Error("the stale history was integrated into the wing's branch")
	}
	// The refused history stayed in the fetch's quarantine, in memory.
	if _, err := ada.Git(g.svc.cfg.Brain, "cat-file", "-e", blob); err == nil {
		t.Error("the stale push's purged blob reached the wing's disk")
	}
	if _, err := ada.Git(g.svc.cfg.Brain, "cat-file", "-e", stale); err == nil {
		t.Error("the stale push's head commit reached the wing's disk")
	}
}

// checkReport is the text of brainstem check on the rig's brain, and its
// verdict (the sample note's own frontmatter problems included).
func checkReport(t *testing.T, g *remoteRig) (string, error) {
	t.Helper()
	rep, err := check.Brain(context.Background(), g.svc.cfg.Brain, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	return out.String(), rep.Err()
}

// TestRemotePurgeCatchesUp: the remote gains a person's commit after the
// purge synced with it (the force push was refused meanwhile); the next
// round takes that commit's change as one ordinary commit, never as a
// merge parent, and force pushes: the person's note is in the wing and
// the remote, the purged content in neither.
func TestRemotePurgeCatchesUp(t *testing.T) {
	g, blob := purgeRig(t, false)
	adaGit(t, g.clone, "pull", "--quiet", "--ff-only")
	if res, isErr := g.purgeSecretVersion(t); isErr {
		t.Fatalf("brain_purge: %s", res)
	}
	mustWrite(t, filepath.Join(g.clone, "wiki/payments/facts/late-fact.md"), []byte("---\ntitle: Late fact\n---\nPushed after the purge synced: a quokka.\n"), 0o644)
	adaGit(t, g.clone, "add", "-A")
	adaGit(t, g.clone, "commit", "--quiet", "-m", "A late fact")
	adaGit(t, g.clone, "push", "--quiet", "origin", "main")
	late := strings.TrimSpace(adaGit(t, g.clone, "rev-parse", "HEAD"))
	adaGit(t, g.bare, "config", "receive.denyNonFastForwards", "false")
	if err := g.svc.Remote().Round(context.Background()); err != nil {
		t.Fatalf("round: %v", err)
	}
	eventually(t, "the late note in brain_get", func() bool { return g.gets(t, "payments/facts/late-fact", "quokka") })
	head := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main"))
	if local := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD")); local != head {
		t.Fatalf("the remote is at %s, the wing at %s", head, local)
	}
	if _, err := ada.Git(g.bare, "merge-base", "--is-ancestor", late, head); err == nil {
		t.Error("the person's commit is an ancestor of the pushed head: its history (the purged content) came back")
	}
	if parents := strings.Fields(adaGit(t, g.bare, "rev-list", "--parents", "-1", head)); len(parents) != 2 {
		t.Errorf("the catch-up commit has parents %v, want one", parents[1:])
	}
	if msg := adaGit(t, g.bare, "log", "-1", "--format=%s", head); !strings.Contains(msg, "since the purge") {
		t.Errorf("the remote's head is %q, not the catch-up commit", msg)
	}
	if out := adaGit(t, g.bare, "show", "main:wiki/payments/facts/late-fact.md"); !strings.Contains(out, "quokka") {
		t.Errorf("the remote lacks the late note: %s", out)
	}
	assertNoSecret(t, g, blob)
	if _, err := ada.Git(g.svc.cfg.Brain, "cat-file", "-e", blob); err == nil {
		t.Error("the wing's repository holds the purged blob again")
	}
	if st := g.svc.Remote().Status(); st.ForcePushPending || st.LastError != "" {
		t.Errorf("status %+v", st)
	}
}

// pendingGauge is the syncer's brainstem_remote_force_push_pending.
func pendingGauge(t *testing.T, s *remote.Syncer) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "brainstem_remote_force_push_pending" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no brainstem_remote_force_push_pending")
	return 0
}

// TestRemotePurgeEveryVersion: a purge of every version removes the note
// (its removal is pushed with the rewrite) and no clone finds any of it.
func TestRemotePurgeEveryVersion(t *testing.T) {
	g, blob := purgeRig(t, true)
	tok := mint(t, g.svc, curatorOfT, g.now.Now().Add(time.Hour)).Token
	resp, err := g.svc.Call(context.Background(), &proto.CallRequest{Token: tok, Tool: "brain_purge",
		Args: []byte(`{"id":"payments/facts/retry-budgets","reason":"the whole note leaked"}`)})
	if err != nil || resp.IsError {
		t.Fatalf("brain_purge: %v %s", err, resp.Result)
	}
	if _, err := ada.Git(g.bare, "cat-file", "-e", "main:"+budgets); err == nil {
		t.Error("the remote's branch still has the note")
	}
	local := strings.TrimSpace(adaGit(t, g.svc.cfg.Brain, "rev-parse", "HEAD"))
	if head := strings.TrimSpace(adaGit(t, g.bare, "rev-parse", "main")); head != local {
		t.Errorf("the remote is at %s, the wing at %s", head, local)
	}
	assertNoSecret(t, g, blob)
	if log := adaGit(t, g.freshClone(t), "log", "--all", "-p"); strings.Contains(log, "Retries: redacted") {
		t.Error("a fresh clone still holds the current version's content")
	}
}
