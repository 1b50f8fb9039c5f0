package history

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestGitCLIAgrees runs a sequence of changes (creation, updates by two
// authors, a rename, a removal, an outside edit) and holds Versions and
// Read to what the git CLI reads from the repository.
func TestGitCLIAgrees(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/facts/keep.md", note("Keep", "kept"))
	h := b.open(b.options())
	a, moved, gone := "wiki/pay/decisions/use-keys.md", "wiki/pay/facts/use-keys.md", "wiki/pay/facts/keep.md"
	b.write(h, "ann@acme.com", Op{Path: a, Content: []byte(note("Use keys", "v1"))})
	b.write(h, "ann@acme.com", Op{Path: a, Content: []byte(note("Use keys", "v2"))})
	b.write(h, "bob@acme.com", Op{Path: a, Content: []byte(note("Use keys", "v3"))})
	b.write(h, "bob@acme.com", Op{Path: moved, From: a, Content: []byte(note("Use keys", "v3"))})
	b.write(h, "ann@acme.com", Op{Path: gone, Remove: true})
	flush(t, h)
	b.put(moved, note("Use keys", "v4 by an editor"))
	if err := h.Outside(ctx, []string{moved}); err != nil {
		t.Fatal(err)
	}
	vs, _, err := h.Versions(ctx, moved, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	wantActions := []string{ActionOutside, "update", "update", "update", "update"}
	if len(vs) != len(wantActions) {
		t.Fatalf("%d versions: %+v", len(vs), vs)
	}
	for i, v := range vs {
		if v.Action != wantActions[i] {
			t.Errorf("version %d action %q, want %q", i, v.Action, wantActions[i])
		}
	}
	if vs[1].From != a || vs[1].Path != moved || vs[2].Path != a {
		t.Errorf("rename not followed: %+v", vs[:3])
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// git log --follow lists the same commits, authors and subjects.
	log := strings.Split(strings.TrimSpace(b.git("log", "--follow", "--format=%H%x00%ae%x00%s", "--", moved)), "\n")
	if len(log) != len(vs) {
		t.Fatalf("git log --follow lists %d commits, Versions %d:\n%s", len(log), len(vs), strings.Join(log, "\n"))
	}
	for i, l := range log {
		f := strings.Split(l, "\x00")
		if f[0] != vs[i].ID || f[1] != vs[i].Author {
			t.Errorf("commit %d: git %q, Versions %s %s", i, l, vs[i].ID, vs[i].Author)
		}
	}
	h2 := b.open(b.options())
	for _, v := range vs {
		_, body, err := h2.Read(ctx, moved, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if show := b.git("show", v.ID+":"+v.Path); show != string(body) {
			t.Errorf("git show %s:%s = %q, Read %q", v.ID, v.Path, show, body)
		}
		if hashOf(string(body)) != v.ContentHash {
			t.Errorf("content hash of %s", v.ID)
		}
	}
	rm, _, err := h2.Versions(ctx, gone, "", 10)
	if err != nil || len(rm) != 2 || !rm[0].Removed || rm[1].Action != ActionInitial {
		t.Fatalf("removed note's versions %+v, %v", rm, err)
	}
	if gl := strings.Fields(b.git("log", "--format=%H", "--", gone)); len(gl) != 2 || gl[0] != rm[0].ID {
		t.Errorf("git log of the removed note %v", gl)
	}
	if st := b.git("status", "--porcelain"); st != "" {
		t.Errorf("git status is not clean:\n%s", st)
	}
	if out, err := b.gitErr("fsck", "--strict"); err != nil || strings.Contains(out, "error") {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
	counts := b.git("count-objects", "-v")
	if !strings.Contains(counts, "garbage: 0") {
		t.Errorf("count-objects:\n%s", counts)
	}
	loose := countField(counts, "count")
	packed := countField(counts, "in-pack")
	if loose+packed < len(vs) {
		t.Errorf("count-objects reports %d loose + %d packed objects", loose, packed)
	}
}

func countField(out, key string) int {
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok && k == key {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}
