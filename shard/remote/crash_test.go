package remote

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/tooling/gitserver"
)

const crashChildEnv = "BRAINSTEM_REMOTE_CRASH_CHILD"

// TestCrashChild is the child of TestCrashMidPush: it commits and syncs
// in a loop, saying "round <i>" on stdout as each round starts.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("the child of TestCrashMidPush")
	}
	r, err := Open(dir, Config{URL: os.Getenv(crashChildEnv + "_URL"), Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSyncer(r, service, nil, nil)
	for i := 0; ; i++ {
		for j := range 3 {
			commitFile(t, agent, dir, fmt.Sprintf("wiki/eng/facts/n%d-%d.md", i, j), fmt.Sprintf("---\ntitle: N%d %d\n---\nx\n", i, j), fmt.Sprintf("write %d-%d", i, j))
		}
		fmt.Printf("round %d\n", i)
		if err := s.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashMidPush kills the syncing process with SIGKILL as a round
// starts (during its fetch or push), several times, then syncs once more:
// every local commit is in the remote, and each once.
func TestCrashMidPush(t *testing.T) {
	root := t.TempDir()
	bare, err := gitserver.InitBare(root, "brain.git")
	if err != nil {
		t.Fatal(err)
	}
	d, err := gitserver.StartDaemon(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	url := d.URL + "/brain.git"
	dir := brainRepo(t)
	for kill := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildEnv+"_URL="+url)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		want := fmt.Sprintf("round %d", 2+kill)
		for sc.Scan() && sc.Text() != want {
		}
		cmd.Process.Kill() // SIGKILL: no defer, no flush
		cmd.Wait()
	}
	r, err := Open(dir, Config{URL: url, Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewSyncer(r, service, nil, nil).Round(context.Background()); err != nil {
		t.Fatalf("the round after the crashes: %v", err)
	}
	local := strings.TrimSpace(runGit(t, agent, dir, "rev-parse", "main"))
	if remote := strings.TrimSpace(runGit(t, agent, bare, "rev-parse", "main")); remote != local {
		t.Fatalf("the remote's main %s is not the wing's %s", remote, local)
	}
	msgs := strings.Split(strings.TrimSpace(runGit(t, agent, bare, "log", "--format=%s", "main")), "\n")
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m] {
			t.Fatalf("%q is in the remote twice", m)
		}
		seen[m] = true
	}
	if len(msgs) < 1+3*3 {
		t.Fatalf("only %d commits in the remote", len(msgs))
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "refs", "heads", "main.lock")); err == nil {
		t.Fatal("a lock was left behind")
	}
}
