package gitserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRun runs the git CLI in dir with a fixed identity.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// roundTrip pushes a commit to url and clones it back.
func roundTrip(t *testing.T, url string) {
	t.Helper()
	work := t.TempDir()
	gitRun(t, work, "init", "--quiet", "--initial-branch=main", ".")
	os.WriteFile(filepath.Join(work, "a.md"), []byte("hello\n"), 0o644)
	gitRun(t, work, "add", "a.md")
	gitRun(t, work, "commit", "--quiet", "-m", "first")
	gitRun(t, work, "push", "--quiet", url, "main")
	clone := filepath.Join(t.TempDir(), "c")
	gitRun(t, t.TempDir(), "clone", "--quiet", url, clone)
	if b, _ := os.ReadFile(filepath.Join(clone, "a.md")); string(b) != "hello\n" {
		t.Fatalf("clone has %q", b)
	}
}

func TestHTTP(t *testing.T) {
	root := t.TempDir()
	if _, err := InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	h, err := StartHTTP(root, "ada", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	base := strings.TrimPrefix(h.URL, "http://")
	roundTrip(t, "http://ada:s3cret@"+base+"/brain.git")

	cmd := exec.Command("git", "ls-remote", "http://ada:wrong@"+base+"/brain.git")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("wrong password accepted: %s", out)
	}
}

func TestDaemon(t *testing.T) {
	root := t.TempDir()
	if _, err := InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	d, err := StartDaemon(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	roundTrip(t, d.URL+"/brain.git")
}
