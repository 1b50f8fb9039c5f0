package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/gitserver"
)

// TestDevGitRemote: `brainstem dev --git-remote PATH` creates the bare
// repository, every wing of the dev stack pushes its notes there, and a
// person's clone edits a note of one wing and adds a note to another:
// both reach brain_get, search and brain_history through the gateway
// with the person's authorship; an agent's write reaches the next pull.
func TestDevGitRemote(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "brain.git") // missing: dev creates it
	env := devenvtest.Start(t, devenv.Config{GitRemote: bare,
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 }})
	var banner bytes.Buffer
	if err := env.PrintBanner(&banner, "alice@example.com", time.Second, "log"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(banner.String(), "every wing syncs with "+bare) {
		t.Fatalf("the banner does not name the remote:\n%s", banner.String())
	}
	ada := gitserver.Person{Name: "Ada Lovelace", Email: "ada@example.com"}
	within(t, 20*time.Second, "every wing pushed", func() bool {
		out, err := ada.Git(bare, "ls-tree", "-r", "--name-only", "main")
		return err == nil && strings.Contains(out, "wiki/payments/") && strings.Contains(out, "wiki/people-ops/") &&
			strings.Contains(out, "wiki/platform/facts/cluster-inventory.md")
	})
	clone := filepath.Join(t.TempDir(), "clone")
	mustGit(t, ada, "", "clone", "--quiet", bare, clone)
	edited := filepath.Join(clone, "wiki/platform/facts/cluster-inventory.md")
	old, err := os.ReadFile(edited)
	if err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, edited, append(old, []byte("\nAda counted a zanzibarite node pool too.\n")...))
	added := "---\ntitle: Payroll calendar\nwing: people-ops\nhall: facts\ncreated_by: ada@example.com\ncreated_at: 2026-12-01T09:00:00Z\n---\nPayroll runs on the quillwort day of each month.\n"
	mustWriteFile(t, filepath.Join(clone, "wiki/people-ops/facts/payroll-calendar.md"), []byte(added))
	mustGit(t, ada, clone, "add", "-A")
	mustGit(t, ada, clone, "commit", "--quiet", "-m", "Ada's inventory and payroll notes")
	mustGit(t, ada, clone, "push", "--quiet", "origin", "main")

	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	within(t, 20*time.Second, "the edit in brain_get", func() bool {
		text, isErr := call(t, alice, "brain_get", `{"id":"platform/facts/cluster-inventory"}`)
		return !isErr && strings.Contains(text, "zanzibarite")
	})
	within(t, 20*time.Second, "the new note in search", func() bool {
		ids := queryIDs(t, alice, `{"query":"quillwort payroll","wing":"people-ops"}`)
		return len(ids) > 0 && strings.HasPrefix(ids[0], "people-ops/facts/payroll-calendar|")
	})
	if h := mustJSON(t, alice, "brain_history", `{"id":"platform/facts/cluster-inventory"}`, nil); !strings.Contains(h, "ada@example.com") {
		t.Fatalf("brain_history lacks the person's version: %s", h)
	}
	if h := mustJSON(t, alice, "brain_history", `{"id":"people-ops/facts/payroll-calendar"}`, nil); !strings.Contains(h, "ada@example.com") {
		t.Fatalf("brain_history lacks the person's note: %s", h)
	}

	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"facts","slug":"agent-wrote-this","title":"Agent","body":"Written by an agent for Ada's next pull.\n"}`, nil)
	within(t, 20*time.Second, "the agent's write in the person's pull", func() bool {
		if _, err := ada.Git(clone, "pull", "--quiet", "--ff-only"); err != nil {
			return false
		}
		_, err := os.Stat(filepath.Join(clone, "wiki/platform/facts/agent-wrote-this.md"))
		return err == nil
	})
}

// within polls cond until it holds or d passes: the effect is a
// background sync round's.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustGit(t *testing.T, p gitserver.Person, dir string, args ...string) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if _, err := p.Git(dir, args...); err != nil {
		t.Fatal(err)
	}
}

func mustWriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
