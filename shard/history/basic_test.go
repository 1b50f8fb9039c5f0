package history

import (
	"context"
	"strings"
	"testing"
)

func TestBasicFlow(t *testing.T) {
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", note("A", "first"))
	b.put("wiki/pay/_index.md", "toc")
	h := b.open(b.options())
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte(note("A", "second"))})
	b.write(h, "bob@acme.com", Op{Path: "wiki/pay/facts/b.md", Content: []byte(note("B", "new"))})
	flush(t, h)
	vs, next, err := h.Versions(context.Background(), "wiki/pay/facts/a.md", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || next != "" || vs[0].Author != "ann@acme.com" || vs[1].Action != ActionInitial {
		t.Fatalf("versions %+v next %q", vs, next)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	t.Log(b.git("log", "--format=%H %ae %s"))
	if st := b.git("status", "--porcelain"); st != "" {
		t.Fatalf("status:\n%s", st)
	}
	if out := b.git("fsck", "--strict"); strings.Contains(out, "error") {
		t.Fatal(out)
	}
}
