package index_test

import (
	"bufio"
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// TestQueryTotal: Total counts every matching document the filter admits,
// not only the hits returned, and is the same however the limit is set.
func TestQueryTotal(t *testing.T) {
	ix := build([]index.Doc{
		{ID: "w/facts/a", Title: "Alpha", Body: "alpha beta"},
		{ID: "w/facts/b", Title: "B", Body: "beta gamma"},
		{ID: "w/decisions/c", Title: "C", Body: "gamma"},
		{ID: "w/decisions/d", Title: "D", Body: "delta"},
	})
	decisions := func(id string) bool { return strings.HasPrefix(id, "w/decisions/") }
	tests := []struct {
		q      string
		opt    index.Options
		hits   int
		total  int
		filter bool
	}{
		{"beta", index.Options{}, 2, 2, false},
		{"beta gamma", index.Options{Limit: 1}, 1, 3, false},
		{"beta gamma", index.Options{Limit: 10}, 3, 3, false},
		{"beta gamma", index.Options{Limit: 1}, 1, 1, true},
		{"alpha delta", index.Options{}, 2, 2, false},
		{"nothing", index.Options{}, 0, 0, false},
		{"the", index.Options{}, 0, 0, false},
	}
	for _, tt := range tests {
		opt := tt.opt
		if tt.filter {
			opt.Filter = decisions
		}
		r := ix.Query(tt.q, opt)
		if len(r.Hits) != tt.hits || r.Total != tt.total {
			t.Errorf("Query(%q, limit %d, filter %v) = %d hits, total %d; want %d, %d", tt.q, opt.Limit, tt.filter, len(r.Hits), r.Total, tt.hits, tt.total)
		}
		if !slices.EqualFunc(r.Hits, ix.Search(tt.q, opt), func(a, b index.Hit) bool { return a.ID == b.ID && a.Score == b.Score }) {
			t.Errorf("Query(%q) hits differ from Search", tt.q)
		}
	}
	ix.Delete("w/facts/b")
	if r := ix.Query("beta gamma", index.Options{Limit: 1}); r.Total != 2 {
		t.Errorf("after a delete: total %d, want 2", r.Total)
	}
}

// TestScoreEqualsSearch: scoring named documents gives the very bits,
// terms and offsets Search gives them, with local and global statistics.
func TestScoreEqualsSearch(t *testing.T) {
	notes := corpus.Notes(11, 600)
	ix, other := index.New(), index.New()
	for i, n := range notes {
		d := index.Doc{ID: n.ID("w"), Title: n.Title, Body: n.Body}
		if i%3 == 0 {
			other.Put(d)
		} else {
			ix.Put(d)
		}
	}
	for i := 0; i < len(notes); i += 9 { // replaces and deletes leave tombstones
		if i%3 != 0 {
			ix.Delete(notes[i].ID("w"))
		}
	}
	compared := 0
	for _, q := range append(corpus.Queries(11, 2, 40), corpus.Queries(11, 4, 40)...) {
		var global search.Stats
		global.Add(ix.Stats(q))
		global.Add(other.Stats(q))
		for _, opt := range []index.Options{{Limit: 20}, {Limit: 20, Stats: &global}} {
			want := ix.Search(q, opt)
			ids := make([]string, len(want))
			for i, h := range want {
				ids[len(want)-1-i] = h.ID // reversed: Score keeps the given order
			}
			got := ix.Score(q, append(ids, "w/facts/missing"), opt)
			slices.Reverse(got)
			if len(got) != len(want) {
				t.Fatalf("%q: Score gave %d hits, Search %d", q, len(got), len(want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.Score != w.Score || g.Offset != w.Offset || !slices.Equal(g.Terms, w.Terms) {
					t.Fatalf("%q: Score %+v, Search %+v", q, g, w)
				}
				compared++
			}
		}
	}
	if compared < 500 {
		t.Fatalf("only %d hits compared", compared)
	}
}

// TestSaveLoadRoundTrip: a loaded index answers exactly like the saved one,
// tombstones and all, and keeps working under updates.
func TestSaveLoadRoundTrip(t *testing.T) {
	notes := corpus.Notes(5, 500)
	ix := index.NewWithConfig(index.Config{TitleBoost: 3})
	for _, n := range notes {
		ix.Put(index.Doc{ID: n.ID("w"), Title: n.Title, Body: n.Body})
	}
	for i := 0; i < 40; i++ {
		ix.Delete(notes[i*3].ID("w"))
	}
	ix.Put(index.Doc{ID: notes[1].ID("w"), Title: "Replaced", Body: notes[2].Body})
	var buf bytes.Buffer
	if err := ix.Save(&buf); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("trailing data that Load must not read")
	br := bufio.NewReader(&buf)
	got, err := index.Load(br)
	if err != nil {
		t.Fatal(err)
	}
	if rest, _ := br.ReadString(0); rest != "trailing data that Load must not read" {
		t.Fatalf("Load read past the index: left %q", rest)
	}
	if got.Len() != ix.Len() || got.TitleBoost() != 3 {
		t.Fatalf("loaded %d docs boost %d, want %d boost 3", got.Len(), got.TitleBoost(), ix.Len())
	}
	queries := append(corpus.Queries(5, 1, 30), corpus.Queries(5, 3, 30)...)
	check := func(stage string) {
		for _, q := range queries {
			a, b := ix.Query(q, index.Options{Limit: 15}), got.Query(q, index.Options{Limit: 15})
			if a.Total != b.Total || !slices.EqualFunc(a.Hits, b.Hits, func(x, y index.Hit) bool {
				return x.ID == y.ID && x.Score == y.Score && x.Offset == y.Offset && slices.Equal(x.Terms, y.Terms)
			}) {
				t.Fatalf("%s %q: loaded index answers differently", stage, q)
			}
			if sa, sb := ix.Stats(q), got.Stats(q); sa.Docs != sb.Docs || sa.TotalLength != sb.TotalLength || !maps.Equal(sa.DocFreq, sb.DocFreq) {
				t.Fatalf("%s %q: stats %+v vs %+v", stage, q, sa, sb)
			}
		}
	}
	check("loaded")
	for i := 0; i < 300; i++ { // enough deletes to compact both
		id := notes[100+i%400].ID("w")
		ix.Delete(id)
		got.Delete(id)
	}
	check("after deletes")
}

// TestLoadRejectsCorruption: every truncation and many single-byte changes
// of a saved index fail with ErrCorrupt (or load an index that still
// satisfies its invariants); none panics.
func TestLoadRejectsCorruption(t *testing.T) {
	ix := build(corpus.Generate(2, 30))
	ix.Delete(corpus.Generate(2, 1)[0].ID)
	var buf bytes.Buffer
	if err := ix.Save(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for n := 0; n < len(data); n += 1 + n/50 {
		if _, err := index.Load(bufio.NewReader(bytes.NewReader(data[:n]))); !errors.Is(err, index.ErrCorrupt) {
			t.Fatalf("truncated at %d of %d: %v, want ErrCorrupt", n, len(data), err)
		}
	}
	bad := slices.Clone(data)
	bad[0] ^= 1
	if _, err := index.Load(bufio.NewReader(bytes.NewReader(bad))); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("bad magic: %v", err)
	}
	for i := 8; i < len(data); i += 1 + len(data)/400 {
		bad := slices.Clone(data)
		bad[i] ^= 0x5a
		_, _ = index.Load(bufio.NewReader(bytes.NewReader(bad))) // must not panic
	}
}

func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	if err := build(corpus.Generate(3, 5)).Save(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("BSIDX\x00\x00\x01\x01\x00\x00\x00\x02\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := index.Load(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		// A loaded index must be usable.
		ix.Search("a b c", index.Options{})
		ix.Put(index.Doc{ID: "w/facts/new", Title: "t", Body: "a b c"})
		for _, h := range ix.Search("a b c", index.Options{}) {
			ix.Delete(h.ID)
		}
	})
}
