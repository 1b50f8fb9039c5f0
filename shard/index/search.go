package index

import (
	"math"
	"slices"
	"strings"
)

// DefaultLimit is the number of hits Search returns when Options.Limit <= 0.
const DefaultLimit = 10

// MaxQueryTerms is the number of distinct query terms Search scores; later
// terms are ignored.
const MaxQueryTerms = 64

// scratch holds per-search accumulators indexed by document ordinal. Only
// the entries listed in touched are non-zero between uses.
type scratch struct {
	scores  []float64
	masks   []uint64 // bit i: query term i occurs in the document
	touched []uint32
	heap    []cand
}

// cand is a top-k candidate.
type cand struct {
	score float64
	ord   uint32
	mask  uint64
}

// queryTerms returns the distinct terms of query in order of first
// appearance, at most MaxQueryTerms of them.
func queryTerms(query string) []string {
	var terms []string
	forEachToken(query, func(tok string, _, _ int) {
		if len(terms) < MaxQueryTerms && !slices.Contains(terms, tok) {
			terms = append(terms, tok)
		}
	})
	return terms
}

// Search returns the best hits for query (its distinct terms combined with
// OR), sorted by score descending, then ID ascending.
func (ix *Index) Search(query string, opt Options) []Hit {
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()

	n, total := ix.live, ix.totalLen
	global := opt.Stats != nil && opt.Stats.Docs > 0
	if global {
		n, total = opt.Stats.Docs, opt.Stats.TotalLength
	}
	if n <= 0 {
		return nil
	}
	avgdl := float64(total) / float64(n)
	if avgdl <= 0 {
		avgdl = 1
	}
	// denominator = tf + k1×(1−b) + (k1×b/avgdl)×dl
	kb := K1 * (1 - B)
	kl := K1 * B / avgdl
	boost := float64(ix.boost)

	s, _ := ix.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	if len(s.scores) < len(ix.docs) {
		s.scores = make([]float64, len(ix.docs)+len(ix.docs)/8)
		s.masks = make([]uint64, len(s.scores))
	}
	scores, masks, lens := s.scores, s.masks, ix.lens
	touched := s.touched[:0]

	for i, t := range terms {
		id, ok := ix.dict[t]
		if !ok {
			continue
		}
		tm := &ix.terms[id]
		if tm.df == 0 {
			continue
		}
		df := tm.df
		if global {
			if g, ok := opt.Stats.DocFreq[t]; ok {
				df = g
			}
		}
		df = min(max(df, 0), n)
		idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
		bit := uint64(1) << i
		tfs := tm.tfs[:len(tm.docs)]
		for j, d := range tm.docs {
			dl := lens[d]
			if dl == deadLen {
				continue
			}
			p := tfs[j]
			tf := float64(p&MaxBodyTF) + boost*float64(p>>titleShift)
			sc := idf * tf * (K1 + 1) / (tf + kb + kl*float64(dl))
			if masks[d] == 0 {
				touched = append(touched, d)
			}
			scores[d] += sc
			masks[d] |= bit
		}
	}

	h := s.heap[:0]
	for _, ord := range touched {
		c := cand{score: scores[ord], ord: ord, mask: masks[ord]}
		scores[ord], masks[ord] = 0, 0
		if len(h) == limit && !ix.better(c, h[0]) {
			continue
		}
		if opt.Filter != nil && !opt.Filter(ix.docs[ord].id) {
			continue
		}
		if len(h) < limit {
			h = append(h, c)
			ix.up(h, len(h)-1)
		} else {
			h[0] = c
			ix.down(h, 0)
		}
	}

	slices.SortFunc(h, func(a, b cand) int {
		if ix.better(a, b) {
			return -1
		}
		return 1
	})
	hits := make([]Hit, len(h))
	for i, c := range h {
		ht := Hit{ID: ix.docs[c.ord].id, Score: c.score}
		for j, t := range terms {
			if c.mask&(1<<j) != 0 {
				ht.Terms = append(ht.Terms, t)
			}
		}
		hits[i] = ht
	}

	s.touched, s.heap = touched[:0], h[:0]
	ix.scratch.Put(s)
	return hits
}

// better reports whether a ranks before b: higher score, then lower ID.
func (ix *Index) better(a, b cand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return strings.Compare(ix.docs[a.ord].id, ix.docs[b.ord].id) < 0
}

// up and down maintain h as a heap whose root is the worst candidate.
func (ix *Index) up(h []cand, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !ix.better(h[p], h[i]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (ix *Index) down(h []cand, i int) {
	for {
		w := i
		l, r := 2*i+1, 2*i+2
		if l < len(h) && ix.better(h[w], h[l]) {
			w = l
		}
		if r < len(h) && ix.better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}
