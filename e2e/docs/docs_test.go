package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/tooling/docstest"
)

// root is the repository, from this package's directory.
const root = "../.."

// docFiles are the files the harness reads: README.md and docs/*.md, or
// the paths in BRAINSTEM_DOCS_FILES (space-separated), to run a copy.
func docFiles(t *testing.T) []string {
	if f := strings.Fields(os.Getenv("BRAINSTEM_DOCS_FILES")); len(f) > 0 {
		return f
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

// TestDocsMarked: every shell block of the docs runs in CI or says why it
// cannot (fast: it only reads the files).
func TestDocsMarked(t *testing.T) {
	var sum docstest.Summary
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		_, s, err := docstest.Check(name, src)
		if err != nil {
			t.Error(err)
		}
		sum.Add(s)
	}
	t.Logf("shell blocks: %d run, %d output, %d stack, %d skipped; %d code blocks not shell", sum.Run, sum.Output, sum.Stack, sum.Skip, sum.Other)
}

// TestDocs runs the docs' commands against `brainstem dev`. It needs
// BRAINSTEM_DOCS=1 and, in BRAINSTEM_DOCS_NPX, the npm programs CI pinned
// ("package@version=path", space-separated), which .ci/docs.sh installs.
func TestDocs(t *testing.T) {
	if os.Getenv("BRAINSTEM_DOCS") != "1" {
		t.Skip("BRAINSTEM_DOCS=1 runs the docs' shell commands against brainstem dev (bash .ci/docs.sh)")
	}
	npx := map[string]string{}
	for _, kv := range strings.Fields(os.Getenv("BRAINSTEM_DOCS_NPX")) {
		pkg, prog, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("BRAINSTEM_DOCS_NPX: %q is not package@version=path", kv)
		}
		npx[pkg] = prog
	}
	if len(npx) == 0 {
		t.Fatal("BRAINSTEM_DOCS_NPX names no program: run bash .ci/docs.sh, which installs the pinned Inspector")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "brainstem")
	build := exec.Command("go", "build", "-o", bin, "./cmd/brainstem")
	build.Dir = abs
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/brainstem: %v\n%s", err, out)
	}
	cfg := docstest.Config{Root: abs, Bin: bin, Npx: npx, Timeout: 2 * time.Minute, Logf: t.Logf}
	var sum docstest.Summary
	begin := time.Now()
	for _, f := range docFiles(t) {
		path, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := docstest.RunFile(context.Background(), cfg, path)
		sum.Add(s)
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d blocks run (%d run, %d output, %d stack: %d commands), %d skipped, in %s",
		sum.Run+sum.Output+sum.Stack, sum.Run, sum.Output, sum.Stack, sum.Commands, sum.Skip, time.Since(begin).Round(time.Millisecond))
}
