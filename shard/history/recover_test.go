package history

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRecovery holds Open's settling of the pending log to its rules: a
// change is committed if its landed marker survived, if its files hold its
// content, or if a later change was based on it; otherwise it is dropped.
func TestRecovery(t *testing.T) {
	const a, bPath, c = "wiki/pay/facts/a.md", "wiki/pay/facts/b.md", "wiki/pay/decisions/c.md"
	v0, v1, v2 := note("A", "v0"), note("A", "v1"), note("A", "v2")
	put := func(seq uint64, author string, op Op) *record {
		return &record{kind: kindChange, seq: seq, at: time.Unix(1764486000+int64(seq), 0), change: Change{Ops: []Op{op}, Author: author, Action: "update", Subject: "s"}}
	}
	based := func(content string) (bool, [32]byte) { return true, sha256.Sum256([]byte(content)) }
	hadV1, sumV1 := based(v1)
	for _, tc := range []struct {
		name    string
		records []*record
		disk    map[string]string // "" removes the file
		want    []string          // authors of the versions of path, newest first
		path    string
	}{
		{"landed marker, file changed since", []*record{put(1, "ann@acme.com", Op{Path: a, Content: []byte(v1)}), {kind: kindLanded, seq: 1}},
			map[string]string{a: v2}, []string{"history@brainstem.invalid", "ann@acme.com", "history@brainstem.invalid"}, a},
		{"no marker, the file holds it", []*record{put(1, "ann@acme.com", Op{Path: a, Content: []byte(v1)})},
			map[string]string{a: v1}, []string{"ann@acme.com", "history@brainstem.invalid"}, a},
		{"no marker, a later change was based on it", []*record{put(1, "ann@acme.com", Op{Path: a, Content: []byte(v1)}),
			put(2, "bob@acme.com", Op{Path: a, Content: []byte(v2), HadBase: hadV1, Base: sumV1})},
			map[string]string{a: v2}, []string{"bob@acme.com", "ann@acme.com", "history@brainstem.invalid"}, a},
		{"never landed", []*record{put(1, "ann@acme.com", Op{Path: a, Content: []byte(v1)})},
			map[string]string{a: v0}, []string{"history@brainstem.invalid"}, a},
		{"abandoned", []*record{put(1, "ann@acme.com", Op{Path: a, Content: []byte(v1)}), {kind: kindAbandon, seq: 1}},
			map[string]string{a: v0}, []string{"history@brainstem.invalid"}, a},
		{"removal landed", []*record{put(1, "ann@acme.com", Op{Path: a, Remove: true})},
			map[string]string{a: ""}, []string{"ann@acme.com", "history@brainstem.invalid"}, a},
		{"rename landed", []*record{put(1, "ann@acme.com", Op{Path: c, From: a, Content: []byte(v0)})},
			map[string]string{a: "", c: v0}, []string{"ann@acme.com", "history@brainstem.invalid"}, c},
		{"rename whose source survives", []*record{put(1, "ann@acme.com", Op{Path: c, From: a, Content: []byte(v0)})},
			map[string]string{c: v0}, []string{"history@brainstem.invalid"}, a},
		{"creation landed", []*record{put(1, "ann@acme.com", Op{Path: bPath, Content: []byte(v1)})},
			map[string]string{bPath: v1}, []string{"ann@acme.com"}, bPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrain(t)
			b.put(a, v0)
			h := b.open(b.options())
			h.Close()
			writeLog(t, b, tc.records)
			for p, content := range tc.disk {
				if content == "" {
					os.Remove(filepath.Join(b.root, filepath.FromSlash(p)))
				} else {
					b.put(p, content)
				}
			}
			h2 := b.open(b.options())
			vs, _, err := h2.Versions(context.Background(), tc.path, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.Author)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("authors %v, want %v (%+v)", got, tc.want, vs)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("authors %v, want %v", got, tc.want)
				}
			}
			if segs, _ := segmentNames(filepath.Join(b.state, "pending")); len(segs) > 1 {
				t.Errorf("settled segments left behind: %v", segs)
			}
		})
	}
}

// TestRecoveryCommittedOnce: a change whose commit landed before the
// crash (its segment not yet deleted) is not committed twice.
func TestRecoveryCommittedOnce(t *testing.T) {
	b := newBrain(t)
	h := b.open(b.options())
	p := b.write(h, "ann@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("one")})
	flush(t, h)
	rec := *p.rec
	h.Close()
	writeLog(t, b, []*record{&rec, {kind: kindLanded, seq: rec.seq}})
	h2 := b.open(b.options())
	vs, _, err := h2.Versions(context.Background(), "wiki/pay/facts/a.md", "", 10)
	if err != nil || len(vs) != 1 {
		t.Fatalf("%+v %v", vs, err)
	}
	next := b.write(h2, "bob@acme.com", Op{Path: "wiki/pay/facts/a.md", Content: []byte("two")})
	if next.Seq() <= rec.seq {
		t.Errorf("sequence numbers went back: %d after %d", next.Seq(), rec.seq)
	}
}

// writeLog leaves records in the pending log, as a crash would.
func writeLog(t *testing.T, b *testBrain, recs []*record) {
	t.Helper()
	var raw []byte
	for _, r := range recs {
		raw = appendRecord(raw, r)
	}
	dir := filepath.Join(b.state, "pending")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
