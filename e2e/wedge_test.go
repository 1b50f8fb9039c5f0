package e2e

import (
	"encoding/json"
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

// TestDevGitRemoteDirectoryAtANotePath is issue 34's first reproduction
// against `brainstem dev --git-remote`: a person pushes a directory at a
// note's path, and replaces an existing note by a directory. The pulls
// report them and load nothing; then alice writes the planned note and
// restores the replaced one. Both commit: brain_history answers, and the
// next push carries both notes as files, the directories gone.
func TestDevGitRemoteDirectoryAtANotePath(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "brain.git")
	env := devenvtest.Start(t, devenv.Config{GitRemote: bare,
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 }})
	ada := gitserver.Person{Name: "Ada Lovelace", Email: "ada@example.com"}
	within(t, 20*time.Second, "every wing pushed", func() bool {
		out, err := ada.Git(bare, "ls-tree", "-r", "--name-only", "main")
		return err == nil && strings.Contains(out, "wiki/platform/facts/cluster-inventory.md")
	})
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	before := mustJSON(t, alice, "brain_history", `{"id":"platform/facts/cluster-inventory"}`, nil)

	clone := filepath.Join(t.TempDir(), "clone")
	mustGit(t, ada, "", "clone", "--quiet", bare, clone)
	mustWriteFile(t, filepath.Join(mkdirAll(t, clone, "wiki/platform/facts/planned-note.md"), "held.md"), []byte("planted\n"))
	inventory := filepath.Join(clone, "wiki/platform/facts/cluster-inventory.md")
	if err := os.Remove(inventory); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, filepath.Join(mkdirAll(t, clone, "wiki/platform/facts/cluster-inventory.md"), "x.md"), []byte("planted\n"))
	mustGit(t, ada, clone, "add", "-A")
	mustGit(t, ada, clone, "commit", "--quiet", "-m", "directories where notes go")
	mustGit(t, ada, clone, "push", "--quiet", "origin", "main")
	within(t, 20*time.Second, "the pull integrated (the note replaced by a directory is gone)", func() bool {
		text, isErr := call(t, alice, "brain_get", `{"id":"platform/facts/cluster-inventory"}`)
		return isErr && strings.Contains(text, "not_found")
	})

	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"facts","slug":"planned-note","title":"Planned note","body":"Written where a directory was pushed.\n"}`, nil)
	var versions struct {
		Versions []struct{ Version string } `json:"versions"`
	}
	if err := json.Unmarshal([]byte(before), &versions); err != nil || len(versions.Versions) == 0 {
		t.Fatalf("brain_history before: %s (%v)", before, err)
	}
	mustJSON(t, alice, "brain_restore", `{"id":"platform/facts/cluster-inventory","reason":"undo the directory pushed over it","version":"`+versions.Versions[0].Version+`"}`, nil)
	for _, id := range []string{"platform/facts/planned-note", "platform/facts/cluster-inventory"} {
		if text, isErr := call(t, alice, "brain_history", `{"id":"`+id+`"}`); isErr {
			t.Fatalf("brain_history of %s: %s", id, text)
		}
	}
	within(t, 20*time.Second, "both notes pushed as files", func() bool {
		out, err := ada.Git(bare, "ls-tree", "-r", "--name-only", "main")
		return err == nil && strings.Contains(out, "wiki/platform/facts/planned-note.md\n") &&
			strings.Contains(out, "wiki/platform/facts/cluster-inventory.md\n") && !strings.Contains(out, ".md/")
	})
	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"facts","slug":"after-the-attack","title":"After","body":"The wing still commits.\n"}`, nil)
	if text, isErr := call(t, alice, "brain_history", `{"id":"platform/facts/after-the-attack"}`); isErr {
		t.Fatalf("brain_history after: %s", text)
	}
}

func mkdirAll(t *testing.T, root, rel string) string {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
