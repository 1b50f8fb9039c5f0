package history

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// plant commits, on the brain's branch and behind the shard's back (as a
// pull of a hostile remote or a person's commit would), a blob at each
// tree path, replacing whatever the path runs through; the work tree is
// left alone.
func (b *testBrain) plant(paths ...string) {
	b.t.Helper()
	dir := b.t.TempDir()
	src := filepath.Join(dir, "planted")
	if err := os.WriteFile(src, []byte("planted\n"), 0o644); err != nil {
		b.t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", b.root}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.root, "GIT_INDEX_FILE="+filepath.Join(dir, "index"),
			"GIT_AUTHOR_NAME=Mallory", "GIT_AUTHOR_EMAIL=mallory@acme.com", "GIT_COMMITTER_NAME=Mallory", "GIT_COMMITTER_EMAIL=mallory@acme.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("read-tree", "HEAD")
	blob := git("hash-object", "-w", "--no-filters", src)
	for _, p := range paths {
		git("update-index", "--add", "--replace", "--cacheinfo", "100644,"+blob+","+p)
	}
	commit := git("commit-tree", git("write-tree"), "-p", "HEAD", "-m", "planted")
	git("update-ref", "HEAD", commit)
}

// TestEntriesInTheWayOfANote: a directory planted at a note's path, or a
// file planted where a hall's directory must be, never blocks a write
// there: the note replaces them (issue 34's wedge), and the committer
// goes on.
func TestEntriesInTheWayOfANote(t *testing.T) {
	cases := []struct{ name, plant, write string }{
		{"directory at the note's path", "wiki/pay/facts/planned-note.md/held.md", "wiki/pay/facts/planned-note.md"},
		{"deep directory at the note's path", "wiki/pay/facts/planned-note.md/a/b/c", "wiki/pay/facts/planned-note.md"},
		{"file at the hall's path", "wiki/pay/facts", "wiki/pay/facts/planned-note.md"},
		{"file at the wing's path", "wiki/pay", "wiki/pay/facts/planned-note.md"},
		{"directory at an inbox name", "inbox/pay/idea.md/x", "inbox/pay/idea.md"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBrain(t)
			b.put("wiki/pay/decisions/a.md", note("A", "a"))
			h := b.open(b.options())
			b.plant(c.plant)
			b.write(h, "ann@acme.com", Op{Path: c.write, Content: []byte(note("Planned", "planned"))})
			flush(t, h)
			if st := h.Stuck(); st != nil {
				t.Fatalf("stuck: %s", st)
			}
			tree := b.git("ls-tree", "-r", "--name-only", "HEAD")
			if !strings.Contains(tree, c.write+"\n") || strings.Contains(tree, c.write+"/") {
				t.Fatalf("the note does not replace the planted entry:\n%s", tree)
			}
			vs, _, err := h.Versions(context.Background(), c.write, "", 10)
			if err != nil || len(vs) != 1 {
				t.Fatalf("versions %+v %v", vs, err)
			}
			b.write(h, "ann@acme.com", Op{Path: "wiki/pay/decisions/b.md", Content: []byte(note("B", "b"))})
			flush(t, h) // and it goes on committing
		})
	}
}

// TestStuckAboveTheWing: a file planted above the wing's directories
// ("wiki") is not the wing's to replace: the committer stops at once
// (no retry loop), reads go on, writes are refused with unavailable
// naming the fix, a restart with the change still pending starts and
// says the same, and once the entry is gone a restart commits it.
func TestStuckAboveTheWing(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/decisions/a.md", note("A", "a"))
	h, err := Open(ctx, b.options())
	if err != nil {
		t.Fatal(err)
	}
	good := strings.TrimSpace(b.git("rev-parse", "HEAD"))
	b.plant("wiki")
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/decisions/c.md", Content: []byte(note("C", "c"))})
	if err := h.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded on a change that cannot be committed")
	}
	st := h.Stuck()
	if st == nil || st.Path != "wiki/pay/decisions/c.md" || !strings.Contains(st.Fix, "remove wiki from branch") {
		t.Fatalf("Stuck = %+v", st)
	}
	if vs, _, err := h.Versions(ctx, "wiki/pay/decisions/a.md", "", 10); err != nil || len(vs) != 2 { // its version, and the planted removal
		t.Fatalf("a read while stuck: %+v %v", vs, err)
	}
	_, err = h.Begin(Change{Ops: []Op{{Path: "wiki/pay/decisions/d.md", Content: []byte("d")}}, Author: "ann@acme.com"})
	var be *brain.Error
	if !errors.As(err, &be) || be.Code != brain.CodeUnavailable || !strings.Contains(be.Message, "fix: remove wiki") {
		t.Fatalf("a write while stuck: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h, err = Open(ctx, b.options()) // the pending change is recovered, and cannot be committed either
	if err != nil {
		t.Fatalf("a shard whose pending log cannot be committed must still start: %v", err)
	}
	if st := h.Stuck(); st == nil || st.Path != "wiki/pay/decisions/c.md" {
		t.Fatalf("after the restart, Stuck = %+v", st)
	}
	if vs, _, err := h.Versions(ctx, "wiki/pay/decisions/a.md", "", 10); err != nil || len(vs) != 2 { // its version, and the planted removal
		t.Fatalf("a read while stuck after the restart: %+v %v", vs, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	problems, err := CheckDisk(ctx, b.options()) // brainstem check says the same, from the disk
	if err != nil || len(problems) != 1 || problems[0].Path != "wiki" || !strings.Contains(problems[0].Message, "git rm --cached wiki") {
		t.Fatalf("CheckDisk: %+v %v", problems, err)
	}

	b.git("update-ref", "HEAD", good) // the operator's fix
	h = b.open(b.options())
	if st := h.Stuck(); st != nil {
		t.Fatalf("still stuck after the fix: %s", st)
	}
	if vs, _, err := h.Versions(ctx, "wiki/pay/decisions/c.md", "", 10); err != nil || len(vs) != 1 || vs[0].Author != "ann@acme.com" {
		t.Fatalf("the pending change after the fix: %+v %v", vs, err)
	}
}
