package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPacking: loose objects are packed in the background (pack and index
// durable before the loose objects go), small packs are merged, and git
// reads the result.
func TestPacking(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	for i := range 30 {
		b.put(fmt.Sprintf("wiki/pay/facts/n%d.md", i), note("n", strings.Repeat("word ", 200)+fmt.Sprint(i)))
	}
	opt := b.options()
	opt.packEvery = 20
	h := b.open(opt)
	for i := range 60 {
		b.write(h, "ann@acme.com", Op{Path: fmt.Sprintf("wiki/pay/facts/n%d.md", i%30), Content: []byte(note("n", strings.Repeat("word ", 200)+fmt.Sprint(i, " edit")))})
		flush(t, h) // one commit a batch: loose objects
		if i%10 == 9 {
			h.q.poke() // idle: the committer packs
		}
	}
	flush(t, h)
	h.Close()
	counts := b.git("count-objects", "-v")
	t.Log(counts)
	packs := countField(counts, "packs")
	if packs < 1 || packs > 4 {
		t.Errorf("%d packs:\n%s", packs, counts)
	}
	if out, err := b.gitErr("fsck", "--strict", "--full"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	// The committer's hints made deltas: git's own check lists chains.
	idxs, _ := filepath.Glob(filepath.Join(b.root, ".git", "objects", "pack", "pack-*.idx"))
	deltas := false
	for _, idx := range idxs {
		out := b.git("verify-pack", "-v", idx)
		deltas = deltas || strings.Contains(out, "chain length = 1:")
	}
	if !deltas {
		t.Error("no pack holds a delta")
	}
	h2 := b.open(b.options())
	vs, _, err := h2.Versions(ctx, "wiki/pay/facts/n7.md", "", 10)
	if err != nil || len(vs) != 3 {
		t.Fatalf("%+v %v", vs, err)
	}
	for _, v := range vs {
		if _, body, err := h2.Read(ctx, v.Path, v.ID); err != nil || hashOf(string(body)) != v.ContentHash {
			t.Fatalf("read %s: %v", v.ID, err)
		}
	}
	tmp, _ := filepath.Glob(filepath.Join(b.root, ".git", "objects", "pack", "tmp_*"))
	if len(tmp) > 0 {
		t.Errorf("temporary pack files left: %v", tmp)
	}
	if _, err := os.Stat(filepath.Join(b.root, ".git", "brainstem-packing.lock")); err == nil {
		t.Error("the packing lock was left behind")
	}
}
