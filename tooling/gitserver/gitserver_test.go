package gitserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var ada = Person{Name: "Ada", Email: "ada@example.com"}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := ada.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
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

	if out, err := ada.Git(t.TempDir(), "ls-remote", "http://ada:wrong@"+base+"/brain.git"); err == nil {
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
