package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/gitserver"
)

// TestDevWorkingCopyStaysTrue: after every change the shards make to the
// shared dev repository — a pulled change, a restore, a merge with a
// conflict, a purge — the brain's `git status --porcelain` is clean and a
// person's `git commit -a` finds nothing to commit, so it can never
// revert a change the person did not make (issue 36).
func TestDevWorkingCopyStaysTrue(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "brain.git")
	env := devenvtest.Start(t, devenv.Config{GitRemote: bare,
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 }})
	ada := gitserver.Person{Name: "Ada Lovelace", Email: "ada@example.com"}
	bob := gitserver.Person{Name: "Bob in the brain", Email: "bob@example.com"}
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	within(t, 20*time.Second, "every wing pushed", func() bool {
		out, err := ada.Git(bare, "ls-tree", "-r", "--name-only", "main")
		return err == nil && strings.Contains(out, "wiki/platform/facts/cluster-inventory.md")
	})
	clone := filepath.Join(t.TempDir(), "clone")
	mustGit(t, ada, "", "clone", "--quiet", bare, clone)
	inventory := "wiki/platform/facts/cluster-inventory.md"

	// A pulled change.
	appendTo(t, filepath.Join(clone, inventory), "\nAda counted a marzipanite node pool.\n")
	mustGit(t, ada, clone, "commit", "--quiet", "-am", "Ada's count")
	mustGit(t, ada, clone, "push", "--quiet", "origin", "main")
	within(t, 20*time.Second, "the pull in brain_get", func() bool {
		text, isErr := call(t, alice, "brain_get", `{"id":"platform/facts/cluster-inventory"}`)
		return !isErr && strings.Contains(text, "marzipanite")
	})
	workingCopyClean(t, bob, env.BrainDir, "after a pull")

	// A restore of the version before the pull.
	var h struct{ Versions []struct{ Version string } }
	mustJSON(t, alice, "brain_history", `{"id":"platform/facts/cluster-inventory"}`, &h)
	if len(h.Versions) < 2 {
		t.Fatalf("versions: %+v", h)
	}
	mustJSON(t, alice, "brain_restore", `{"id":"platform/facts/cluster-inventory","version":"`+h.Versions[1].Version+`","reason":"the count was wrong"}`, nil)
	workingCopyClean(t, bob, env.BrainDir, "after a restore")

	// A merge with a conflict: Ada and an agent change the same note.
	within(t, 20*time.Second, "the restore pushed", func() bool {
		if _, err := ada.Git(clone, "pull", "--quiet", "--ff-only"); err != nil {
			return false
		}
		b, _ := os.ReadFile(filepath.Join(clone, inventory))
		return !strings.Contains(string(b), "marzipanite")
	})
	appendTo(t, filepath.Join(clone, inventory), "\nAda's side of the conflict: quokkaite.\n")
	mustGit(t, ada, clone, "commit", "--quiet", "-am", "Ada's side")
	mustJSON(t, alice, "brain_update", `{"id":"platform/facts/cluster-inventory","body":"The agent's side of the conflict.\n","reason":"agent"}`, nil)
	mustGit(t, ada, clone, "push", "--quiet", "origin", "main")
	within(t, 20*time.Second, "the conflict merged (the remote's side current)", func() bool {
		text, isErr := call(t, alice, "brain_get", `{"id":"platform/facts/cluster-inventory"}`)
		return !isErr && strings.Contains(text, "quokkaite")
	})
	workingCopyClean(t, bob, env.BrainDir, "after a merge with a conflict")
}

// TestDevWorkingCopyAfterPurge: the same after a purge (dev without a
// remote, purging allowed).
func TestDevWorkingCopyAfterPurge(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 },
		Shard:   func(c *shard.Config) { c.History.AllowPurge = true }})
	bob := gitserver.Person{Name: "Bob in the brain", Email: "bob@example.com"}
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"facts","slug":"leaked","title":"Leaked","body":"the secret is swordfish-1234\n"}`, nil)
	mustJSON(t, alice, "brain_update", `{"id":"platform/facts/leaked","body":"no secret here\n","reason":"remove the secret"}`, nil)
	workingCopyClean(t, bob, env.BrainDir, "after writes")
	var h struct{ Versions []struct{ Version string } }
	mustJSON(t, alice, "brain_history", `{"id":"platform/facts/leaked"}`, &h)
	if len(h.Versions) != 2 {
		t.Fatalf("versions: %+v", h)
	}
	mustJSON(t, alice, "brain_purge", `{"id":"platform/facts/leaked","version":"`+h.Versions[1].Version+`","reason":"a leaked secret"}`, nil)
	workingCopyClean(t, bob, env.BrainDir, "after a purge")
}

// workingCopyClean waits until the shards have rewritten .git/index
// (they do when idle), then holds the brain to a clean `git status` and
// a `git commit -a` with nothing to commit.
func workingCopyClean(t *testing.T, p gitserver.Person, brain, when string) {
	t.Helper()
	var status string
	within(t, 20*time.Second, "a clean git status "+when, func() bool {
		out, err := p.Git(brain, "status", "--porcelain")
		status = out
		return err == nil && strings.TrimSpace(out) == ""
	})
	if out, err := p.Git(brain, "commit", "-a", "-m", "a person's commit"); err == nil {
		t.Fatalf("%s: git commit -a committed something (status was %q):\n%s", when, status, out)
	} else if !strings.Contains(out, "nothing to commit") {
		t.Fatalf("%s: git commit -a: %v\n%s", when, err, out)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, path, append(old, text...))
}
