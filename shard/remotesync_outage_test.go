package shard

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/tooling/gitserver"
)

// outage is how long the remote stays down under the write loop.
const outage = time.Minute

// TestRemoteOutageUnderWrites: the remote is unreachable for a minute
// while an agent writes a note every 50 ms through the shard; every write
// is acknowledged, the wing stays ready, and once the remote is back the
// shard's own retry (no trigger) pushes every note, each in exactly one
// commit of the remote.
func TestRemoteOutageUnderWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of outage")
	}
	t.Parallel()
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
	tokenFile := filepath.Join(t.TempDir(), "token")
	mustWrite(t, tokenFile, []byte(remoteToken), 0o600)
	svc, err := Open(ctx, Config{
		Brain: newBrain(t), Wing: "payments", Key: key(t),
		Policy: auth.Policy{Readers: []string{"domain:example.com"}, Writers: []string{"email:wendy@example.com"}},
		Remote: &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tokenFile, Username: "git",
			PushDelay: 200 * time.Millisecond, PullInterval: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ada := gitserver.Person{Name: "Ada", Email: "ada@example.com"}
	eventually(t, "the initial push", func() bool { _, err := ada.Git(bare, "rev-parse", "--verify", "main"); return err == nil })

	addr := strings.TrimPrefix(srv.URL, "http://")
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	tok := mint(t, svc, "wendy@example.com", time.Now().Add(time.Hour)).Token
	var slugs []string
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(outage); time.Now().Before(end); <-tick.C {
		slug := fmt.Sprintf("outage-%04d", len(slugs))
		args := fmt.Sprintf(`{"hall":"facts","slug":%q,"title":"Outage %d","body":"written while the remote was down\n"}`, slug, len(slugs))
		resp, err := svc.Call(ctx, &proto.CallRequest{Token: tok, Tool: "brain_write", Args: []byte(args)})
		if err != nil || resp.IsError {
			t.Fatalf("write %d while the remote is down: %v %s", len(slugs), err, resp.Result)
		}
		slugs = append(slugs, slug)
	}
	st := svc.Remote().Status()
	if st.LastError == "" || st.Unpushed == 0 {
		t.Fatalf("after a minute down the status shows no failure: %+v", st)
	}
	if h, err := svc.Health(ctx); err != nil || !h.Ready {
		t.Fatalf("not ready while the remote is down: %+v %v", h, err)
	}

	back, err := gitserver.StartHTTPOn(addr, root, "git", remoteToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	// The retry waits at most remote.BackoffMax; nothing triggers it.
	deadline := time.Now().Add(remote.BackoffMax + 30*time.Second)
	for st := svc.Remote().Status(); st.LastError != "" || st.Unpushed != 0; st = svc.Remote().Status() {
		if time.Now().After(deadline) {
			t.Fatalf("not in sync %s after the remote came back: %+v", remote.BackoffMax+30*time.Second, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, err := ada.Git(bare, "log", "--format=%H", "--name-only", "main", "--", "wiki/payments/facts/")
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range slugs {
		if n := strings.Count(log, "wiki/payments/facts/"+slug+".md\n"); n != 1 {
			t.Fatalf("%s is in %d commits of the remote, want 1 (%d writes)", slug, n, len(slugs))
		}
	}
	t.Logf("%d writes during %s of outage, all pushed once", len(slugs), outage)
}
