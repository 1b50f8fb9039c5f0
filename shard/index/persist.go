package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/search"
)

// persistMagic starts an index written by Save. persistVersion changes
// whenever the format, the tokenizer or the scoring changes, so that an
// index saved by another version is rebuilt rather than misread.
const (
	persistMagic   = "BSIDX\x00\x00\x01"
	persistVersion = 1
)

// ErrCorrupt is returned by Load for bytes that are not an index Save wrote
// (or that another version of this package wrote).
var ErrCorrupt = errors.New("index: saved index is corrupt or from another version")

// Save writes the whole index to w in a compact binary form that Load reads
// back, tombstones included: the magic, a little-endian uint32 version, the
// title boost and the dictionary's size (uvarints), every term (its name,
// a string, then its posting count and one block of the postings' ordinals,
// term frequencies and offsets as little-endian uint32, uint16 and uint32
// arrays), the document count, and every document (id, a string; length,
// a little-endian uint32; its term ids, bytes), in internal/codec's
// primitives. It holds the index's read lock while it
// writes: puts and deletes wait (and searches that arrive while one of them
// waits).
func (ix *Index) Save(w io.Writer) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	bw := bufio.NewWriterSize(w, 1<<20)
	var b []byte
	b = append(b, persistMagic...)
	b = codec.AppendUint32(b, persistVersion)
	b = codec.AppendUvarint(b, uint64(ix.boost))
	b = codec.AppendUvarint(b, uint64(len(ix.terms)))
	if _, err := bw.Write(b); err != nil {
		return err
	}
	// The dictionary, in term id order.
	names := make([]string, len(ix.terms))
	for t, id := range ix.dict {
		names[id] = t
	}
	for id := range ix.terms {
		tm := &ix.terms[id]
		b = codec.AppendString(b[:0], names[id])
		b = codec.AppendUvarint(b, uint64(len(tm.docs)))
		for _, d := range tm.docs {
			b = binary.LittleEndian.AppendUint32(b, d)
		}
		for _, f := range tm.tfs {
			b = binary.LittleEndian.AppendUint16(b, f)
		}
		for _, o := range tm.offs {
			b = binary.LittleEndian.AppendUint32(b, o)
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	b = codec.AppendUvarint(b[:0], uint64(len(ix.docs)))
	if _, err := bw.Write(b); err != nil {
		return err
	}
	for ord, d := range ix.docs {
		b = codec.AppendString(b[:0], d.id)
		b = codec.AppendUint32(b, ix.lens[ord])
		b = codec.AppendBytes(b, d.terms)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Load reads an index written by Save. Everything is checked against the
// bytes present before it is allocated, and the index's invariants
// (ordinals in range and ascending, unique terms and ids, consistent
// document frequencies) are verified, so corrupt input fails with an error
// wrapping ErrCorrupt rather than building a wrong index. Load reads
// exactly what Save wrote: r may continue with other data.
func Load(r io.Reader) (*Index, error) {
	if _, ok := r.(io.ByteReader); !ok {
		return nil, errors.New("index: Load needs an io.ByteReader (e.g. a *bufio.Reader) so that it reads no further than the index")
	}
	// An io.ByteReader is not buffered again: the stream reads through r,
	// no further than the index.
	d := codec.NewStream(r)
	magic := string(d.Fixed("magic", len(persistMagic)))
	version := d.Uint32("version")
	if err := d.Err(); err != nil {
		return nil, corrupt(err)
	}
	if magic != persistMagic || version != persistVersion {
		return nil, fmt.Errorf("%w: unknown header", ErrCorrupt)
	}
	boost := d.Uvarint("title boost", math.MaxInt32)
	nterms := d.Uvarint("terms", math.MaxUint32-1)
	if err := d.Err(); err != nil {
		return nil, corrupt(err)
	}
	ix := NewWithConfig(Config{TitleBoost: int(boost)})
	if int(boost) != ix.boost {
		return nil, fmt.Errorf("%w: title boost %d", ErrCorrupt, boost)
	}
	if err := ix.loadTerms(d, nterms); err != nil {
		return nil, err
	}
	if err := ix.loadDocs(d); err != nil {
		return nil, err
	}
	if err := ix.checkPostings(); err != nil {
		return nil, err
	}
	return ix, nil
}

// loadTerms reads the n terms of the dictionary and their postings.
func (ix *Index) loadTerms(d *codec.Stream, n uint64) error {
	ix.terms = make([]term, 0, min(n, 1<<12))
	for range n {
		name := d.String("term", search.MaxTokenBytes)
		n := int(d.Uvarint("postings", math.MaxUint32))
		raw := d.Fixed("postings", 10*n)
		if err := d.Err(); err != nil {
			return corrupt(err)
		}
		tm := term{docs: make([]uint32, n), tfs: make([]uint16, n), offs: make([]uint32, n)}
		for i := range n {
			tm.docs[i] = binary.LittleEndian.Uint32(raw[4*i:])
			tm.tfs[i] = binary.LittleEndian.Uint16(raw[4*n+2*i:])
			tm.offs[i] = binary.LittleEndian.Uint32(raw[6*n+4*i:])
		}
		if _, dup := ix.dict[name]; dup {
			return fmt.Errorf("%w: term %q twice", ErrCorrupt, name)
		}
		if !slices.IsSorted(tm.docs) {
			return fmt.Errorf("%w: postings of %q out of order", ErrCorrupt, name)
		}
		ix.dict[name] = uint32(len(ix.terms))
		ix.terms = append(ix.terms, tm)
	}
	return nil
}

// loadDocs reads the documents (live ones and tombstones), counting the
// document frequencies of their terms.
func (ix *Index) loadDocs(d *codec.Stream) error {
	ndocs := d.Uvarint("documents", math.MaxUint32-1)
	if err := d.Err(); err != nil {
		return corrupt(err)
	}
	ix.docs = make([]docInfo, 0, min(ndocs, 1<<12))
	ix.lens = make([]uint32, 0, min(ndocs, 1<<12))
	for range ndocs {
		id := d.String("document id", 1<<16)
		l := d.Uint32("document length")
		ids := d.Bytes("term ids", math.MaxUint32)
		if err := d.Err(); err != nil {
			return corrupt(err)
		}
		ord := uint32(len(ix.docs))
		di := docInfo{id: id}
		if l == deadLen {
			if id != "" || len(ids) != 0 {
				return fmt.Errorf("%w: tombstone %d holds data", ErrCorrupt, ord)
			}
			ix.dead++
		} else {
			if _, dup := ix.byID[id]; dup || id == "" {
				return fmt.Errorf("%w: document id %q twice or empty", ErrCorrupt, id)
			}
			ix.byID[id] = ord
			ix.live++
			ix.totalLen += int64(l)
			di.terms = slices.Clone(ids)
			bad := false
			decodeIDsChecked(di.terms, func(t uint32) {
				if t >= uint32(len(ix.terms)) {
					bad = true
					return
				}
				ix.terms[t].df++
			}, &bad)
			if bad {
				return fmt.Errorf("%w: term ids of %q", ErrCorrupt, id)
			}
		}
		ix.docs = append(ix.docs, di)
		ix.lens = append(ix.lens, l)
	}
	return nil
}

// checkPostings verifies that every posting names an existing ordinal, and
// that each term's live postings are exactly its document frequency.
func (ix *Index) checkPostings() error {
	for id := range ix.terms {
		tm := &ix.terms[id]
		live := int64(0)
		for _, o := range tm.docs {
			if o >= uint32(len(ix.docs)) {
				return fmt.Errorf("%w: posting ordinal %d of %d", ErrCorrupt, o, len(ix.docs))
			}
			if ix.lens[o] != deadLen {
				live++
			}
		}
		if live != tm.df {
			return fmt.Errorf("%w: document frequency of term %d is %d, postings say %d", ErrCorrupt, id, tm.df, live)
		}
	}
	return nil
}

// decodeIDsChecked is decodeIDs that stops on a malformed varint or an
// overflowing id, setting *bad.
func decodeIDsChecked(buf []byte, fn func(uint32), bad *bool) {
	prev := uint64(0)
	for len(buf) > 0 && !*bad {
		d, n := binary.Uvarint(buf)
		if n <= 0 || prev+d > math.MaxUint32 {
			*bad = true
			return
		}
		buf = buf[n:]
		prev += d
		fn(uint32(prev))
	}
}

// corrupt wraps a decoding error in ErrCorrupt; an error of the reader
// itself is returned as it is.
func corrupt(err error) error {
	if errors.Is(err, codec.ErrMalformed) || errors.Is(err, codec.ErrTooLong) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}
