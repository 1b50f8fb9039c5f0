package history

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexFollowsCommitsByOthers: a commit the shard did not make (a
// pull's merge, another shard's) whose bytes reach the working tree as a
// pull writes them, then read by the history, leaves .git/index holding
// the committed blobs: `git status` is clean and a person's `git commit
// -a` has nothing to revert. Both layouts: the brain's own repository,
// and a brain inside a larger worktree (its paths prefixed).
func TestIndexFollowsCommitsByOthers(t *testing.T) {
	for _, c := range []struct{ name, sub string }{{"brain's own repository", ""}, {"brain inside a worktree", "team/brain"}} {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			b := brainAt(t, filepath.Join(top, c.sub))
			b.put("wiki/pay/facts/a.md", note("A", "first"))
			if c.sub != "" {
				gitIn(top, "init", "-q", "-b", "main")
				gitIn(top, "commit", "-q", "--allow-empty", "-m", "first")
			}
			h, err := Open(context.Background(), b.options())
			if err != nil {
				t.Fatal(err)
			}
			rel := filepath.ToSlash(filepath.Join(c.sub, "wiki/pay/facts/a.md"))
			pulled := note("A", "second, from the remote")
			commitByOthers(t, top, rel, pulled)
			b.put("wiki/pay/facts/a.md", pulled) // as remote.Apply writes it
			if vs, _, err := h.Versions(context.Background(), "wiki/pay/facts/a.md", "", 10); err != nil || len(vs) != 2 {
				t.Fatalf("versions %+v %v", vs, err)
			}
			if err := h.Close(); err != nil { // the committer rewrites .git/index when idle, and at Close
				t.Fatal(err)
			}
			if st, _ := gitIn(top, "status", "--porcelain"); st != "" {
				t.Fatalf("git status after a commit by others:\n%s", st)
			}
			if out, err := gitIn(top, "commit", "-a", "-m", "a person's commit"); err == nil || !strings.Contains(out, "nothing to commit") {
				t.Fatalf("git commit -a: %v\n%s", err, out)
			}
		})
	}
}

// commitByOthers commits content at tree path rel on the branch of the
// repository at top, with a temporary index: .git/index stays as it was,
// as it does when a shard's pull moves the branch.
func commitByOthers(t *testing.T, top, rel, content string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "blob")
	if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", top}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+top, "GIT_INDEX_FILE="+filepath.Join(dir, "index"),
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@acme.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@acme.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("read-tree", "HEAD")
	git("update-index", "--cacheinfo", "100644,"+git("hash-object", "-w", "--no-filters", src)+","+rel)
	git("update-ref", "HEAD", git("commit-tree", git("write-tree"), "-p", "HEAD", "-m", "pulled"))
}
