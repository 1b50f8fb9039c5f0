package index

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/search"
)

// DefaultLimit is the number of hits Search returns when Options.Limit <= 0.
const DefaultLimit = 10

// ctxEvery is how many postings a ranking scores between two looks at its
// context (QueryTermsContext): tens of microseconds of work.
const ctxEvery = 1 << 13

// scratch holds per-search accumulators indexed by document ordinal. Only
// the entries listed in touched are non-zero between uses.
type scratch struct {
	scores  []float64
	masks   []uint64 // bit i: query term i occurs in the document
	touched []uint32
	heap    []cand
}

// clear zeroes the accumulators a ranking left (one that stopped early).
func (s *scratch) clear() {
	for _, ord := range s.touched {
		s.scores[ord], s.masks[ord] = 0, 0
	}
	s.touched = s.touched[:0]
}

// cand is a top-k candidate.
type cand struct {
	score float64
	ord   uint32
	mask  uint64
}

// Result is the answer of [Index.Query]: the best hits and the number of
// documents that matched at least one query term (and the filter).
type Result struct {
	Hits  []Hit
	Total int
}

// Search returns the best hits for query (its distinct terms combined with
// OR), sorted by score descending, then ID ascending.
func (ix *Index) Search(query string, opt Options) []Hit {
	return ix.Query(query, opt).Hits
}

// scoring holds the BM25 constants of one query.
type scoring struct {
	n, kb, kl, boost float64
	docs             int64
	global           bool
	stats            *search.Stats
}

// scoringLocked derives the constants of a query; ok is false when there is
// nothing to score. Callers hold ix.mu.
func (ix *Index) scoringLocked(opt Options) (sc scoring, ok bool) {
	n, total := ix.live, ix.totalLen
	global := opt.Stats != nil && opt.Stats.Docs > 0
	if global {
		n, total = opt.Stats.Docs, opt.Stats.TotalLength
	}
	if n <= 0 {
		return scoring{}, false
	}
	avgdl := float64(total) / float64(n)
	if avgdl <= 0 {
		avgdl = 1
	}
	// denominator = tf + k1×(1−b) + (k1×b/avgdl)×dl
	return scoring{n: float64(n), docs: n, kb: K1 * (1 - B), kl: K1 * B / avgdl, boost: float64(ix.boost), global: global, stats: opt.Stats}, true
}

// idf returns the inverse document frequency of term t with local document
// frequency df, using the global statistics when given.
func (sc *scoring) idf(t string, df int64) float64 {
	if sc.global {
		if g, ok := sc.stats.DocFreq[t]; ok {
			df = g
		}
	}
	df = min(max(df, 0), sc.docs)
	return math.Log(1 + (sc.n-float64(df)+0.5)/(float64(df)+0.5))
}

// termScore is one term's BM25 contribution. Search and Score both use it,
// so that a document scores the same bits either way.
func (sc *scoring) termScore(idf float64, p uint16, dl uint32) float64 {
	tf := float64(p&MaxBodyTF) + sc.boost*float64(p>>titleShift)
	return idf * tf * (K1 + 1) / (tf + sc.kb + sc.kl*float64(dl))
}

// Query is Search that also counts the matching documents. Total counts
// every live document holding at least one query term and admitted by
// Options.Filter, not only the returned hits.
func (ix *Index) Query(query string, opt Options) Result {
	return ix.QueryTerms(search.Terms(query), opt)
}

// QueryTerms is Query of terms already tokenized (search.Terms).
func (ix *Index) QueryTerms(terms []string, opt Options) Result {
	r, _ := ix.QueryTermsContext(context.Background(), terms, opt)
	return r
}

// QueryTermsContext is QueryTerms that stops with ctx's error once ctx
// ends: it looks at ctx every ctxEvery postings it scores, so a ranking
// over many notes ends soon after its caller went away.
func (ix *Index) QueryTermsContext(ctx context.Context, terms []string, opt Options) (Result, error) {
	if len(terms) == 0 {
		return Result{}, nil
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()

	sc, ok := ix.scoringLocked(opt)
	if !ok {
		return Result{}, nil
	}

	s, _ := ix.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	if len(s.scores) < len(ix.docs) {
		s.scores = make([]float64, len(ix.docs)+len(ix.docs)/8)
		s.masks = make([]uint64, len(s.scores))
	}
	tids := make([]int32, len(terms)) // dictionary id of each query term, -1 if none
	if err := ix.accumulateLocked(ctx, s, terms, tids, sc); err != nil {
		s.clear()
		ix.scratch.Put(s)
		return Result{}, fmt.Errorf("index: ranking stopped: %w", err)
	}
	h, total := ix.topLocked(s, limit, opt.Filter)
	hits := make([]Hit, len(h))
	for i, c := range h {
		hits[i] = ix.hitLocked(c.ord, c.score, c.mask, terms, tids)
	}
	s.heap = h[:0]
	ix.scratch.Put(s)
	return Result{Hits: hits, Total: total}, nil
}

// accumulateLocked adds each query term's score to the documents holding
// it (s.scores, s.masks, s.touched) and sets tids[i] to the dictionary id
// of terms[i], -1 for none. It returns ctx's error, with the accumulators
// partly filled, when ctx ended (looked at every ctxEvery postings).
// Callers hold ix.mu.
func (ix *Index) accumulateLocked(ctx context.Context, s *scratch, terms []string, tids []int32, sc scoring) error {
	scores, masks, lens := s.scores, s.masks, ix.lens
	touched := s.touched[:0]

	for i, t := range terms {
		tids[i] = -1
		id, ok := ix.dict[t]
		if !ok {
			continue
		}
		tm := &ix.terms[id]
		if tm.df == 0 {
			continue
		}
		tids[i] = int32(id)
		idf := sc.idf(t, tm.df)
		bit := uint64(1) << i
		for lo := 0; lo < len(tm.docs); lo += ctxEvery {
			if err := ctx.Err(); err != nil {
				s.touched = touched
				return err
			}
			docs := tm.docs[lo:min(lo+ctxEvery, len(tm.docs))]
			tfs := tm.tfs[lo : lo+len(docs)]
			for j, d := range docs {
				dl := lens[d]
				if dl == deadLen {
					continue
				}
				v := sc.termScore(idf, tfs[j], dl)
				if masks[d] == 0 {
					touched = append(touched, d)
				}
				scores[d] += v
				masks[d] |= bit
			}
		}
	}
	s.touched = touched
	return nil
}

// topLocked takes the best limit of the touched documents admitted by
// filter, best first, and counts all those admitted; it clears the
// scratch scores as it goes. Callers hold ix.mu.
func (ix *Index) topLocked(s *scratch, limit int, filter func(id string) bool) ([]cand, int) {
	h := s.heap[:0]
	total := 0
	for _, ord := range s.touched {
		c := cand{score: s.scores[ord], ord: ord, mask: s.masks[ord]}
		s.scores[ord], s.masks[ord] = 0, 0
		if filter != nil && !filter(ix.docs[ord].id) {
			continue
		}
		total++
		if len(h) == limit && !ix.better(c, h[0]) {
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
	s.touched = s.touched[:0]
	slices.SortFunc(h, func(a, b cand) int {
		if ix.better(a, b) {
			return -1
		}
		return 1
	})
	return h, total
}

// hitLocked builds the Hit of ordinal ord: the terms of mask and the first
// body offset among them. Callers hold ix.mu.
func (ix *Index) hitLocked(ord uint32, score float64, mask uint64, terms []string, tids []int32) Hit {
	ht := Hit{ID: ix.docs[ord].id, Score: score, Offset: -1}
	first := uint32(noOffset)
	for j, t := range terms {
		if mask&(1<<j) == 0 {
			continue
		}
		ht.Terms = append(ht.Terms, t)
		tm := &ix.terms[tids[j]]
		if k, ok := slices.BinarySearch(tm.docs, ord); ok {
			first = min(first, tm.offs[k])
		}
	}
	if first != noOffset {
		ht.Offset = int(first)
	}
	return ht
}

// Score scores the documents with the given IDs for query exactly as Search
// would (same statistics, same bits), in the order given; IDs that are not
// in the index or match no query term are left out. Options.Limit and
// Options.Filter are ignored. It is how a cross-wing search renders only
// the hits that survived the merge.
func (ix *Index) Score(query string, ids []string, opt Options) []Hit {
	return ix.ScoreTerms(search.Terms(query), ids, opt)
}

// ScoreTerms is Score of terms already tokenized (search.Terms).
func (ix *Index) ScoreTerms(terms []string, ids []string, opt Options) []Hit {
	if len(terms) == 0 || len(ids) == 0 {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	sc, ok := ix.scoringLocked(opt)
	if !ok {
		return nil
	}
	tids := make([]int32, len(terms))
	idfs := make([]float64, len(terms))
	for i, t := range terms {
		tids[i] = -1
		if id, ok := ix.dict[t]; ok && ix.terms[id].df > 0 {
			tids[i] = int32(id)
			idfs[i] = sc.idf(t, ix.terms[id].df)
		}
	}
	var hits []Hit
	for _, id := range ids {
		ord, ok := ix.byID[id]
		if !ok {
			continue
		}
		dl := ix.lens[ord]
		var score float64
		var mask uint64
		for i := range terms {
			if tids[i] < 0 {
				continue
			}
			tm := &ix.terms[tids[i]]
			k, ok := slices.BinarySearch(tm.docs, ord)
			if !ok {
				continue
			}
			score += sc.termScore(idfs[i], tm.tfs[k], dl)
			mask |= 1 << i
		}
		if mask == 0 {
			continue
		}
		hits = append(hits, ix.hitLocked(ord, score, mask, terms, tids))
	}
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
