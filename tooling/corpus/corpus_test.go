package corpus_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// hashNotes is a digest of every field of every note.
func hashNotes(notes []corpus.Note) string {
	h := sha256.New()
	for _, n := range notes {
		fmt.Fprintf(h, "%q %q %q %q\n", n.Hall, n.Slug, n.Title, n.Body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashStrings(ss []string) string {
	h := sha256.Sum256([]byte(strings.Join(ss, "\n")))
	return hex.EncodeToString(h[:])
}

func TestDeterministic(t *testing.T) {
	a, b := corpus.Notes(42, 300), corpus.Notes(42, 300)
	if hashNotes(a) != hashNotes(b) {
		t.Fatal("same seed produced different notes")
	}
	if hashNotes(a) == hashNotes(corpus.Notes(43, 300)) {
		t.Fatal("different seeds produced identical notes")
	}
	if hashNotes(corpus.Notes(42, 100)) != hashNotes(a[:100]) {
		t.Fatal("Notes(seed, 100) is not a prefix of Notes(seed, 300)")
	}
	for _, terms := range []int{1, 2, 4} {
		first, again := corpus.Queries(42, terms, 50), corpus.Queries(42, terms, 50)
		if hashStrings(first) != hashStrings(again) {
			t.Fatalf("same seed produced different %d-term queries", terms)
		}
	}
	first, again := corpus.Vocabulary(42), corpus.Vocabulary(42)
	if hashStrings(first) != hashStrings(again) {
		t.Fatal("same seed produced a different vocabulary")
	}
}

// TestGolden pins the output of seed 1 so that an accidental change of the
// generator (which would silently change every published benchmark figure)
// fails. If the model is changed on purpose, update the hashes and rerun the
// benchmarks.
func TestGolden(t *testing.T) {
	const (
		wantNotes   = "0f2d657d068faa3a4d120cfd0ed3d8a9d0f74d967f3688c1d93d15141d311191"
		wantQueries = "e5f039a2d9afd112a256e27c7933e3ad82140747ddc4eeaeffdcd923f5511e60"
	)
	if got := hashNotes(corpus.Notes(1, 200)); got != wantNotes {
		t.Errorf("Notes(1, 200) hash %s, want %s", got, wantNotes)
	}
	if got := hashStrings(corpus.Queries(1, 2, 100)); got != wantQueries {
		t.Errorf("Queries(1, 2, 100) hash %s, want %s", got, wantQueries)
	}
}

func TestNotesShape(t *testing.T) {
	const n = 2000
	notes := corpus.Notes(9, n)
	halls := map[string]int{}
	slugs := map[string]bool{}
	var words []int
	for _, note := range notes {
		halls[note.Hall]++
		if slugs[note.Slug] {
			t.Fatalf("duplicate slug %q", note.Slug)
		}
		slugs[note.Slug] = true
		if note.Slug != strings.ToLower(note.Slug) || strings.ContainsAny(note.Slug, " /.") {
			t.Fatalf("slug %q is not a lower-case file name", note.Slug)
		}
		if tw := len(strings.Fields(note.Title)); tw < 3 || tw > 10 {
			t.Fatalf("title %q has %d words", note.Title, tw)
		}
		words = append(words, len(strings.Fields(note.Body)))
	}
	if !slices.Equal(slices.Sorted(func(yield func(string) bool) {
		for h := range halls {
			if !yield(h) {
				return
			}
		}
	}), slices.Sorted(slices.Values(corpus.Halls()))) {
		t.Fatalf("halls used %v, want all of %v", halls, corpus.Halls())
	}
	for _, h := range corpus.Halls() {
		if halls[h] < n/20 {
			t.Errorf("hall %s has only %d of %d notes", h, halls[h], n)
		}
	}
	slices.Sort(words)
	median, longest := words[n/2], words[n-1]
	// Body word counts include list and heading markers; allow some slack.
	if median < 150 || median > 400 {
		t.Errorf("median body length %d words, want 150–400", median)
	}
	if longest < 800 || longest > 3300 {
		t.Errorf("longest body %d words, want a tail to about 3,000", longest)
	}
}

// TestZipfian checks word frequencies fall off like a power law: the top
// words dominate and rank × frequency stays within an order of magnitude.
func TestZipfian(t *testing.T) {
	counts := map[string]int{}
	total := 0
	for _, d := range corpus.Generate(5, 1000) {
		for _, w := range strings.FieldsFunc(strings.ToLower(d.Body), func(r rune) bool { return r < 'a' || r > 'z' }) {
			counts[w]++
			total++
		}
	}
	freqs := make([]int, 0, len(counts))
	for _, c := range counts {
		freqs = append(freqs, c)
	}
	slices.Sort(freqs)
	slices.Reverse(freqs)
	if len(freqs) < 5000 {
		t.Fatalf("only %d distinct words in 1000 notes", len(freqs))
	}
	// Zipf: f(r) ∝ 1/r^s, so log f falls roughly linearly in log r.
	slope := (math.Log(float64(freqs[999])) - math.Log(float64(freqs[9]))) / (math.Log(1000) - math.Log(10))
	if slope > -0.7 || slope < -1.5 {
		t.Errorf("log-log slope between ranks 10 and 1000 is %.2f, want about -1", slope)
	}
}

func TestQueries(t *testing.T) {
	vocab := corpus.Vocabulary(4)
	rank := map[string]int{}
	for i, w := range vocab {
		rank[w] = i
	}
	for _, terms := range []int{1, 2, 4} {
		qs := corpus.Queries(4, terms, 400)
		if len(qs) != 400 {
			t.Fatalf("got %d queries", len(qs))
		}
		top, tail := 0, 0
		for _, q := range qs {
			ws := strings.Fields(q)
			if len(ws) != terms {
				t.Fatalf("query %q has %d words, want %d", q, len(ws), terms)
			}
			if got := search.Tokenize(q); len(got) != terms {
				t.Fatalf("query %q tokenizes to %q: stop words or duplicates", q, got)
			}
			for _, w := range ws {
				r, ok := rank[w]
				if !ok {
					t.Fatalf("query word %q is not in the vocabulary", w)
				}
				if r < 1000 {
					top++
				} else if r > 5000 {
					tail++
				}
			}
		}
		if n := 400 * terms; top < n/5 || tail < n/10 {
			t.Errorf("%d-term queries: %d of %d words in the top 1000 ranks, %d beyond rank 5000; want a mix", terms, top, n, tail)
		}
	}
}

func TestDocs(t *testing.T) {
	notes := corpus.Notes(2, 3)
	docs := corpus.Docs("payments", notes)
	for i, d := range docs {
		want := "payments/" + notes[i].Hall + "/" + notes[i].Slug
		if d.ID != want || d.Title != notes[i].Title || d.Body != notes[i].Body {
			t.Fatalf("doc %d = %+v, want id %s", i, d, want)
		}
	}
	if got := corpus.TextBytes(docs); got != int64(len(docs[0].Title+docs[0].Body+docs[1].Title+docs[1].Body+docs[2].Title+docs[2].Body)) {
		t.Fatalf("TextBytes = %d", got)
	}
}

// TestHeavySizes: the heavy-tailed model at the size of the acceptance
// benchmark (20,000 notes) has the shape the issue measured on a real brain:
// a median of a few kilobytes, a p99 of tens, some notes of megabytes, and
// at least 70 MB in all. Only the sizes are drawn, so this is cheap.
func TestHeavySizes(t *testing.T) {
	sizes := corpus.HeavySizes(1, 20000)
	if !slices.Equal(sizes[:500], corpus.HeavySizes(1, 500)) {
		t.Fatal("HeavySizes(1, 500) is not a prefix of HeavySizes(1, 20000)")
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	sorted := slices.Sorted(slices.Values(sizes))
	median, p99, largest := sorted[len(sorted)/2], sorted[len(sorted)*99/100], sorted[len(sorted)-1]
	t.Logf("20,000 notes: %.1f MB, median %d B, p99 %d B, largest %d B", float64(total)/1e6, median, p99, largest)
	if total < 70e6 {
		t.Errorf("total %d bytes, want at least 70 MB", total)
	}
	if median < 2000 || median > 3000 {
		t.Errorf("median %d bytes, want 2–3 KB", median)
	}
	if p99 < 15000 || p99 > 40000 {
		t.Errorf("p99 %d bytes, want 15–40 KB", p99)
	}
	if largest < 1<<20 {
		t.Errorf("largest %d bytes, want notes of megabytes", largest)
	}
	if sorted[0] < 200 {
		t.Errorf("smallest %d bytes", sorted[0])
	}
}

// TestHeavyNotes: bodies have their drawn size (up to a sentence more), the
// generator is deterministic and prefix-stable, and everything but the body
// length follows the Notes model.
func TestHeavyNotes(t *testing.T) {
	const n = 300
	notes := corpus.HeavyNotes(3, n)
	sizes := corpus.HeavySizes(3, n)
	if hashNotes(notes) != hashNotes(corpus.HeavyNotes(3, n)) || hashNotes(notes[:50]) != hashNotes(corpus.HeavyNotes(3, 50)) {
		t.Fatal("HeavyNotes is not deterministic or not prefix-stable")
	}
	for i, note := range notes {
		if got := len(note.Body); got < sizes[i]-4 || got > sizes[i]+400 {
			t.Fatalf("note %d body %d bytes, drawn %d", i, got, sizes[i])
		}
		if tw := len(strings.Fields(note.Title)); tw < 3 || tw > 10 {
			t.Fatalf("title %q has %d words", note.Title, tw)
		}
	}
	big := corpus.HeavyNotes(1, 1838) // seed 1 draws a 1.4 MB note at index 1837
	if got := len(big[1837].Body); got < 1<<20 {
		t.Errorf("note 1837 of seed 1 has %d bytes, want the 1.4 MB tail note", got)
	}
}

// TestHeavyGolden pins HeavyNotes(1, 100) like TestGolden pins Notes.
func TestHeavyGolden(t *testing.T) {
	const want = "58de8d865f272034716f30ed8b7df3085ffe50e57f19a77d15490810959a1173"
	if got := hashNotes(corpus.HeavyNotes(1, 100)); got != want {
		t.Errorf("HeavyNotes(1, 100) hash %s, want %s", got, want)
	}
}
