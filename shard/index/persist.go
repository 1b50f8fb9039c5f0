package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

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
// back, tombstones included. It holds the index's read lock while it
// writes: puts and deletes wait (and searches that arrive while one of them
// waits).
func (ix *Index) Save(w io.Writer) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	bw := bufio.NewWriterSize(w, 1<<20)
	var b []byte
	b = append(b, persistMagic...)
	b = binary.LittleEndian.AppendUint32(b, persistVersion)
	b = binary.AppendUvarint(b, uint64(ix.boost))
	b = binary.AppendUvarint(b, uint64(len(ix.terms)))
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
		b = b[:0]
		b = binary.AppendUvarint(b, uint64(len(names[id])))
		b = append(b, names[id]...)
		b = binary.AppendUvarint(b, uint64(len(tm.docs)))
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
	b = binary.AppendUvarint(b[:0], uint64(len(ix.docs)))
	if _, err := bw.Write(b); err != nil {
		return err
	}
	for ord, d := range ix.docs {
		b = b[:0]
		b = binary.AppendUvarint(b, uint64(len(d.id)))
		b = append(b, d.id...)
		b = binary.LittleEndian.AppendUint32(b, ix.lens[ord])
		b = binary.AppendUvarint(b, uint64(len(d.terms)))
		b = append(b, d.terms...)
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
	br, ok := r.(io.ByteReader)
	if !ok {
		return nil, errors.New("index: Load needs an io.ByteReader (e.g. a *bufio.Reader) so that it reads no further than the index")
	}
	d := &decoder{r: r, br: br}
	head := d.bytes(len(persistMagic) + 4)
	if d.err != nil {
		return nil, d.err
	}
	if string(head[:len(persistMagic)]) != persistMagic || binary.LittleEndian.Uint32(head[len(persistMagic):]) != persistVersion {
		return nil, fmt.Errorf("%w: unknown header", ErrCorrupt)
	}
	boost := d.uvarint(math.MaxInt32)
	nterms := d.uvarint(math.MaxUint32 - 1)
	if d.err != nil {
		return nil, d.err
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
func (ix *Index) loadTerms(d *decoder, n uint64) error {
	ix.terms = make([]term, 0, min(n, 1<<12))
	for range n {
		name := string(d.bytes(int(d.uvarint(search.MaxTokenBytes))))
		n := int(d.uvarint(math.MaxUint32))
		raw := d.bytes(10 * n)
		if d.err != nil {
			return d.err
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
func (ix *Index) loadDocs(d *decoder) error {
	ndocs := d.uvarint(math.MaxUint32 - 1)
	if d.err != nil {
		return d.err
	}
	ix.docs = make([]docInfo, 0, min(ndocs, 1<<12))
	ix.lens = make([]uint32, 0, min(ndocs, 1<<12))
	for range ndocs {
		id := string(d.bytes(int(d.uvarint(1 << 16))))
		l := d.u32()
		ids := d.bytes(int(d.uvarint(math.MaxUint32)))
		if d.err != nil {
			return d.err
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

// decoder reads Save's primitives; the first error sticks.
type decoder struct {
	r   io.Reader
	br  io.ByteReader
	err error
	buf []byte
}

func (d *decoder) u32() uint32 {
	b := d.bytes(4)
	if d.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (d *decoder) uvarint(limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.br)
	if err != nil {
		d.fail(err)
		return 0
	}
	if v > limit {
		d.err = fmt.Errorf("%w: count %d over %d", ErrCorrupt, v, limit)
		return 0
	}
	return v
}

// bytes reads n bytes into a reused buffer (valid until the next call),
// growing it in steps so that a corrupt length fails on the missing bytes
// before it allocates much more than the input holds.
func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 {
		if n < 0 {
			d.err = fmt.Errorf("%w: negative length", ErrCorrupt)
		}
		return nil
	}
	d.buf = d.buf[:0]
	for len(d.buf) < n {
		chunk := min(n-len(d.buf), 1<<20)
		start := len(d.buf)
		d.buf = slices.Grow(d.buf, chunk)[:start+chunk]
		if _, err := io.ReadFull(d.r, d.buf[start:]); err != nil {
			d.fail(err)
			return nil
		}
	}
	return d.buf
}

func (d *decoder) fail(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	d.err = err
}
