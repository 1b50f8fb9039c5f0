package shard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/tooling/gitserver"
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

// TestRemoteRoundTrip: a person's clone edits a note and adds another,
// then pushes; both reach brain_get, search and brain_history with the
// person's authorship. An agent's write reaches the person's next pull.
func TestRemoteRoundTrip(t *testing.T) {
	ctx := context.Background()
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
	os.WriteFile(tokenFile, []byte(remoteToken), 0o600)

	now := &clock{t: time.Now()}
	svc, err := Open(ctx, Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t), Now: now.Now,
		Policy: auth.Policy{Readers: []string{"domain:example.com"}, Writers: []string{"email:wendy@example.com"}},
		Remote: &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tokenFile, Username: "git",
			PushDelay: 100 * time.Millisecond, PullInterval: remote.MinPullInterval},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	eventually(t, "the initial push", func() bool { _, err := ada.Git(bare, "rev-parse", "--verify", "main"); return err == nil })

	clone := filepath.Join(t.TempDir(), "c")
	adaGit(t, t.TempDir(), "clone", "--quiet", strings.Replace(srv.URL, "http://", "http://git:"+remoteToken+"@", 1)+"/brain.git", clone)
	os.WriteFile(filepath.Join(clone, "wiki/payments/facts/retry-budgets.md"), []byte(strings.Replace(note, "with a budget", "with a budget of ten percent", 1)), 0o644)
	os.WriteFile(filepath.Join(clone, "wiki/payments/facts/idempotent-refunds.md"), []byte("---\ntitle: Idempotent refunds\n---\nRefunds carry a zebracorn key.\n"), 0o644)
	adaGit(t, clone, "add", "-A")
	adaGit(t, clone, "commit", "--quiet", "-m", "Refunds are idempotent")
	adaGit(t, clone, "push", "--quiet", "origin", "main")
	svc.Remote().Trigger()

	reader := mint(t, svc, "reader@example.com", now.Now().Add(time.Hour)).Token
	call := func(tool, args string) string {
		resp, err := svc.Call(ctx, &proto.CallRequest{Token: reader, Tool: tool, Args: []byte(args)})
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

	writer := mint(t, svc, "wendy@example.com", now.Now().Add(time.Hour)).Token
	resp, err := svc.Call(ctx, &proto.CallRequest{Token: writer, Tool: "brain_write", Args: []byte(`{"hall":"facts","title":"Agent fact","body":"written by the agent"}`)})
	if err != nil || resp.IsError {
		t.Fatalf("brain_write: %v %s", err, resp.Result)
	}
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

func TestRemoteRefusesPurge(t *testing.T) {
	for _, force := range []bool{false, true} {
		_, err := Open(context.Background(), Config{
			Brain: newBrain(t), Wing: "payments", Key: key(t),
			History: store.HistoryOptions{AllowPurge: true},
			Remote:  &remote.Config{URL: "/srv/none.git", ForcePushOnPurge: force},
		})
		want := remote.ErrPurgeNeedsForcePush
		if force {
			want = ErrForcePushNotBuilt
		}
		if !errors.Is(err, want) {
			t.Errorf("force %v: Open = %v, want %v", force, err, want)
		}
	}
}
