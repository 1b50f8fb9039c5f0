package search

import (
	"maps"
	"sync"
)

// Replica is the gateway's copy of each wing's statistics of the terms
// queried lately, each wing's at the generation it last reported. A search
// skips the statistics round trip to a wing whose statistics of its terms
// the replica holds; a wing that answers Rank at another generation is
// Stale, its copy is replaced, and the search ranks again. It is safe for
// concurrent use.
type Replica struct {
	mu       sync.Mutex
	maxTerms int
	wings    []wingStats
}

type wingStats struct {
	gen   uint64
	docs  int64
	total int64
	df    map[string]int64
}

// NewReplica returns a replica of n wings' statistics, holding at most
// maxTerms terms per wing (beyond it a wing's copy starts afresh).
func NewReplica(n, maxTerms int) *Replica {
	return &Replica{maxTerms: maxTerms, wings: make([]wingStats, n)}
}

// Lookup returns a wing's statistics of terms and the generation they are
// of, when the replica holds every one of them; ok is false otherwise.
func (r *Replica) Lookup(wing int, terms []string) (st Stats, gen uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := &r.wings[wing]
	if ws.gen == 0 {
		return Stats{}, 0, false
	}
	st = Stats{Docs: ws.docs, TotalLength: ws.total, DocFreq: make(map[string]int64, len(terms))}
	for _, t := range terms {
		n, held := ws.df[t]
		if !held {
			return Stats{}, 0, false
		}
		st.DocFreq[t] = n
	}
	return st, ws.gen, true
}

// Put records a wing's statistics of some terms at generation gen. Another
// generation than the one held replaces what the replica held of the wing.
func (r *Replica) Put(wing int, gen uint64, st Stats) {
	if gen == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := &r.wings[wing]
	if ws.gen != gen || len(ws.df)+len(st.DocFreq) > r.maxTerms {
		*ws = wingStats{gen: gen, df: make(map[string]int64, len(st.DocFreq))}
	}
	ws.docs, ws.total = st.Docs, st.TotalLength
	maps.Copy(ws.df, st.DocFreq)
}
