package search

import (
	"bytes"
	"sort"
	"strconv"

	"github.com/brainstem/brainstem/brain"
)

// WingRank is one wing's answer to the rank step, as the merge reads it.
type WingRank struct {
	Ranked []Ranked
	Total  int64
}

// Pick is a hit that survived the merge: which wing (an index into the
// ranks merged) and which key.
type Pick struct {
	Wing int
	Ranked
}

// Merge orders every wing's ranked hits as one index over the union would
// (Ranked.Less) and keeps the best limit. Wings absent from answered (nil
// slice: all) are left out.
func Merge(ranks []WingRank, answered []bool, limit int) []Pick {
	var all []Pick
	for i, r := range ranks {
		if answered != nil && !answered[i] {
			continue
		}
		for _, h := range r.Ranked {
			all = append(all, Pick{Wing: i, Ranked: h})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Less(all[j].Ranked) })
	return all[:min(len(all), limit)]
}

// EnvelopeFor writes the answer to q of a cross-wing search by hand, so
// that each hit's bytes stay exactly as its wing rendered them:
// {"hits":[…],"total":N,"wings":[answered],"unavailable":[…]}, unavailable
// being a JSON array the caller encoded. For a call in the predecessor's
// shape (Query.Legacy), the hits come again after the others as "results",
// the predecessor's name for them.
func EnvelopeFor(q Query, hits [][]byte, total int64, answered []string, unavailable []byte) []byte {
	results := q.Legacy
	size := 64 + len(unavailable)
	for _, h := range hits {
		size += len(h) + 1
	}
	if results {
		size *= 2
	}
	for _, w := range answered {
		size += len(w) + 3
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"hits":`)
	writeHits(&b, hits)
	b.WriteString(`,"total":`)
	b.WriteString(strconv.FormatInt(total, 10))
	b.WriteString(`,"wings":`)
	if answered == nil {
		answered = []string{}
	}
	wj, _ := brain.Marshal(answered)
	b.Write(wj)
	b.WriteString(`,"unavailable":`)
	if len(unavailable) == 0 {
		unavailable = []byte("[]")
	}
	b.Write(unavailable)
	if results {
		b.WriteString(`,"results":`)
		writeHits(&b, hits)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeHits(b *bytes.Buffer, hits [][]byte) {
	b.WriteByte('[')
	for i, h := range hits {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(h)
	}
	b.WriteByte(']')
}
