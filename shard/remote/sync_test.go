package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/tooling/gitserver"
)

// TestSyncerRound: a person's edit and addition reach the brain directory
// (where the store loads them) and the agent's commit reaches the person.
func TestSyncerRound(t *testing.T) {
	ctx := context.Background()
	url, tokenFile := httpRemote(t)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSyncer(r, service, nil, nil)
	if err := s.Round(ctx); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "c")
	runGit(t, ada, t.TempDir(), "clone", "--quiet", strings.Replace(url, "http://", "http://git:"+token+"@", 1), clone)
	commitFile(t, ada, clone, "wiki/eng/facts/a.md", "---\ntitle: A\n---\nAda's\n", "Ada edits a")
	commitFile(t, ada, clone, "wiki/eng/facts/b.md", "---\ntitle: B\n---\nb\n", "Ada adds b")
	runGit(t, ada, clone, "push", "--quiet", "origin", "main")
	commitFile(t, agent, dir, "wiki/eng/facts/c.md", "---\ntitle: C\n---\nc\n", "agent adds c")
	if err := s.Round(ctx); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"wiki/eng/facts/a.md": "Ada's", "wiki/eng/facts/b.md": "b"} {
		if b, _ := os.ReadFile(filepath.Join(dir, rel)); !strings.Contains(string(b), want) {
			t.Errorf("%s on disk is %q, want %q", rel, b, want)
		}
	}
	runGit(t, ada, clone, "pull", "--quiet", "--ff-only")
	if _, err := os.Stat(filepath.Join(clone, "wiki/eng/facts/c.md")); err != nil {
		t.Fatalf("the person's pull lacks the agent's note: %v", err)
	}
	if log := runGit(t, ada, dir, "log", "--format=%ae %s", "-3", "main^2"); !strings.Contains(log, "ada@example.com Ada adds b") {
		t.Fatalf("the person's commits are not in the wing's history:\n%s", log)
	}
	if st := s.Status(); st.LastError != "" || st.LastSync.IsZero() || st.Conflicts != 0 {
		t.Fatalf("status %+v", st)
	}
}

// TestSyncerRemoteDown: while the remote is unreachable, commits go on
// locally and are counted; once it is back, every one is pushed, once.
func TestSyncerRemoteDown(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(root, "git", token)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(token), 0o600)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: srv.URL + "/brain.git", Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSyncer(r, service, nil, nil)
	if err := s.Round(ctx); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	const writes = 5
	for i := range writes {
		commitFile(t, agent, dir, fmt.Sprintf("wiki/eng/facts/n%d.md", i), fmt.Sprintf("---\ntitle: N%d\n---\nx\n", i), fmt.Sprintf("write %d", i))
		if err := s.Round(ctx); err == nil {
			t.Fatal("a round succeeded with the remote down")
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	st := s.Status()
	if st.Unpushed != writes || st.LastError == "" || strings.Contains(st.LastError, token) {
		t.Fatalf("status while down: %+v", st)
	}
	got := map[string]float64{}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		m := f.GetMetric()[0]
		got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if len(m.GetLabel()) != 0 {
			t.Errorf("%s has labels", f.GetName())
		}
	}
	if got["brainstem_remote_unpushed_commits"] != writes || got["brainstem_remote_last_sync_failed"] != 1 || got["brainstem_remote_last_sync_timestamp_seconds"] == 0 {
		t.Fatalf("metrics while down: %v", got)
	}
	back, err := gitserver.StartHTTPOn(addr, root, "git", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	if err := s.Round(ctx); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(root, "brain.git")
	if n := strings.TrimSpace(runGit(t, ada, bare, "rev-list", "--count", "main")); n != fmt.Sprint(writes+1) {
		t.Fatalf("the remote has %s commits, want %d", n, writes+1)
	}
	msgs := runGit(t, ada, bare, "log", "--format=%s", "main")
	for i := range writes {
		if c := strings.Count(msgs, fmt.Sprintf("write %d\n", i)); c != 1 {
			t.Fatalf("write %d is in the remote %d times:\n%s", i, c, msgs)
		}
	}
	if st := s.Status(); st.Unpushed != 0 || st.LastError != "" {
		t.Fatalf("status once back: %+v", st)
	}
}

// TestSyncerTiming: the waits of Run, on an injected clock, against a
// remote that refuses every round (so a round shows as the backoff wait
// after it). Commits the remote lacks are pushed in the first quiet push
// delay, or after PushMaxDelay while commits keep coming; a failing
// remote is retried after 1 s, 2 s, 4 s...
func TestSyncerTiming(t *testing.T) {
	const d, m = DefaultPushDelay, DefaultPushMaxDelay
	for _, tc := range []struct {
		name   string
		commit int // commits made during the first waits
		want   []time.Duration
	}{
		{"quiet from the start", 0, []time.Duration{d, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"two busy waits, then quiet", 2, []time.Duration{d, d, d, time.Second}},
		{"busy until the max delay", 8, []time.Duration{d, d, d, d, d, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := brainRepo(t)
			r, err := Open(dir, Config{URL: "http://127.0.0.1:1/brain.git", Wing: "eng", PushMaxDelay: m}, nil)
			if err != nil {
				t.Fatal(err)
			}
			type wait struct {
				d    time.Duration
				fire chan time.Time
			}
			waits := make(chan wait)
			ctx, cancel := context.WithCancel(context.Background())
			after := func(d time.Duration) <-chan time.Time {
				w := wait{d, make(chan time.Time, 1)}
				select {
				case waits <- w:
				case <-ctx.Done():
				}
				return w.fire
			}
			done := make(chan struct{})
			go func() { defer close(done); NewSyncer(r, service, nil, after).Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			for i, want := range tc.want {
				w := <-waits
				if w.d != want {
					t.Fatalf("wait %d = %v, want %v", i, w.d, want)
				}
				if i < tc.commit {
					commitFile(t, agent, dir, fmt.Sprintf("wiki/eng/facts/w%d.md", i), "---\ntitle: W\n---\nw\n", "write")
				}
				w.fire <- time.Time{}
			}
		})
	}
}

// TestSyncerEmptyWing: a wing with no commit yet takes the remote's as
// its first (found by the pull benchmark: the push read a missing ref).
func TestSyncerEmptyWing(t *testing.T) {
	url, tokenFile := httpRemote(t)
	seed := t.TempDir()
	runGit(t, ada, seed, "init", "--quiet", "--initial-branch=main", ".")
	commitFile(t, ada, seed, "wiki/eng/facts/first.md", "---\ntitle: First\n---\nfrom Ada\n", "Ada's first")
	runGit(t, ada, seed, "push", "--quiet", strings.Replace(url, "http://", "http://git:"+token+"@", 1), "main")
	dir := t.TempDir()
	runGit(t, agent, dir, "init", "--quiet", "--initial-branch=main", ".")
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewSyncer(r, service, nil, nil).Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "wiki/eng/facts/first.md")); !strings.Contains(string(b), "from Ada") {
		t.Fatalf("the note on disk: %q", b)
	}
	if log := runGit(t, agent, dir, "log", "--format=%ae %s", "main"); !strings.Contains(log, "ada@example.com Ada's first") {
		t.Fatalf("the wing's history lacks Ada's commit:\n%s", log)
	}
}
