package index

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/brainstem/brainstem/search"
)

// BM25 parameters.
const (
	K1 = 1.2
	B  = 0.75
)

// DefaultTitleBoost is the title weight used by [New].
const DefaultTitleBoost = 2

// A posting packs its term frequencies into 16 bits: the body's in the low
// 12 bits, the title's in the high 4. Higher counts saturate at MaxBodyTF and
// MaxTitleTF (BM25 barely tells such counts apart anyway); lengths are not
// affected.
const (
	MaxBodyTF  = 1<<12 - 1
	MaxTitleTF = 1<<4 - 1
	titleShift = 12
)

// deadLen marks a tombstoned ordinal in Index.lens.
const deadLen = math.MaxUint32

// minCompact is the number of tombstones below which no compaction runs.
const minCompact = 64

// Doc is a document to index. ID is the note id (e.g.
// "payments/decisions/idempotency"); the index keeps neither Title nor Body.
type Doc struct {
	ID, Title, Body string
}

// Hit is one search result: the document's ID, its BM25 score, the
// distinct query terms found in it, in query order, and the byte offset in
// the document's Body of its first token that is one of those terms (-1
// when they occur only in the title). [SnippetAt] starts its window there.
type Hit struct {
	ID     string
	Score  float64
	Terms  []string
	Offset int
}

// Options tune a [Index.Search].
type Options struct {
	// Limit is the maximum number of hits (<= 0 means 10).
	Limit int
	// Filter, when set, admits only documents for which it returns true
	// (e.g. a hall filter on the id prefix). It is called once for every
	// matching document (Result.Total counts the admitted ones), under the
	// index's read lock: it must not call back into the index.
	Filter func(id string) bool
	// Stats, when set, are the global statistics to score with (see the
	// package documentation). nil, or Docs <= 0, means this index's own.
	// A query term missing from Stats.DocFreq uses this index's df; a df
	// above Docs is clamped to Docs.
	Stats *search.Stats
}

// Config configures an [Index].
type Config struct {
	// TitleBoost weighs title term frequencies and lengths against the
	// body's. 0 means DefaultTitleBoost; 1 weighs the title like the body.
	// Negative values are treated as 0. Indexes whose statistics are summed
	// must share the same TitleBoost.
	TitleBoost int
}

// term is the index entry of one dictionary term: its postings, one
// (document, term frequencies, first body offset) triple per document, 10
// bytes each.
type term struct {
	docs []uint32 // document ordinals, ascending; may include tombstones
	tfs  []uint16 // packed term frequencies (see packTF), parallel to docs
	offs []uint32 // byte offset of the term's first body token, noOffset if none; parallel to docs
	df   int64    // live documents containing the term
}

// noOffset marks a posting whose term occurs only in the title.
const noOffset = math.MaxUint32

// docInfo is what the index keeps of a document besides its postings.
type docInfo struct {
	id    string
	terms []byte // sorted term ids, varint delta-encoded; nil once dead
}

// Index is an in-memory BM25 index. The zero value is not usable; call
// [New] or [NewWithConfig].
type Index struct {
	boost int
	gen   atomic.Uint64 // Generation

	mu       sync.RWMutex // guards the fields below
	dict     map[string]uint32
	terms    []term
	docs     []docInfo // by ordinal
	lens     []uint32  // weighted length by ordinal; deadLen if tombstoned
	byID     map[string]uint32
	live     int64
	totalLen int64
	dead     int // tombstoned ordinals awaiting compaction

	scratch sync.Pool // *scratch for Search
	counts  sync.Pool // *termCounts for Put
}

// New returns an empty index with the default title boost.
func New() *Index { return NewWithConfig(Config{}) }

// NewWithConfig returns an empty index configured by cfg.
func NewWithConfig(cfg Config) *Index {
	boost := cfg.TitleBoost
	if boost <= 0 {
		boost = DefaultTitleBoost
	}
	ix := &Index{boost: boost, dict: make(map[string]uint32), byID: make(map[string]uint32)}
	// A random start: an index opened again (a restart) is at another
	// generation than any it was at before, and none is 0.
	ix.gen.Store(rand.Uint64()>>1 | 1)
	return ix
}

// Generation changes whenever the index does (every Put and every Delete
// of a document it holds): two equal generations of one index have equal
// statistics. A cross-wing search checks it to reuse statistics.
func (ix *Index) Generation() uint64 { return ix.gen.Load() }

// TitleBoost reports the index's title weight.
func (ix *Index) TitleBoost() int { return ix.boost }

// Put adds d, replacing any document with the same ID. The document is
// searchable when Put returns.
func (ix *Index) Put(d Doc) { ix.PutPrepared(ix.Prepare(d)) }

// Prepared is a document tokenized and counted by Prepare, ready for
// PutPrepared. It holds references into the document's text until then.
type Prepared struct {
	id     string
	toks   []tokCount
	length int64
}

// Prepare tokenizes and counts d without touching the index, so that many
// documents can be prepared in parallel (as a shard does when it loads a
// wing) and added one by one with PutPrepared.
func (ix *Index) Prepare(d Doc) *Prepared {
	tc, _ := ix.counts.Get().(*termCounts)
	if tc == nil {
		tc = &termCounts{slot: make(map[string]int32, 256)}
	}
	var bodyLen, titleLen int64
	search.ForEachToken(d.Body, func(tok string, start, _ int) {
		tc.add(tok, 0, start)
		bodyLen++
	})
	search.ForEachToken(d.Title, func(tok string, _, _ int) {
		tc.add(tok, 1, 0)
		titleLen++
	})
	length := bodyLen + int64(ix.boost)*titleLen
	if length >= deadLen {
		length = deadLen - 1
	}
	p := &Prepared{id: d.ID, toks: slices.Clone(tc.toks), length: length}
	tc.reset()
	ix.counts.Put(tc)
	return p
}

// PutPrepared adds a document prepared by Prepare (of this index, or of one
// with the same title boost), replacing any document with the same ID.
func (ix *Index) PutPrepared(p *Prepared) {
	ix.mu.Lock()
	ix.gen.Add(1)
	if old, ok := ix.byID[p.id]; ok {
		ix.removeLocked(old)
	}
	ord := uint32(len(ix.docs))
	ids := make([]uint32, 0, len(p.toks))
	for _, c := range p.toks {
		tok := c.tok
		id, ok := ix.dict[tok]
		if !ok {
			id = uint32(len(ix.terms))
			// Clone: a token sliced out of the document must not keep the
			// whole document alive.
			ix.dict[strings.Clone(tok)] = id
			ix.terms = append(ix.terms, term{})
		}
		t := &ix.terms[id]
		t.docs = append(t.docs, ord)
		t.tfs = append(t.tfs, packTF(c.n[0], c.n[1]))
		t.offs = append(t.offs, c.off)
		t.df++
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := strings.Clone(p.id)
	ix.docs = append(ix.docs, docInfo{id: id, terms: encodeIDs(ids)})
	ix.lens = append(ix.lens, uint32(p.length))
	ix.byID[id] = ord
	ix.live++
	ix.totalLen += p.length
	ix.maybeCompactLocked()
	ix.mu.Unlock()
	p.toks = nil // drop the references into the text
}

// termCounts counts a document's terms per field, in order of first
// appearance (so term ids are assigned deterministically).
type termCounts struct {
	slot map[string]int32 // index into toks
	toks []tokCount
}

type tokCount struct {
	tok string
	n   [2]uint32 // body, title
	off uint32    // byte offset of the first body occurrence, noOffset if none
}

// add counts one occurrence of tok in field (0 body, 1 title) at byte
// offset off of the body.
func (tc *termCounts) add(tok string, field, off int) {
	if i, ok := tc.slot[tok]; ok {
		c := &tc.toks[i]
		c.n[field]++
		if field == 0 && c.off == noOffset {
			c.off = uint32(min(off, noOffset-1))
		}
		return
	}
	tc.slot[tok] = int32(len(tc.toks))
	c := tokCount{tok: tok, off: noOffset}
	c.n[field] = 1
	if field == 0 {
		c.off = uint32(min(off, noOffset-1))
	}
	tc.toks = append(tc.toks, c)
}

// reset empties tc, dropping its references to the document's text.
func (tc *termCounts) reset() {
	clear(tc.slot)
	clear(tc.toks)
	tc.toks = tc.toks[:0]
}

// Delete removes the document with the given ID, if present.
func (ix *Index) Delete(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ord, ok := ix.byID[id]; ok {
		ix.gen.Add(1)
		ix.removeLocked(ord)
		ix.maybeCompactLocked()
	}
}

// Has reports whether a document with the given ID is in the index.
func (ix *Index) Has(id string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.byID[id]
	return ok
}

// Len reports the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return int(ix.live)
}

// Stats returns this index's statistics for query: its document count,
// total weighted length, and the document frequency of each of the query's
// terms (0 for terms it does not contain).
func (ix *Index) Stats(query string) search.Stats { return ix.StatsOf(search.Terms(query)) }

// StatsOf is Stats of terms already tokenized (search.Terms).
func (ix *Index) StatsOf(terms []string) search.Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st := search.Stats{Docs: ix.live, TotalLength: ix.totalLen, DocFreq: make(map[string]int64, len(terms))}
	for _, t := range terms {
		var df int64
		if id, ok := ix.dict[t]; ok {
			df = ix.terms[id].df
		}
		st.DocFreq[t] = df
	}
	return st
}

// removeLocked tombstones ordinal ord, keeping the statistics exact.
func (ix *Index) removeLocked(ord uint32) {
	d := &ix.docs[ord]
	decodeIDs(d.terms, func(id uint32) { ix.terms[id].df-- })
	delete(ix.byID, d.id)
	ix.live--
	ix.totalLen -= int64(ix.lens[ord])
	ix.lens[ord] = deadLen
	*d = docInfo{}
	ix.dead++
}

// maybeCompactLocked drops tombstoned postings and renumbers ordinals once
// tombstones reach a quarter of all ordinals, so the work is amortised over
// the deletes that caused it.
func (ix *Index) maybeCompactLocked() {
	if ix.dead < minCompact || ix.dead*4 < len(ix.docs) {
		return
	}
	ix.compactLocked()
}

func (ix *Index) compactLocked() {
	remap := make([]uint32, len(ix.docs))
	n := uint32(0)
	for ord := range ix.docs {
		if ix.lens[ord] == deadLen {
			remap[ord] = deadLen
			continue
		}
		remap[ord] = n
		ix.docs[n] = ix.docs[ord]
		ix.lens[n] = ix.lens[ord]
		ix.byID[ix.docs[n].id] = n
		n++
	}
	clear(ix.docs[n:])
	ix.docs = slices.Clip(ix.docs[:n])
	ix.lens = slices.Clip(ix.lens[:n])
	for i := range ix.terms {
		t := &ix.terms[i]
		docs, tfs, offs := t.docs[:0], t.tfs[:0], t.offs[:0]
		for j, d := range t.docs {
			if nd := remap[d]; nd != deadLen {
				docs = append(docs, nd)
				tfs = append(tfs, t.tfs[j])
				offs = append(offs, t.offs[j])
			}
		}
		switch {
		case len(docs) == 0:
			docs, tfs, offs = nil, nil, nil
		case cap(docs) > 2*len(docs):
			docs, tfs, offs = slices.Clone(docs), slices.Clone(tfs), slices.Clone(offs)
		}
		t.docs, t.tfs, t.offs = docs, tfs, offs
	}
	ix.dead = 0
}

// packTF packs body and title term frequencies, saturating each.
func packTF(body, title uint32) uint16 {
	return uint16(min(body, MaxBodyTF)) | uint16(min(title, MaxTitleTF))<<titleShift
}

// encodeIDs varint-encodes sorted ids as deltas.
func encodeIDs(ids []uint32) []byte {
	buf := make([]byte, 0, len(ids)*2)
	prev := uint32(0)
	for _, id := range ids {
		buf = binary.AppendUvarint(buf, uint64(id-prev))
		prev = id
	}
	return slices.Clip(buf)
}

// decodeIDs calls fn with each id encoded by encodeIDs.
func decodeIDs(buf []byte, fn func(uint32)) {
	prev := uint32(0)
	for len(buf) > 0 {
		d, n := binary.Uvarint(buf)
		buf = buf[n:]
		prev += uint32(d)
		fn(prev)
	}
}

// Scrub compacts the index now and drops every dictionary term that no
// live document holds, renumbering the others, so that nothing of a
// deleted or replaced document's text (its words) stays in the index or in
// what Save writes. A purge of history calls it; the statistics and every
// search's answer are unchanged.
func (ix *Index) Scrub() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.compactLocked()
	remap := make([]uint32, len(ix.terms))
	n := uint32(0)
	for id := range ix.terms {
		if ix.terms[id].df == 0 {
			remap[id] = deadLen
			continue
		}
		remap[id] = n
		ix.terms[n] = ix.terms[id]
		n++
	}
	if int(n) == len(ix.terms) {
		return
	}
	clear(ix.terms[n:])
	ix.terms = slices.Clip(ix.terms[:n])
	dict := make(map[string]uint32, n)
	for t, id := range ix.dict {
		if nid := remap[id]; nid != deadLen {
			dict[t] = nid
		}
	}
	ix.dict = dict
	var ids []uint32
	for ord := range ix.docs {
		d := &ix.docs[ord]
		ids = ids[:0]
		decodeIDs(d.terms, func(id uint32) { ids = append(ids, remap[id]) })
		d.terms = encodeIDs(ids) // remap keeps the order
	}
	ix.gen.Add(1)
}
