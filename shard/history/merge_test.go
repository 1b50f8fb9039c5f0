package history

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPulledMerge: a person pulls another clone's commits into the brain
// with a merge commit while the shard commits; the versions of both sides
// are read, and each note's newest version is what the merge holds.
func TestPulledMerge(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", "a0\n")
	b.put("wiki/pay/facts/b.md", "b0\n")
	h := b.open(b.options())
	h.Close()
	other := t.TempDir()
	if out, err := gitIn(b.root, "clone", "-q", b.root, other); err != nil {
		t.Fatal(out)
	}
	if err := os.WriteFile(filepath.Join(other, "wiki/pay/facts/b.md"), []byte("b1 from the other clone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := gitIn(other, "commit", "-q", "-am", "Edit b elsewhere"); err != nil {
		t.Fatal(out)
	}
	h = b.open(b.options())
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("a1\n")})
	flush(t, h)
	h.q.poke()
	var out string
	var err error
	for range 200 {
		if out, err = b.gitErr("pull", "-q", "--no-rebase", "--no-ff", "--no-edit", other, "main"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("git pull: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		path, newest, author string
		n                    int
	}{
		{"wiki/pay/facts/a.md", "a1\n", "ann@acme.com", 2},
		{"wiki/pay/facts/b.md", "b1 from the other clone\n", "person@acme.com", 2},
	} {
		vs, _, err := h.Versions(ctx, tc.path, "", 10)
		if err != nil || len(vs) != tc.n || vs[0].ContentHash != hashOf(tc.newest) || vs[0].Author != tc.author {
			t.Errorf("%s: %+v %v", tc.path, vs, err)
		}
	}
	b.write(h, "bob@acme.com", Op{Path: "wiki/pay/facts/b.md", Content: []byte("b2\n")})
	flush(t, h)
	if log := b.git("log", "--first-parent", "-1", "--format=%ae", "--", "wiki/pay/facts/b.md"); log != "bob@acme.com\n" {
		t.Errorf("the next commit was not built on the merge: %q", log)
	}
	if out, err := b.gitErr("fsck", "--strict"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}
