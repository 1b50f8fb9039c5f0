package search

// Stats are BM25 corpus statistics: the number of live documents, the sum
// of their weighted lengths, and the document frequencies of some terms.
// The Stats of several indexes add up field by field (Add), so the sum over
// every wing is the Stats of their union: scoring each wing with the sum
// gives every note the score one index over all the notes would.
type Stats struct {
	Docs, TotalLength int64
	DocFreq           map[string]int64
}

// Add adds o to s field by field (allocating s.DocFreq when needed).
func (s *Stats) Add(o Stats) {
	s.Docs += o.Docs
	s.TotalLength += o.TotalLength
	if s.DocFreq == nil {
		s.DocFreq = make(map[string]int64, len(o.DocFreq))
	}
	for t, n := range o.DocFreq {
		s.DocFreq[t] += n
	}
}
