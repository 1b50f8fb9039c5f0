package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBeginRefuses(t *testing.T) {
	b := newBrain(t)
	h := b.open(b.options())
	ok := Op{Path: "wiki/pay/facts/a.md", Content: []byte("x")}
	for _, tc := range []struct {
		name string
		c    Change
		says string
	}{
		{"no ops", Change{Author: "a@acme.com", Action: "update"}, "without operations"},
		{"no author", Change{Ops: []Op{ok}, Action: "update"}, "author"},
		{"author with brackets", Change{Ops: []Op{ok}, Author: "a <b>", Action: "update"}, "author"},
		{"no action", Change{Ops: []Op{ok}, Author: "a@acme.com"}, "action"},
		{"untracked path", Change{Ops: []Op{{Path: "wiki/pay/_index.md", Content: []byte("x")}}, Author: "a@acme.com", Action: "u"}, "not a tracked path"},
		{"another wing", Change{Ops: []Op{{Path: "wiki/ops/facts/a.md", Content: []byte("x")}}, Author: "a@acme.com", Action: "u"}, "not a tracked path"},
		{"untracked source", Change{Ops: []Op{{Path: "wiki/pay/facts/a.md", From: "sessions/pay/x.jsonl", Content: []byte("x")}}, Author: "a@acme.com", Action: "u"}, "not a tracked path"},
		{"path twice", Change{Ops: []Op{ok, ok}, Author: "a@acme.com", Action: "u"}, "twice"},
		{"removal with content", Change{Ops: []Op{{Path: "wiki/pay/facts/a.md", Remove: true, Content: []byte("x")}}, Author: "a@acme.com", Action: "u"}, "carries content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := h.Begin(tc.c)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Begin = %v, %v; want an error saying %q", p, err, tc.says)
			}
		})
	}
	if segs, _ := os.ReadDir(filepath.Join(b.state, "pending")); len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	} else if fi, _ := segs[0].Info(); fi.Size() != 0 {
		t.Errorf("a refused change reached the pending log (%d bytes)", fi.Size())
	}
}

// TestVersionsPaging pages through 45 versions newest first.
func TestVersionsPaging(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	h := b.open(b.options())
	p := "wiki/pay/facts/a.md"
	for i := range 45 {
		b.write(h, "ann@acme.com", Op{Path: p, Content: []byte(fmt.Sprint(i))})
	}
	var all []Version
	cursor := ""
	for pages := 0; ; pages++ {
		vs, next, err := h.Versions(ctx, p, cursor, 20)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, vs...)
		if next == "" {
			if pages != 2 {
				t.Errorf("%d pages", pages+1)
			}
			break
		}
		cursor = next
	}
	if len(all) != 45 {
		t.Fatalf("%d versions", len(all))
	}
	for i, v := range all {
		if v.ContentHash != hashOf(fmt.Sprint(44-i)) {
			t.Fatalf("version %d out of order", i)
		}
	}
	if vs, _, _ := h.Versions(ctx, p, "", 0); len(vs) != defaultPage {
		t.Errorf("limit 0 gives %d", len(vs))
	}
}

// TestOutside: an outside edit is committed by the service identity; bytes
// equal to the head's record nothing; a path a change in flight is about
// to commit is left to that change.
func TestOutside(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", "v0\n")
	b.put("wiki/pay/facts/b.md", "b0\n")
	opt := b.options()
	opt.Service = Identity{Name: "Shard", Email: "shard@acme.com"}
	h := b.open(opt)
	b.put("wiki/pay/facts/a.md", "v1 by an editor\n")
	if err := h.Outside(ctx, []string{"wiki/pay/facts/a.md", "wiki/pay/facts/b.md"}); err != nil {
		t.Fatal(err)
	}
	vs, _, _ := h.Versions(ctx, "wiki/pay/facts/a.md", "", 10)
	if len(vs) != 2 || vs[0].Author != "shard@acme.com" || vs[0].Action != ActionOutside {
		t.Fatalf("%+v", vs)
	}
	if bs, _, _ := h.Versions(ctx, "wiki/pay/facts/b.md", "", 10); len(bs) != 1 {
		t.Errorf("an unchanged file got a version: %+v", bs)
	}
	commits := b.git("rev-list", "--count", "HEAD")
	if err := h.Outside(ctx, []string{"wiki/pay/facts/a.md"}); err != nil {
		t.Fatal(err)
	}
	if b.git("rev-list", "--count", "HEAD") != commits {
		t.Error("Outside on unchanged bytes made a commit")
	}
	// A change in flight: its file already holds the new bytes.
	p, err := h.Begin(Change{Ops: []Op{{Path: "wiki/pay/facts/b.md", Content: []byte("b1\n")}}, Author: "ann@acme.com", Action: "update"})
	if err != nil {
		t.Fatal(err)
	}
	b.put("wiki/pay/facts/b.md", "b1\n")
	done := make(chan error, 1)
	go func() { done <- h.Outside(ctx, []string{"wiki/pay/facts/b.md"}) }()
	p.Landed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	bs, _, _ := h.Versions(ctx, "wiki/pay/facts/b.md", "", 10)
	if len(bs) != 2 || bs[0].Author != "ann@acme.com" {
		t.Fatalf("the change in flight was recorded as outside: %+v", bs)
	}
	if err := h.Outside(ctx, []string{"sessions/pay/x.jsonl"}); err == nil {
		t.Error("Outside took an untracked path")
	}
}

// TestFlushWaitsForLanded: Flush returns once what landed before it is
// committed; a change still in flight does not hold later reads forever
// once it lands.
func TestFlushWaitsForLanded(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	h := b.open(b.options())
	first, err := h.Begin(Change{Ops: []Op{{Path: "wiki/pay/facts/a.md", Content: []byte("1")}}, Author: "a@acme.com", Action: "create"})
	if err != nil {
		t.Fatal(err)
	}
	second := b.write(h, "b@acme.com", Op{Path: "wiki/pay/facts/b.md", Content: []byte("2")})
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	// The second landed but waits behind the first, in flight: commits
	// are in sequence order.
	if err := h.Flush(tctx); err == nil {
		t.Fatal("Flush returned while an earlier change was in flight")
	}
	first.Abandon()
	flush(t, h)
	if v, ok := h.Latest("wiki/pay/facts/b.md"); !ok || v.Author != "b@acme.com" {
		t.Fatalf("Latest %+v %v", v, ok)
	}
	if _, ok := h.Latest("wiki/pay/facts/a.md"); ok {
		t.Error("an abandoned change was committed")
	}
	_ = second
}

// TestIndexKeptInStep: .git/index gets the wing's entries with stat data
// (git status is clean without refreshing), entries of other paths stay.
func TestIndexKeptInStep(t *testing.T) {
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", "a\n")
	h := b.open(b.options())
	h.Close()
	b.put("README.md", "readme\n")
	b.git("add", "README.md") // staged by a person, not committed
	h = b.open(b.options())
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("a2\n")})
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/b.md", Content: []byte("b\n")})
	h.Close()
	if st := b.git("status", "--porcelain"); st != "A  README.md\n" {
		t.Fatalf("git status:\n%s", st)
	}
	// git diff-files compares stat data only: no entry needs a refresh.
	if out := b.git("diff-files", "--name-only"); out != "" {
		t.Errorf("entries whose stat data is stale: %s", out)
	}
}

// TestCheck reports each disagreement between the files and the history,
// and changes nothing.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	for _, n := range []string{"a", "b", "c"} {
		b.put("wiki/pay/facts/"+n+".md", n+"\n")
	}
	h := b.open(b.options())
	if ps, err := h.Check(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("a clean brain: %+v %v", ps, err)
	}
	b.put("wiki/pay/facts/a.md", "edited\n")
	os.Remove(filepath.Join(b.root, "wiki/pay/facts/b.md"))
	b.put("wiki/pay/facts/new.md", "new\n")
	head := b.git("rev-parse", "HEAD")
	ps, err := h.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"wiki/pay/facts/a.md": "differs", "wiki/pay/facts/b.md": "gone", "wiki/pay/facts/new.md": "no version"}
	if len(ps) != len(want) {
		t.Fatalf("problems %+v", ps)
	}
	for _, p := range ps {
		if !strings.Contains(p.Message, want[p.Path]) {
			t.Errorf("%s: %q", p.Path, p.Message)
		}
	}
	if b.git("rev-parse", "HEAD") != head {
		t.Error("Check committed")
	}
	lock := filepath.Join(b.root, ".git", "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lock, old, old)
	ps, _ = h.Check(ctx)
	found := false
	for _, p := range ps {
		found = found || strings.Contains(p.Message, "main.lock")
	}
	if !found {
		t.Errorf("a stale ref lock is not reported: %+v", ps)
	}
	os.Remove(lock)
}

// TestClosed: every call after Close fails with a clear error and
// changes nothing.
func TestClosed(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", "a\n")
	h := b.open(b.options())
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := h.Begin(Change{Ops: []Op{{Path: "wiki/pay/facts/a.md", Content: []byte("x")}}, Author: "a@acme.com", Action: "u"}); err == nil {
		t.Error("Begin after Close")
	}
	if _, _, err := h.Versions(ctx, "wiki/pay/facts/a.md", "", 1); err == nil {
		t.Error("Versions after Close")
	}
	if err := h.Outside(ctx, []string{"wiki/pay/facts/a.md"}); err == nil {
		t.Error("Outside after Close")
	}
	if _, err := h.Check(ctx); err == nil {
		t.Error("Check after Close")
	}
	if _, ok := h.Latest("wiki/pay/facts/a.md"); !ok {
		t.Error("Latest answers from memory after Close")
	}
}
