package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/check"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/tooling/gitserver"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

const remoteToken = "tok-5e4d3c2b1a"

var ada = gitserver.Person{Name: "Ada Lovelace", Email: "ada@example.com"}

func adaGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := ada.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls cond until it holds or 10 s pass: the effect is
// another process's (git) or a background round's.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// remoteRig is a shard whose wing syncs with a bare repository served
// by git http-backend, and a person's clone of it.
type remoteRig struct {
	svc         *Service
	bare, clone string
	now         *clock
	srv         *gitserver.HTTP
	url         string // the remote's, with the person's credentials
}

func newRemoteRig(t *testing.T, pushDelay, pull time.Duration) *remoteRig {
	t.Helper()
	return newRemoteRigWith(t, pushDelay, pull, nil)
}

// newRemoteRigWith is newRemoteRig with tweak applied to the shard's
// configuration (when set) before it opens.
func newRemoteRigWith(t *testing.T, pushDelay, pull time.Duration, tweak func(*Config)) *remoteRig {
	t.Helper()
	root := t.TempDir()
	bare, err := gitserver.InitBare(root, "brain.git")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(root, "git", remoteToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tokenFile := filepath.Join(t.TempDir(), "token")
	mustWrite(t, tokenFile, []byte(remoteToken), 0o600)
	now := &clock{t: time.Now()}
	cfg := Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t), Now: now.Now,
		Policy: auth.Policy{Readers: []string{"domain:example.com"}, Writers: []string{"email:wendy@example.com"}},
		Remote: &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tokenFile, Username: "git",
			PushDelay: pushDelay, PushMaxDelay: pushDelay, PullInterval: pull},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	svc, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	svc.Remote().Trigger()
	eventually(t, "the initial push", func() bool { _, err := ada.Git(bare, "rev-parse", "--verify", "main"); return err == nil })
	clone := filepath.Join(t.TempDir(), "c")
	url := strings.Replace(srv.URL, "http://", "http://git:"+remoteToken+"@", 1) + "/brain.git"
	adaGit(t, t.TempDir(), "clone", "--quiet", url, clone)
	return &remoteRig{svc: svc, bare: bare, clone: clone, now: now, srv: srv, url: url}
}

// call calls tool as email and returns its result (failing on an error).
func (g *remoteRig) call(t *testing.T, email, tool, args string) string {
	t.Helper()
	tok := mint(t, g.svc, email, g.now.Now().Add(time.Hour)).Token
	resp, err := g.svc.Call(context.Background(), &proto.CallRequest{Token: tok, Tool: tool, Args: []byte(args)})
	if err != nil || resp.IsError {
		t.Fatalf("%s: %v %s", tool, err, resp.Result)
	}
	return string(resp.Result)
}

// TestRemoteRoundTrip: a person's clone edits a note and adds another,
// then pushes; both reach brain_get, search and brain_history with the
// person's authorship. An agent's write reaches the person's next pull.
func TestRemoteRoundTrip(t *testing.T) {
	ctx := context.Background()
	g := newRemoteRig(t, 100*time.Millisecond, remote.MinPullInterval)
	svc, bare, clone := g.svc, g.bare, g.clone
	mustWrite(t, filepath.Join(clone, "wiki/payments/facts/retry-budgets.md"), []byte(strings.Replace(note, "with a budget", "with a budget of ten percent", 1)), 0o644)
	mustWrite(t, filepath.Join(clone, "wiki/payments/facts/idempotent-refunds.md"), []byte("---\ntitle: Idempotent refunds\n---\nRefunds carry a zebracorn key.\n"), 0o644)
	adaGit(t, clone, "add", "-A")
	adaGit(t, clone, "commit", "--quiet", "-m", "Refunds are idempotent")
	adaGit(t, clone, "push", "--quiet", "origin", "main")
	svc.Remote().Trigger()

	call := func(tool, args string) string {
		tok := mint(t, svc, "reader@example.com", g.now.Now().Add(time.Hour)).Token
		resp, err := svc.Call(ctx, &proto.CallRequest{Token: tok, Tool: tool, Args: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		return string(resp.Result)
	}
	eventually(t, "Ada's note in brain_get", func() bool {
		return strings.Contains(call("brain_get", `{"id":"payments/facts/idempotent-refunds"}`), "zebracorn")
	})
	if got := call("brain_get", `{"id":"payments/facts/retry-budgets"}`); !strings.Contains(got, "ten percent") {
		t.Fatalf("Ada's edit is not current: %s", got)
	}
	hits, err := svc.store.Search(ctx, "zebracorn", store.SearchOptions{})
	if err != nil || len(hits) != 1 || hits[0].ID != "payments/facts/idempotent-refunds" {
		t.Fatalf("search: %+v %v", hits, err)
	}
	for _, id := range []string{"idempotent-refunds", "retry-budgets"} {
		h := call("brain_history", `{"id":"payments/facts/`+id+`"}`)
		if !strings.Contains(h, "ada@example.com") || !strings.Contains(h, "Refunds are idempotent") {
			t.Fatalf("brain_history of %s lacks Ada's commit: %s", id, h)
		}
	}

	g.call(t, "wendy@example.com", "brain_write", `{"hall":"facts","title":"Agent fact","body":"written by the agent"}`)
	eventually(t, "the agent's note in the remote", func() bool {
		_, err := ada.Git(bare, "cat-file", "-e", "main:wiki/payments/facts/agent-fact.md")
		return err == nil
	})
	adaGit(t, clone, "pull", "--quiet", "--ff-only")
	if b, err := os.ReadFile(filepath.Join(clone, "wiki/payments/facts/agent-fact.md")); err != nil || !strings.Contains(string(b), "written by the agent") {
		t.Fatalf("the person's pull: %q %v", b, err)
	}
	if st := svc.Remote().Status(); st.LastError != "" || st.Conflicts != 0 {
		t.Fatalf("status %+v", st)
	}
}

// TestRemoteRefusesPurge: purge with a remote needs the operator's
// force-push setting, or the shard does not start.
func TestRemoteRefusesPurge(t *testing.T) {
	_, err := Open(context.Background(), Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t),
		History: store.HistoryOptions{AllowPurge: true},
		Remote:  &remote.Config{URL: "/srv/none.git"},
	})
	if !errors.Is(err, remote.ErrPurgeNeedsForcePush) {
		t.Errorf("Open = %v, want %v", err, remote.ErrPurgeNeedsForcePush)
	}
}

// TestRemoteConflict: the agent and a person change one note at the same
// time; the person's (the remote's) version is current, the agent's stays
// in history, the conflict is counted, and the remote holds both.
func TestRemoteConflict(t *testing.T) {
	g := newRemoteRig(t, time.Hour, time.Hour) // rounds only on Trigger
	g.call(t, "wendy@example.com", "brain_update", `{"id":"payments/facts/retry-budgets","body":"the agent's budget\n","reason":"agent"}`)
	mustWrite(t, filepath.Join(g.clone, "wiki/payments/facts/retry-budgets.md"), []byte(strings.Replace(note, "with a budget", "with the person's budget", 1)), 0o644)
	adaGit(t, g.clone, "commit", "--quiet", "-am", "Ada's budget")
	adaGit(t, g.clone, "push", "--quiet", "origin", "main")
	g.svc.Remote().Trigger()
	eventually(t, "the conflict settled", func() bool { return g.svc.Remote().Status().Conflicts == 1 })
	eventually(t, "the person's version current", func() bool {
		return strings.Contains(g.call(t, "reader@example.com", "brain_get", `{"id":"payments/facts/retry-budgets"}`), "the person's budget")
	})
	h := g.call(t, "reader@example.com", "brain_history", `{"id":"payments/facts/retry-budgets"}`)
	if !strings.Contains(h, "wendy@example.com") || !strings.Contains(h, "ada@example.com") {
		t.Fatalf("history lacks a side: %s", h)
	}
	eventually(t, "the merge pushed", func() bool {
		out, err := ada.Git(g.bare, "log", "--format=%s", "main")
		return err == nil && strings.Contains(out, "Integrate main")
	})
	adaGit(t, g.clone, "pull", "--quiet", "--ff-only")
	if log := adaGit(t, g.clone, "log", "--full-history", "-p", "--format=%ae", "--", "wiki/payments/facts/retry-budgets.md"); !strings.Contains(log, "the agent's budget") {
		t.Fatalf("the agent's version is not in the remote's history:\n%s", log)
	}
	if st := g.svc.Remote().Status(); len(st.Recent) != 1 || st.Recent[0].Path != "wiki/payments/facts/retry-budgets.md" {
		t.Fatalf("status %+v", st)
	}
	// brainstem check lists the conflict until someone settles it, here
	// by restoring the agent's version.
	if open := openConflicts(t, g.svc.cfg.Brain); len(open) != 1 || open[0] != "wiki/payments/facts/retry-budgets.md" {
		t.Fatalf("brainstem check lists %v as open conflicts", open)
	}
	var hist struct {
		Versions []struct{ Version, By string }
	}
	if err := json.Unmarshal([]byte(h), &hist); err != nil {
		t.Fatal(err)
	}
	agents := ""
	for _, v := range hist.Versions {
		if v.By == "wendy@example.com" {
			agents = v.Version
		}
	}
	g.call(t, "wendy@example.com", "brain_restore", fmt.Sprintf(`{"id":"payments/facts/retry-budgets","version":%q,"reason":"the agent's budget is right"}`, agents))
	if open := openConflicts(t, g.svc.cfg.Brain); len(open) != 0 {
		t.Fatalf("after the restore, brainstem check still lists %v", open)
	}
}

// openConflicts returns the paths `brainstem check` lists as open
// conflicts of the brain's remote.
func openConflicts(t *testing.T, dir string) []string {
	t.Helper()
	rep, err := check.Brain(context.Background(), dir, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Remote == nil {
		t.Fatalf("brainstem check reports no remote: %+v", rep)
	}
	var paths []string
	for _, c := range rep.Remote.Open {
		paths = append(paths, c.Path)
	}
	return paths
}

// TestRemoteWrongCredentials: a wrong token gives a clear error in the
// log and the metrics, the wing keeps serving, and the token (nor the
// right one) appears in neither.
func TestRemoteWrongCredentials(t *testing.T) {
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(root, "git", remoteToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	const wrong = "wrong-tok-77aa"
	tokenFile := filepath.Join(t.TempDir(), "token")
	mustWrite(t, tokenFile, []byte(wrong), 0o600)
	logs := &logcheck.Buffer{}
	reg := prometheus.NewRegistry()
	svc, err := Open(context.Background(), Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t), Metrics: reg,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Policy: auth.Policy{Readers: []string{"domain:example.com"}},
		Remote: &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tokenFile, Username: "git", PushDelay: time.Hour, PullInterval: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	svc.Remote().Trigger()
	// The refusal is logged first, then kept in the status (which the
	// metric reads) and in the status file brainstem check reads: wait for
	// the file.
	var rep *check.Report
	var text strings.Builder
	eventually(t, "the refusal logged and recorded", func() bool {
		if !strings.Contains(logs.String(), "refused the credentials") {
			return false
		}
		r, err := check.Brain(context.Background(), svc.cfg.Brain, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		text.Reset()
		if err := r.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		rep = r
		return strings.Contains(text.String(), "refused the credentials")
	})
	var metrics strings.Builder
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	failed := 0.0
	for _, f := range fams {
		metrics.WriteString(f.String())
		if f.GetName() == "brainstem_remote_last_sync_failed" {
			failed = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if failed != 1 {
		t.Fatalf("brainstem_remote_last_sync_failed = %v", failed)
	}
	for _, secret := range []string{wrong, remoteToken} {
		if strings.Contains(logs.String(), secret) || strings.Contains(metrics.String(), secret) {
			t.Fatalf("a secret leaked:\n%s", logs.String())
		}
	}
	if h, err := svc.Health(context.Background()); err != nil || !h.Ready {
		t.Fatalf("the wing is not ready: %+v %v", h, err)
	}
	// brainstem check says why the wing does not sync, quoting no secret.
	for _, want := range []string{"remote: the wing does not sync with", "refused the credentials", "Fix: the remote refused the credentials: check the token"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("brainstem check lacks %q:\n%s", want, text.String())
		}
	}
	if rep.Err() == nil {
		t.Error("brainstem check passes a wing that does not sync")
	}
	for _, secret := range []string{wrong, remoteToken} {
		if strings.Contains(text.String(), secret) {
			t.Fatalf("brainstem check quotes a secret:\n%s", text.String())
		}
	}
}

// TestCheckRemote: --check-config says why a wing would not sync (here a
// wrong token), quoting no secret, and passes with the right one.
func TestCheckRemote(t *testing.T) {
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(root, "git", remoteToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	right, wrong := filepath.Join(dir, "right"), filepath.Join(dir, "wrong")
	mustWrite(t, right, []byte(remoteToken), 0o600)
	mustWrite(t, wrong, []byte("wrong-tok-1234"), 0o600)
	cfg := func(tok string) *remote.Config {
		return &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tok, Username: "git"}
	}
	if err := checkRemote(Files{Wing: "payments", Remote: cfg(right)}); err != nil {
		t.Fatalf("right token: %v", err)
	}
	err = checkRemote(Files{Wing: "payments", Remote: cfg(wrong)})
	if !errors.Is(err, ErrCheck) || !errors.Is(err, remote.ErrCredentials) || strings.Contains(err.Error(), "wrong-tok-1234") {
		t.Fatalf("wrong token: %v", err)
	}
	if err := checkRemote(Files{Wing: "payments"}); err != nil {
		t.Fatalf("no remote: %v", err)
	}
}

// mustWrite writes a file of the test or fails it.
func mustWrite(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}
