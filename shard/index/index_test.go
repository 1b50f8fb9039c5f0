package index_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// build returns an index holding docs.
// idfOneOfTwo is BM25's idf, log(1 + (N - df + 0.5) / (df + 0.5)), of a
// term in one document of two.
func idfOneOfTwo() float64 {
	n, df := 2.0, 1.0
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

func build(docs []index.Doc) *index.Index {
	ix := index.New()
	for _, d := range docs {
		ix.Put(d)
	}
	return ix
}

func ids(hits []index.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// sameHits fails unless got and want have the same IDs, order and terms and
// scores within 1e-9.
func sameHits(t *testing.T, ctx string, got, want []index.Hit) {
	t.Helper()
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("%s: ranking differs:\n got %v\nwant %v", ctx, ids(got), ids(want))
	}
	for i := range got {
		if math.Abs(got[i].Score-want[i].Score) > 1e-9 {
			t.Fatalf("%s: %s scored %.12f, want %.12f", ctx, got[i].ID, got[i].Score, want[i].Score)
		}
		if !slices.Equal(got[i].Terms, want[i].Terms) {
			t.Fatalf("%s: %s terms %q, want %q", ctx, got[i].ID, got[i].Terms, want[i].Terms)
		}
	}
}

func TestScoreMatchesHandComputedBM25(t *testing.T) {
	ix := build([]index.Doc{
		{ID: "w/facts/a", Title: "Alpha", Body: "alpha beta"},               // len 2 + 2×1 = 4
		{ID: "w/facts/b", Title: "Gamma", Body: "alpha, alpha gamma delta"}, // len 4 + 2×1 = 6
		{ID: "w/facts/c", Title: "Delta", Body: "The beta."},                // len 1 + 2×1 = 3 ("the" is a stop word)
	})
	// N = 3, total length 13, avgdl = 13/3, k1 = 1.2, b = 0.75.
	avgdl := 13.0 / 3
	idfAlpha := math.Log(1 + (3-2+0.5)/(2+0.5)) // df(alpha) = 2
	idfDelta := math.Log(1 + (3-2+0.5)/(2+0.5)) // df(delta) = 2
	bm25 := func(idf, tf, dl float64) float64 {
		return idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avgdl))
	}
	tests := []struct {
		query string
		want  []index.Hit
	}{
		{"alpha", []index.Hit{
			// a: body tf 1 + 2 × title tf 1 = 3, dl 4; b: body tf 2, dl 6.
			{ID: "w/facts/a", Score: bm25(idfAlpha, 3, 4), Terms: []string{"alpha"}},
			{ID: "w/facts/b", Score: bm25(idfAlpha, 2, 6), Terms: []string{"alpha"}},
		}},
		{"DELTA alpha delta", []index.Hit{
			{ID: "w/facts/b", Score: bm25(idfDelta, 1, 6) + bm25(idfAlpha, 2, 6), Terms: []string{"delta", "alpha"}},
			{ID: "w/facts/c", Score: bm25(idfDelta, 2, 3), Terms: []string{"delta"}},
			{ID: "w/facts/a", Score: bm25(idfAlpha, 3, 4), Terms: []string{"delta", "alpha"}[1:]},
		}},
	}
	for _, tt := range tests {
		got := ix.Search(tt.query, index.Options{})
		slices.SortFunc(tt.want, func(a, b index.Hit) int {
			if a.Score != b.Score {
				if a.Score > b.Score {
					return -1
				}
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		sameHits(t, tt.query, got, tt.want)
	}
	st := ix.Stats("alpha zeta")
	want := search.Stats{Docs: 3, TotalLength: 13, DocFreq: map[string]int64{"alpha": 2, "zeta": 0}}
	if st.Docs != want.Docs || st.TotalLength != want.TotalLength || !maps.Equal(st.DocFreq, want.DocFreq) {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}

func TestTitleBoostConfig(t *testing.T) {
	doc := index.Doc{ID: "w/facts/x", Title: "alpha", Body: "beta alpha"}
	other := index.Doc{ID: "w/facts/y", Title: "gamma", Body: "gamma"}
	for _, boost := range []int{1, 2, 5} {
		ix := index.NewWithConfig(index.Config{TitleBoost: boost})
		ix.Put(doc)
		ix.Put(other)
		if ix.TitleBoost() != boost {
			t.Fatalf("TitleBoost() = %d, want %d", ix.TitleBoost(), boost)
		}
		st := ix.Stats("alpha")
		if wantLen := int64(2 + boost + 1 + boost); st.TotalLength != wantLen {
			t.Errorf("boost %d: TotalLength %d, want %d", boost, st.TotalLength, wantLen)
		}
		tf, dl, avgdl := 1+float64(boost), 2+float64(boost), float64(2+boost+1+boost)/2
		want := idfOneOfTwo() * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avgdl))
		if got := ix.Search("alpha", index.Options{}); len(got) != 1 || math.Abs(got[0].Score-want) > 1e-12 {
			t.Errorf("boost %d: hits %+v, want score %v", boost, got, want)
		}
	}
	if got := index.NewWithConfig(index.Config{TitleBoost: -3}).TitleBoost(); got != index.DefaultTitleBoost {
		t.Errorf("negative boost gave %d, want default %d", got, index.DefaultTitleBoost)
	}
}

// TestGlobalStatsEqualUnion proves the global statistics contract: three
// wings searched with their summed Stats score exactly like one index over
// their union, including after replaces and deletes.
func TestGlobalStatsEqualUnion(t *testing.T) {
	wings := []string{"alpha", "beta", "gamma"}
	union := index.New()
	parts := make([]*index.Index, len(wings))
	for i := range parts {
		parts[i] = index.New()
	}
	notes := corpus.Notes(7, 900)
	for i, n := range notes {
		w := i % len(wings)
		d := index.Doc{ID: n.ID(wings[w]), Title: n.Title, Body: n.Body}
		parts[w].Put(d)
		union.Put(d)
	}
	// Mutate both sides identically: replace some notes, delete others.
	for i := 0; i < len(notes); i += 7 {
		w := i % len(wings)
		id := notes[i].ID(wings[w])
		if i%2 == 0 {
			d := index.Doc{ID: id, Title: notes[(i+1)%len(notes)].Title, Body: notes[(i+3)%len(notes)].Body}
			parts[w].Put(d)
			union.Put(d)
		} else {
			parts[w].Delete(id)
			union.Delete(id)
		}
	}

	var queries []string
	for _, terms := range []int{1, 2, 4} {
		queries = append(queries, corpus.Queries(7, terms, 40)...)
	}
	checked := 0
	for _, q := range queries {
		var global search.Stats
		for _, p := range parts {
			global.Add(p.Stats(q))
		}
		if u := union.Stats(q); global.Docs != u.Docs || global.TotalLength != u.TotalLength || !maps.Equal(global.DocFreq, u.DocFreq) {
			t.Fatalf("%q: summed stats %+v, union %+v", q, global, u)
		}
		const limit = 25
		var merged []index.Hit
		for _, p := range parts {
			merged = append(merged, p.Search(q, index.Options{Limit: limit, Stats: &global})...)
		}
		slices.SortFunc(merged, func(a, b index.Hit) int {
			if a.Score != b.Score {
				if a.Score > b.Score {
					return -1
				}
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		merged = merged[:min(limit, len(merged))]
		want := union.Search(q, index.Options{Limit: limit})
		sameHits(t, q, merged, want)
		checked += len(want)

		// Without the global stats the wings' scores differ from the
		// union's: the test above can fail.
		local := parts[0].Search(q, index.Options{Limit: 1})
		if len(local) == 1 {
			for _, h := range want {
				if h.ID == local[0].ID && h.Score == local[0].Score {
					t.Fatalf("%q: local stats gave the union score %v for %s", q, h.Score, h.ID)
				}
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d hits compared; the corpus or queries are too small", checked)
	}
}

// TestMutationsKeepStatsExact applies random puts, replaces and deletes
// (enough to trigger compaction several times) and checks the index against
// one freshly built from the surviving documents.
func TestMutationsKeepStatsExact(t *testing.T) {
	notes := corpus.Notes(3, 400)
	r := rand.New(rand.NewPCG(3, 3))
	ix := index.New()
	model := map[string]index.Doc{}
	queries := corpus.Queries(3, 2, 30)
	check := func(step int) {
		t.Helper()
		docs := slices.Collect(maps.Values(model))
		fresh := build(docs)
		if ix.Len() != len(model) {
			t.Fatalf("step %d: Len %d, want %d", step, ix.Len(), len(model))
		}
		for _, q := range queries {
			got, want := ix.Stats(q), fresh.Stats(q)
			if got.Docs != want.Docs || got.TotalLength != want.TotalLength || !maps.Equal(got.DocFreq, want.DocFreq) {
				t.Fatalf("step %d, %q: stats %+v, want %+v", step, q, got, want)
			}
			sameHits(t, fmt.Sprintf("step %d, %q", step, q), ix.Search(q, index.Options{Limit: 20}), fresh.Search(q, index.Options{Limit: 20}))
		}
	}
	for step := range 3000 {
		id := fmt.Sprintf("w/facts/n%03d", r.IntN(150))
		switch r.IntN(3) {
		case 0, 1:
			n := notes[r.IntN(len(notes))]
			d := index.Doc{ID: id, Title: n.Title, Body: n.Body}
			ix.Put(d)
			model[id] = d
		case 2:
			ix.Delete(id)
			delete(model, id)
		}
		if step%500 == 499 {
			check(step)
		}
	}
	for id := range model {
		ix.Delete(id)
	}
	ix.Delete("w/facts/never-existed")
	if st := ix.Stats(queries[0]); ix.Len() != 0 || st.Docs != 0 || st.TotalLength != 0 {
		t.Fatalf("after deleting everything: Len %d, stats %+v", ix.Len(), st)
	}
	for _, df := range ix.Stats(strings.Join(queries, " ")).DocFreq {
		if df != 0 {
			t.Fatalf("after deleting everything a df is %d", df)
		}
	}
	if hits := ix.Search(queries[0], index.Options{}); hits != nil {
		t.Fatalf("empty index returned %v", hits)
	}
}

func TestReplaceIsReadYourWrites(t *testing.T) {
	ix := index.New()
	ix.Put(index.Doc{ID: "w/decisions/x", Title: "Old", Body: "kiwi"})
	ix.Put(index.Doc{ID: "w/decisions/x", Title: "New", Body: "mango"})
	if got := ix.Search("kiwi", index.Options{}); len(got) != 0 {
		t.Fatalf("old content still found: %v", got)
	}
	if got := ix.Search("mango", index.Options{}); len(got) != 1 || got[0].ID != "w/decisions/x" {
		t.Fatalf("new content not found: %v", got)
	}
	if ix.Len() != 1 {
		t.Fatalf("Len = %d after a replace, want 1", ix.Len())
	}
}

func TestFilterAndLimit(t *testing.T) {
	docs := corpus.Generate(11, 600)
	ix := build(docs)
	queries := corpus.Queries(11, 1, 20)
	for _, q := range queries {
		all := ix.Search(q, index.Options{Limit: len(docs)})
		for _, tt := range []struct {
			name   string
			limit  int
			filter func(string) bool
			want   []index.Hit
		}{
			{"default limit", 0, nil, all[:min(10, len(all))]},
			{"limit 3", 3, nil, all[:min(3, len(all))]},
			{"limit beyond hits", len(docs) + 5, nil, all},
			{"hall filter", 5, func(id string) bool { return strings.HasPrefix(id, "bench/decisions/") }, nil},
			{"reject all", 5, func(string) bool { return false }, nil},
		} {
			want := tt.want
			if tt.filter != nil {
				want = nil
				for _, h := range all {
					if tt.filter(h.ID) && len(want) < tt.limit {
						want = append(want, h)
					}
				}
			}
			got := ix.Search(q, index.Options{Limit: tt.limit, Filter: tt.filter})
			sameHits(t, q+" "+tt.name, got, want)
		}
	}
}

func TestSearchEdgeCases(t *testing.T) {
	ix := build([]index.Doc{
		{ID: "w/facts/b", Body: "same words"},
		{ID: "w/facts/a", Body: "same words"},
		{ID: "w/facts/c", Body: "same words"},
	})
	// Equal scores rank by ID.
	if got := ids(ix.Search("words", index.Options{})); !slices.Equal(got, []string{"w/facts/a", "w/facts/b", "w/facts/c"}) {
		t.Errorf("ties ordered %v, want by ID", got)
	}
	for _, q := range []string{"", "   ", "the and of", "unknownterm", "🚀"} {
		if got := ix.Search(q, index.Options{}); len(got) != 0 {
			t.Errorf("Search(%q) = %v, want nothing", q, got)
		}
	}
	// A Stats with Docs <= 0 means the index's own.
	own := ix.Search("words", index.Options{})
	sameHits(t, "zero stats", ix.Search("words", index.Options{Stats: &search.Stats{}}), own)
	// Inconsistent global stats (df > N) are clamped, never NaN.
	bad := &search.Stats{Docs: 1, TotalLength: 1, DocFreq: map[string]int64{"words": 50}}
	for _, h := range ix.Search("words", index.Options{Stats: bad}) {
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
			t.Errorf("bad stats gave score %v", h.Score)
		}
	}
}

// TestConcurrentUse runs writers and readers together (meaningful under
// -race) and checks every writer reads its own write.
func TestConcurrentUse(t *testing.T) {
	ix := build(corpus.Generate(5, 200))
	queries := corpus.Queries(5, 2, 20)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 3 {
		wg.Go(func() {
			for i := range 150 {
				id := fmt.Sprintf("w/facts/%d-%d", w, i)
				word := fmt.Sprintf("uniq%dx%d", w, i)
				ix.Put(index.Doc{ID: id, Title: "t", Body: word})
				if hits := ix.Search(word, index.Options{}); len(hits) != 1 || hits[0].ID != id {
					errs <- fmt.Errorf("write %s not visible: %v", id, hits)
					return
				}
				if i%2 == 0 {
					ix.Delete(id)
				}
			}
		})
	}
	for r := range 3 {
		wg.Go(func() {
			for i := range 200 {
				q := queries[(r+i)%len(queries)]
				var st search.Stats
				st.Add(ix.Stats(q))
				ix.Search(q, index.Options{Stats: &st, Filter: func(id string) bool { return !strings.HasSuffix(id, "0") }})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, want := ix.Len(), 200+3*75; got != want {
		t.Errorf("Len = %d, want %d", got, want)
	}
}

// TestTermFrequencySaturates checks per-field term frequencies saturate at
// MaxBodyTF and MaxTitleTF while lengths keep counting every token.
func TestTermFrequencySaturates(t *testing.T) {
	body := strings.Repeat("kiwi ", index.MaxBodyTF+100)
	title := strings.Repeat("kiwi ", index.MaxTitleTF+5)
	ix := build([]index.Doc{
		{ID: "w/facts/a", Title: title, Body: body},
		{ID: "w/facts/b", Title: "plum", Body: "plum"},
	})
	dl := float64(index.MaxBodyTF+100) + 2*float64(index.MaxTitleTF+5)
	st := ix.Stats("kiwi")
	if want := int64(dl) + 1 + 2; st.TotalLength != want {
		t.Fatalf("TotalLength %d, want %d: lengths must not saturate", st.TotalLength, want)
	}
	avgdl := float64(st.TotalLength) / 2
	tf := float64(index.MaxBodyTF) + 2*float64(index.MaxTitleTF)
	want := idfOneOfTwo() * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avgdl))
	hits := ix.Search("kiwi", index.Options{})
	if len(hits) != 1 || math.Abs(hits[0].Score-want) > 1e-12 {
		t.Fatalf("hits %+v, want one with score %v", hits, want)
	}
}
