package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// TestOpenWhereTheRepositoryLives: the brain's own repository when it is
// a git worktree (or inside one, with the brain's paths prefixed), else a
// new one at Root/.git on branch main; a detached HEAD is refused.
func TestOpenWhereTheRepositoryLives(t *testing.T) {
	t.Run("new repository", func(t *testing.T) {
		b := newBrain(t)
		b.put("wiki/pay/facts/a.md", "a\n")
		b.open(b.options()).Close()
		if head := strings.TrimSpace(b.read(".git/HEAD")); head != "ref: refs/heads/main" {
			t.Fatalf("HEAD %q", head)
		}
		if got := strings.TrimSpace(b.git("log", "--format=%an <%ae>|%s")); got != "Brainstem <history@brainstem.invalid>|Initial history of wing pay" {
			t.Fatalf("log %q", got)
		}
		exclude := b.read(".git/info/exclude")
		for _, l := range []string{"/sessions/", "/wiki/*/_index.md", "/.brainstem/"} {
			if !strings.Contains(exclude, "\n"+l+"\n") {
				t.Errorf("info/exclude lacks %s:\n%s", l, exclude)
			}
		}
		b.put("sessions/pay/s1.jsonl", "{}\n")
		b.put("wiki/pay/_index.md", "toc\n")
		if st := b.git("status", "--porcelain"); st != "" {
			t.Errorf("git status:\n%s", st)
		}
	})
	t.Run("brain inside a worktree", func(t *testing.T) {
		top := t.TempDir()
		b := brainAt(t, filepath.Join(top, "team", "brain"))
		b.put("wiki/pay/facts/a.md", "a\n")
		if out, err := gitIn(top, "init", "-q", "-b", "trunk"); err != nil {
			t.Fatal(out)
		}
		if err := os.WriteFile(filepath.Join(top, "README"), []byte("repo\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(top, "add", "README")
		gitIn(top, "commit", "-q", "-m", "first")
		h := b.open(b.options())
		b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("a2\n")})
		h.Close()
		files, _ := gitIn(top, "ls-tree", "-r", "--name-only", "HEAD")
		if files != "README\nteam/brain/wiki/pay/facts/a.md\n" {
			t.Fatalf("tree:\n%s", files)
		}
		if ex, _ := os.ReadFile(filepath.Join(top, ".git", "info", "exclude")); !strings.Contains(string(ex), "/team/brain/sessions/") {
			t.Errorf("exclude:\n%s", ex)
		}
		if st, _ := gitIn(top, "status", "--porcelain"); st != "" {
			t.Errorf("git status:\n%s", st)
		}
		if br, _ := gitIn(top, "rev-parse", "--abbrev-ref", "HEAD"); br != "trunk\n" {
			t.Errorf("branch %q", br)
		}
	})
	t.Run("detached HEAD", func(t *testing.T) {
		b := newBrain(t)
		b.put("wiki/pay/facts/a.md", "a\n")
		b.open(b.options()).Close()
		b.git("checkout", "-q", "--detach")
		_, err := Open(context.Background(), b.options())
		if err == nil || !strings.Contains(err.Error(), "detached HEAD") || !strings.Contains(err.Error(), "switch") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("one History per state directory", func(t *testing.T) {
		b := newBrain(t)
		b.open(b.options())
		if _, err := Open(context.Background(), b.options()); err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("err = %v", err)
		}
	})
}

func gitIn(dir string, args ...string) (string, error) {
	b := &testBrain{root: dir}
	return b.gitErr(args...)
}

// TestOpenReconciles: changes made while no shard ran (an editor, a pull
// already committed) are recorded at Open, reading only the files whose
// stat data changed; a removed file is a removal; a rename by hand is a
// rename.
func TestOpenReconciles(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		b.put("wiki/pay/facts/"+n+".md", note(n, "v0"))
	}
	h := b.open(b.options())
	h.Close()
	b.put("wiki/pay/facts/a.md", note("a", "edited"))
	os.Remove(filepath.Join(b.root, "wiki/pay/facts/b.md"))
	os.Rename(filepath.Join(b.root, "wiki/pay/facts/c.md"), filepath.Join(b.root, "wiki/pay/decisions/c.md"))
	b.put("wiki/pay/decisions/c.md", note("c", "v0")) // same bytes as before the move
	os.Remove(filepath.Join(b.root, "wiki/pay/facts/c.md"))
	opt := b.options()
	reads := 0
	files := opt.Files
	opt.Files = func() ([]string, error) { reads++; return files() }
	h2 := b.open(opt)
	for _, tc := range []struct {
		path   string
		n      int
		newest func(Version) bool
	}{
		{"wiki/pay/facts/a.md", 2, func(v Version) bool { return v.Action == ActionOutside && v.ContentHash == hashOf(note("a", "edited")) }},
		{"wiki/pay/facts/b.md", 2, func(v Version) bool { return v.Removed }},
		{"wiki/pay/decisions/c.md", 2, func(v Version) bool { return v.From == "wiki/pay/facts/c.md" }},
		{"wiki/pay/facts/d.md", 1, func(v Version) bool { return v.Action == ActionInitial }},
	} {
		vs, _, err := h2.Versions(ctx, tc.path, "", 10)
		if err != nil || len(vs) != tc.n || !tc.newest(vs[0]) {
			t.Errorf("%s: %+v %v", tc.path, vs, err)
		}
	}
	if reads != 1 {
		t.Errorf("Files called %d times", reads)
	}
	h2.Close()
	if st := b.git("status", "--porcelain"); st != "" {
		t.Errorf("git status:\n%s", st)
	}
}

// TestOpenUsesTheStatCache: a restart reads only the files whose stat
// data (size, mtime, ctime, inode) differs from what .git/index records,
// or whose entry is racily clean (not older than the index).
func TestOpenUsesTheStatCache(t *testing.T) {
	b := newBrain(t)
	for i := range 20 {
		b.put(fmt.Sprintf("wiki/pay/facts/n%d.md", i), note("n", fmt.Sprint(i)))
	}
	b.open(b.options()).Close()
	reopen := func() []string {
		var read []string
		opt := b.options()
		opt.onRead = func(rel string) { read = append(read, rel) }
		b.open(opt).Close()
		return read
	}
	if read := reopen(); len(read) != 0 {
		t.Fatalf("a clean restart read %v", read)
	}
	b.put("wiki/pay/facts/n3.md", note("n", "changed"))
	if read := reopen(); len(read) != 1 || read[0] != "wiki/pay/facts/n3.md" {
		t.Fatalf("read %v, want the changed file only", read)
	}
	// An entry as new as the index is racily clean: read again.
	idx := filepath.Join(b.root, ".git", "index")
	fi, _ := os.Stat(filepath.Join(b.root, "wiki/pay/facts/n5.md"))
	if err := os.Chtimes(idx, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if read := reopen(); !slices.Contains(read, "wiki/pay/facts/n5.md") {
		t.Fatalf("read %v, want the racy entry", read)
	}
	h := b.open(b.options())
	vs, _, _ := h.Versions(context.Background(), "wiki/pay/facts/n3.md", "", 10)
	if len(vs) != 2 || vs[0].Action != ActionOutside {
		t.Fatalf("versions %+v", vs)
	}
}

// TestHistoryRewrittenElsewhere: when the known head is no longer an
// ancestor (a person rewrote the branch), the index is rebuilt from git.
func TestHistoryRewrittenElsewhere(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", "v0\n")
	h := b.open(b.options())
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("v1\n")})
	b.write(h, "bob@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("v2\n")})
	flush(t, h)
	h.q.poke()
	// The person drops the last commit and commits other content.
	if err := handReset(b); err != nil {
		t.Fatal(err)
	}
	b.put("wiki/pay/facts/a.md", "v2 by hand\n")
	if err := handCommit(b, "wiki/pay/facts/a.md", "Rewrite"); err != nil {
		t.Fatal(err)
	}
	vs, _, err := h.Versions(ctx, "wiki/pay/facts/a.md", "", 10)
	if err != nil || len(vs) != 3 || vs[0].Author != "person@acme.com" || vs[1].Author != "ann@acme.com" {
		t.Fatalf("%+v %v", vs, err)
	}
	b.write(h, "cy@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("v3\n")})
	vs, _, _ = h.Versions(ctx, "wiki/pay/facts/a.md", "", 10)
	if len(vs) != 4 || vs[0].Author != "cy@acme.com" {
		t.Fatalf("%+v", vs)
	}
}

func handReset(b *testBrain) error {
	var err error
	for range 200 {
		if _, err = b.gitErr("reset", "-q", "--soft", "HEAD~1"); err == nil {
			return nil
		}
	}
	return err
}

// TestReadRefusals: the errors a caller sees are *brain.Error with the
// code and a message saying what to do, naming brain paths only.
func TestReadRefusals(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", "v0\n")
	b.put("wiki/pay/facts/other.md", "o\n")
	h := b.open(b.options())
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("v1\n")})
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/other.md", Content: []byte("o2\n")})
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/b.md", From: "wiki/pay/facts/a.md", Content: []byte("v1\n")})
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/b.md", Remove: true})
	other, _, _ := h.Versions(ctx, "wiki/pay/facts/other.md", "", 1)
	bv, _, _ := h.Versions(ctx, "wiki/pay/facts/b.md", "", 10)
	for _, tc := range []struct {
		name string
		call func() error
		code brain.Code
		says string
	}{
		{"unknown path", func() error { _, _, err := h.Versions(ctx, "wiki/pay/facts/none.md", "", 1); return err }, brain.CodeNotFound, "no history"},
		{"moved path", func() error { _, _, err := h.Versions(ctx, "wiki/pay/facts/a.md", "", 1); return err }, brain.CodeNotFound, "moved to wiki/pay/facts/b.md"},
		{"bad cursor", func() error { _, _, err := h.Versions(ctx, "wiki/pay/facts/b.md", "x", 1); return err }, brain.CodeInvalidArgument, "cursor"},
		{"another note's version", func() error { _, _, err := h.Read(ctx, "wiki/pay/facts/b.md", other[0].ID); return err }, brain.CodeInvalidArgument, "not a version of wiki/pay/facts/b.md"},
		{"unknown version", func() error {
			_, _, err := h.Read(ctx, "wiki/pay/facts/b.md", strings.Repeat("0", 40))
			return err
		}, brain.CodeNotFound, "no version"},
		{"a removal has no content", func() error { _, _, err := h.Read(ctx, "wiki/pay/facts/b.md", bv[0].ID); return err }, brain.CodeInvalidArgument, "no content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := brain.As(tc.call())
			if !ok || e.Code != tc.code || !strings.Contains(e.Message, tc.says) || strings.Contains(e.Message, b.root) {
				t.Fatalf("err = %v, want %s saying %q", e, tc.code, tc.says)
			}
		})
	}
	if to, v, ok := h.MovedTo("wiki/pay/facts/a.md"); !ok || to != "wiki/pay/facts/b.md" || !v.Removed {
		t.Errorf("MovedTo = %q %+v %v", to, v, ok)
	}
	if rm := h.Removed("wiki/pay/"); len(rm) != 1 || rm[0].Path != "wiki/pay/facts/b.md" {
		t.Errorf("Removed = %+v", rm)
	}
	if v, ok := h.Latest("wiki/pay/facts/other.md"); !ok || v.ID != other[0].ID {
		t.Errorf("Latest = %+v %v", v, ok)
	}
}
