package diskgrep

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestFind: a file holding the text and a git object holding it are both
// found; a directory without it gives nothing.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "--quiet")
	note := filepath.Join(dir, "note.md")
	if err := os.WriteFile(note, []byte("the secret is quokka\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "note.md")
	git("commit", "--quiet", "-m", "note")
	got, err := Find(dir, "quokka")
	if err != nil || !slices.Equal(got, []string{note, GitObjects}) {
		t.Fatalf("Find = %v, %v; want the file and the git objects", got, err)
	}
	if err := os.WriteFile(note, []byte("redacted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(dir, "quokka"); err != nil || !slices.Equal(got, []string{GitObjects}) {
		t.Fatalf("after the edit Find = %v, %v; want the git objects only", got, err)
	}
	if got, err := Find(dir, "wombat"); err != nil || len(got) != 0 {
		t.Fatalf("Find of absent text = %v, %v", got, err)
	}
}
