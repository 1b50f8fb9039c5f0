package corpus

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
)

// VocabularySize is the number of distinct words the generator draws from.
const VocabularySize = 60000

// Halls returns the five hall names, in a fixed order.
func Halls() []string {
	return []string{"facts", "decisions", "failures", "hypotheses", "sources"}
}

// Note is one generated note: its hall, a slug unique within the corpus, a
// title and a markdown body.
type Note struct {
	Hall, Slug, Title, Body string
}

// ID returns the note id in wing: "<wing>/<hall>/<slug>".
func (n Note) ID(wing string) string { return wing + "/" + n.Hall + "/" + n.Slug }

// Stream numbers keep the vocabulary, notes and queries independent.
const (
	streamVocab   = 1
	streamNotes   = 2
	streamQueries = 3
	streamSizes   = 4
)

// Zipf parameters of word choice.
const (
	zipfS = 1.07
	zipfV = 2
)

// numFunctionWords is the number of English function words at the top of
// the vocabulary.
const numFunctionWords = 30

// Vocabulary returns the seed's vocabulary, most frequent word first.
func Vocabulary(seed int64) []string {
	// The first ranks are function words, most frequent first.
	functionWords := [numFunctionWords]string{
		"the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as",
		"with", "was", "on", "be", "by", "at", "this", "are", "from", "or",
		"an", "but", "not", "we", "which", "have", "has", "when", "if",
	}
	// Syllables are onset + vowel + coda.
	onsets := [...]string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
		"br", "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "qu", "sh", "sp", "st", "th", "tr", ""}
	vowels := [...]string{"a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ea", "ee", "ou", "y"}
	codas := [...]string{"", "", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "rk", "st", "x", "ck"}

	r := rand.New(rand.NewPCG(uint64(seed), streamVocab))
	words := make([]string, 0, VocabularySize)
	seen := make(map[string]bool, VocabularySize)
	for _, w := range functionWords {
		words = append(words, w)
		seen[w] = true
	}
	var b strings.Builder
	for len(words) < VocabularySize {
		rank := len(words)
		lo, hi := 2, 3 // syllables
		switch {
		case rank < 300:
			lo, hi = 1, 1
		case rank < 3000:
			lo, hi = 1, 2
		case rank < 20000:
			lo, hi = 2, 2
		}
		b.Reset()
		for range lo + r.IntN(hi-lo+1) {
			b.WriteString(onsets[r.IntN(len(onsets))])
			b.WriteString(vowels[r.IntN(len(vowels))])
			b.WriteString(codas[r.IntN(len(codas))])
		}
		w := b.String()
		// Synthetic words must not be stop words ("he", "so", …).
		if len(w) < 2 || seen[w] || len(search.Tokenize(w)) != 1 {
			continue
		}
		seen[w] = true
		words = append(words, w)
	}
	return words
}

// Notes returns n notes generated from seed. Notes(seed, n) is a prefix of
// Notes(seed, m) for n <= m.
func Notes(seed int64, n int) []Note {
	g := newGenerator(seed)
	notes := make([]Note, 0, max(n, 0))
	for i := range n {
		notes = append(notes, g.note(i))
	}
	return notes
}

// Parameters of the heavy-tailed size model (see HeavySizes).
const (
	heavyMedianBytes = 2400      // median body size of the log-normal body
	heavySigma       = 0.95      // σ of ln(size)
	heavyMinBytes    = 200       // smallest body
	heavyBodyCap     = 256 << 10 // largest log-normal body
	heavyTailOneIn   = 2000      // one note in this many is a tail note…
	heavyTailMin     = 256 << 10
	heavyTailMax     = 2 << 20 // …of 256 KiB–2 MiB, log-uniform
)

// HeavySizes returns the body sizes in bytes of HeavyNotes(seed, n), without
// generating the notes: log-normal with a median of 2,400 bytes and σ = 0.95
// (clamped to [200 B, 256 KiB]), plus, for one note in 2,000 on average, a
// tail of 256 KiB to 2 MiB drawn log-uniformly. At 20,000 notes that is
// about 75 MB of text with a few notes of megabytes, the shape of a real
// brain of technical documents (median 2.6 KB, p99 29 KB, largest 2 MB).
// HeavySizes(seed, n) is a prefix of HeavySizes(seed, m) for n <= m.
func HeavySizes(seed int64, n int) []int {
	r := rand.New(rand.NewPCG(uint64(seed), streamSizes))
	out := make([]int, 0, max(n, 0))
	for range n {
		tail := r.IntN(heavyTailOneIn) == 0
		u, z := r.Float64(), r.NormFloat64() // both drawn for every note: a stable stream
		var size int
		if tail {
			size = int(heavyTailMin * math.Exp(u*math.Log(float64(heavyTailMax)/heavyTailMin)))
		} else {
			size = int(heavyMedianBytes * math.Exp(heavySigma*z))
			size = min(max(size, heavyMinBytes), heavyBodyCap)
		}
		out = append(out, size)
	}
	return out
}

// HeavyNotes returns n notes generated from seed like Notes, except that
// their bodies follow HeavySizes: each body is at least its drawn size and
// at most one sentence longer. The words, titles, slugs and halls follow
// the same model as Notes (and the same vocabulary and Queries), so the
// two corpora differ only in how long the notes are. HeavyNotes(seed, n)
// is a prefix of HeavyNotes(seed, m) for n <= m.
func HeavyNotes(seed int64, n int) []Note {
	g := newGenerator(seed)
	sizes := HeavySizes(seed, n)
	notes := make([]Note, 0, len(sizes))
	for i, size := range sizes {
		notes = append(notes, g.noteOf(i, size))
	}
	return notes
}

// Docs converts notes of wing to index documents with ids
// "<wing>/<hall>/<slug>".
func Docs(wing string, notes []Note) []index.Doc {
	docs := make([]index.Doc, len(notes))
	for i, n := range notes {
		docs[i] = index.Doc{ID: n.ID(wing), Title: n.Title, Body: n.Body}
	}
	return docs
}

// Generate returns n index documents of the wing "bench" generated from
// seed: Docs("bench", Notes(seed, n)).
func Generate(seed int64, n int) []index.Doc {
	return Docs("bench", Notes(seed, n))
}

// TextBytes is the total size of the titles and bodies of docs, the
// baseline for index memory ratios.
func TextBytes(docs []index.Doc) int64 {
	var n int64
	for _, d := range docs {
		n += int64(len(d.Title) + len(d.Body))
	}
	return n
}

// Queries returns n queries of terms words each (terms is clamped to
// [1, 16]) drawn from seed's vocabulary without stop words: half of the
// words follow the corpus's own Zipf frequencies (popular words), half are
// log-uniform over the ranks (the long tail of specific words). Words within
// a query are distinct.
func Queries(seed int64, terms, n int) []string {
	terms = min(max(terms, 1), 16)
	vocab := Vocabulary(seed)
	r := rand.New(rand.NewPCG(uint64(seed), streamQueries<<8|uint64(terms)))
	z := rand.NewZipf(r, zipfS, zipfV, VocabularySize-1)
	first := numFunctionWords
	logSpan := math.Log(float64(VocabularySize) / float64(first))
	out := make([]string, 0, max(n, 0))
	for range n {
		q := make([]string, 0, terms)
		for len(q) < terms {
			var rank int
			if r.IntN(2) == 0 {
				rank = int(z.Uint64())
			} else {
				rank = int(float64(first) * math.Exp(r.Float64()*logSpan))
			}
			if rank < first || rank >= VocabularySize {
				continue
			}
			w := vocab[rank]
			if !contains(q, w) {
				q = append(q, w)
			}
		}
		out = append(out, strings.Join(q, " "))
	}
	return out
}

func contains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

// generator holds the state of one Notes call.
type generator struct {
	r     *rand.Rand
	z     *rand.Zipf
	vocab []string
	b     strings.Builder
}

func newGenerator(seed int64) *generator {
	r := rand.New(rand.NewPCG(uint64(seed), streamNotes))
	return &generator{
		r:     r,
		z:     rand.NewZipf(r, zipfS, zipfV, VocabularySize-1),
		vocab: Vocabulary(seed),
	}
}

// hall picks a hall with the documented weights.
func (g *generator) hall() string {
	switch p := g.r.IntN(100); {
	case p < 35:
		return "facts"
	case p < 55:
		return "decisions"
	case p < 75:
		return "sources"
	case p < 90:
		return "failures"
	default:
		return "hypotheses"
	}
}

// bodyWords draws a body length in words.
func (g *generator) bodyWords() int {
	if g.r.IntN(100) < 3 {
		return int(800 * math.Exp(g.r.Float64()*math.Log(3000.0/800)))
	}
	w := int(math.Exp(math.Log(240) + 0.5*g.r.NormFloat64()))
	return min(max(w, 40), 3000)
}

func (g *generator) note(i int) Note { return g.noteOf(i, 0) }

// noteOf generates note i; its body has bodyWords() words when size is 0,
// else at least size bytes.
func (g *generator) noteOf(i, size int) Note {
	hall := g.hall()
	// Topic words: mid-frequency ranks, log-uniform in [100, VocabularySize).
	topics := make([]string, 4+g.r.IntN(7))
	for j := range topics {
		rank := int(100 * math.Exp(g.r.Float64()*math.Log(VocabularySize/100.0)))
		topics[j] = g.vocab[min(rank, VocabularySize-1)]
	}
	word := func() string {
		if g.r.IntN(100) < 12 {
			return topics[g.r.IntN(len(topics))]
		}
		return g.vocab[g.z.Uint64()]
	}

	// Title: 3–10 words, mostly topic words.
	tw := make([]string, 3+g.r.IntN(8))
	for j := range tw {
		if g.r.IntN(100) < 60 {
			tw[j] = topics[g.r.IntN(len(topics))]
		} else {
			tw[j] = g.vocab[g.z.Uint64()]
		}
	}
	title := capitalize(strings.Join(tw, " "))
	slug := strings.Join(tw[:min(len(tw), 4)], "-") + "-" + strconv.FormatInt(int64(i), 36)

	// Body.
	b := &g.b
	b.Reset()
	left := math.MaxInt
	if size <= 0 {
		left = g.bodyWords()
	} else {
		b.Grow(size + 256)
	}
	for left > 0 && (size <= 0 || b.Len() < size) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		switch p := g.r.IntN(100); {
		case p < 8 && left > 20: // heading
			b.WriteString("## ")
			n := 2 + g.r.IntN(4)
			b.WriteString(capitalize(g.words(word, n)))
			left -= n
			continue
		case p < 18 && left > 20: // list
			for range 2 + g.r.IntN(4) {
				n := 3 + g.r.IntN(8)
				b.WriteString("- ")
				b.WriteString(g.words(word, n))
				b.WriteString("\n")
				left -= n
			}
			continue
		}
		for s := 3 + g.r.IntN(5); s > 0 && left > 0 && (size <= 0 || b.Len() < size); s-- { // paragraph
			n := min(6+g.r.IntN(15), left)
			sentence := g.words(word, n)
			if n > 8 && g.r.IntN(3) == 0 { // a comma after a clause
				k := strings.IndexByte(sentence[len(sentence)/2:], ' ')
				if k > 0 {
					k += len(sentence) / 2
					sentence = sentence[:k] + "," + sentence[k:]
				}
			}
			b.WriteString(capitalize(sentence))
			b.WriteString(". ")
			left -= n
		}
	}
	return Note{Hall: hall, Slug: slug, Title: title, Body: strings.TrimSpace(b.String()) + "\n"}
}

// words joins n words drawn by next.
func (g *generator) words(next func() string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = next()
	}
	return strings.Join(ws, " ")
}

// capitalize upper-cases the first byte of an ASCII string.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
