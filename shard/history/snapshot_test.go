package history

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/internal/durable"
)

// sampleIndex is a version index with a rename, a removal and a purge.
func sampleIndex() *versionIndex {
	ix := newVersionIndex()
	at := time.Unix(1764486000, 0).UTC()
	c1 := &commitInfo{id: plumbing.NewHash("1111111111111111111111111111111111111111"), at: at, author: "ann@acme.com", action: "create", seq: 1}
	c2 := &commitInfo{id: plumbing.NewHash("2222222222222222222222222222222222222222"), at: at.Add(time.Second), author: "bob@acme.com", action: "move", tool: "t", reason: "r", key: "k", seq: 2}
	c3 := &commitInfo{id: plumbing.NewHash("3333333333333333333333333333333333333333"), at: at.Add(2 * time.Second), author: "x@acme.com", action: ActionOutside}
	ix.apply(c1, []pathChange{{path: "wiki/pay/facts/a.md", blob: plumbing.NewHash("aa00000000000000000000000000000000000000"), sum: [32]byte{1}},
		{path: "inbox/pay/b.md", blob: plumbing.NewHash("bb00000000000000000000000000000000000000"), sum: [32]byte{2}, purged: true}})
	ix.apply(c2, []pathChange{{path: "wiki/pay/decisions/a.md", from: "wiki/pay/facts/a.md", blob: plumbing.NewHash("aa00000000000000000000000000000000000000"), sum: [32]byte{1}}})
	ix.apply(c3, []pathChange{{path: "inbox/pay/b.md", removed: true}})
	ix.head, ix.lastSeq = c3.id, 2
	return ix
}

func encodeSnapshotBytes(t testing.TB, k snapKey, ix *versionIndex) []byte {
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, k, ix); err != nil {
		t.Fatal(err)
	}
	return codec.AppendUint32(buf.Bytes(), durable.Checksum(buf.Bytes()))
}

func TestSnapshotRoundTrip(t *testing.T) {
	k := snapKey{"pay", "", "refs/heads/main"}
	ix := sampleIndex()
	raw := encodeSnapshotBytes(t, k, ix)
	back, err := decodeSnapshot(bytes.NewReader(raw), k)
	if err != nil {
		t.Fatal(err)
	}
	if back.head != ix.head || back.lastSeq != 2 || len(back.byPath) != len(ix.byPath) || len(back.moved) != 1 {
		t.Fatalf("decoded %+v", back)
	}
	for p, l := range ix.byPath {
		bl := back.byPath[p]
		if bl == nil || len(bl.vs) != len(l.vs) {
			t.Fatalf("lineage %s: %+v", p, bl)
		}
		for i := range l.vs {
			if !reflect.DeepEqual(bl.vs[i].public(), l.vs[i].public()) {
				t.Errorf("%s version %d:\n%+v\n%+v", p, i, bl.vs[i].public(), l.vs[i].public())
			}
		}
	}
	if to, _, ok := back.movedTo("wiki/pay/facts/a.md"); !ok || to != "wiki/pay/decisions/a.md" {
		t.Errorf("movedTo %q %v", to, ok)
	}
	if again := encodeSnapshotBytes(t, k, back); !bytes.Equal(again, raw) {
		t.Error("re-encoding the decoded snapshot changes it")
	}
	for _, bad := range []struct {
		name string
		data []byte
		key  snapKey
	}{
		{"other wing", raw, snapKey{"ops", "", "refs/heads/main"}},
		{"other branch", raw, snapKey{"pay", "", "refs/heads/dev"}},
		{"flipped byte", flip(raw, len(raw)/2), k},
		{"cut", raw[:len(raw)-3], k},
		{"trailing byte", append(append([]byte{}, raw...), 0), k},
	} {
		if _, err := decodeSnapshot(bytes.NewReader(bad.data), bad.key); !errors.Is(err, errSnapshot) {
			t.Errorf("%s: err = %v", bad.name, err)
		}
	}
}

// TestSnapshotUnusable: a corrupt snapshot costs a rebuild from git, with
// the same versions.
func TestSnapshotUnusable(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	h := b.open(b.options())
	b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("one")})
	b.write(h, "bob@acme.com", Op{Path: "wiki/pay/facts/b.md", From: "wiki/pay/facts/a.md", Content: []byte("one")})
	want, _, err := h.Versions(ctx, "wiki/pay/facts/b.md", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	path := filepath.Join(b.state, snapshotName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, flip(raw, len(raw)/2), 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := b.open(b.options())
	got, _, err := h2.Versions(ctx, "wiki/pay/facts/b.md", "", 10)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt:\n%+v\nwant\n%+v\n%v", got, want, err)
	}
}

// FuzzSnapshot: the snapshot decoder never panics and refuses bad input
// with errSnapshot; what it accepts encodes back to the same bytes.
func FuzzSnapshot(f *testing.F) {
	k := snapKey{"pay", "", "refs/heads/main"}
	f.Add(encodeSnapshotBytes(f, k, sampleIndex()))
	f.Add(encodeSnapshotBytes(f, k, newVersionIndex()))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := decodeSnapshot(bytes.NewReader(data), k)
		if err != nil {
			if !errors.Is(err, errSnapshot) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		_ = ix.removed("")
		for p := range ix.byPath {
			if _, _, err := ix.page(p, "", 5); err != nil {
				t.Fatal(err)
			}
		}
	})
}
