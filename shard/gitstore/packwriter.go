package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// packBlobLevel is the size up to which a blob in a pack written by the
// engine is compressed at zlib's default level (about 20% smaller than
// the fastest level for prose); larger blobs and every tree use the
// fastest (a tree is mostly hashes, which do not compress).
const packBlobLevel = 16 << 10

// PackWriter writes objects straight into a new pack (git's pack format,
// version 2, whole objects without deltas), then its index; Commit makes
// both durable and puts them in objects/pack/, the index first (git finds
// a pack through its index, go-git through the pack file).
type PackWriter struct {
	o    *Store
	dir  string
	f    *os.File
	bw   *bufio.Writer
	off  int64
	seen map[plumbing.Hash]bool
	offs map[plumbing.Hash]int64 // where each object starts
	// recent holds the bytes of the newest version of each large tree
	// written, the base of the next version's delta.
	recent map[plumbing.Hash][]byte
	// Dedupe skips objects the repository already has (a batch of
	// commits; the initial commit writes everything).
	Dedupe bool
	ents   []packEntry
	buf    bytes.Buffer
	zw     [2]*zlib.Writer
}

type packEntry struct {
	hash plumbing.Hash
	off  int64
	crc  uint32
}

// NewPackWriter starts a pack in objects/pack.
func (o *Store) NewPackWriter() (*PackWriter, error) {
	dir := filepath.Join(o.dir, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("gitstore: %w", err)
	}
	f, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return nil, fmt.Errorf("gitstore: start a pack: %w", err)
	}
	p := &PackWriter{o: o, dir: dir, f: f, bw: bufio.NewWriterSize(f, 1<<20), seen: map[plumbing.Hash]bool{}, offs: map[plumbing.Hash]int64{}}
	hdr := []byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0} // the count is fixed up at the end
	p.bw.Write(hdr)
	p.off = int64(len(hdr))
	return p, nil
}

// Put appends an object to the pack (once per id).
func (p *PackWriter) Put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := Hash(typ, data)
	if p.seen[h] || p.Dedupe && p.o.Has(h) {
		p.seen[h] = true
		return h, nil
	}
	return h, p.putKnown(h, typ, data)
}

// PutTree appends a tree, as a delta on base when base is a large tree
// this pack holds (a hall's tree changed by several commits of a batch
// is written whole once, then as deltas of a few bytes).
func (p *PackWriter) PutTree(data []byte, base plumbing.Hash) (plumbing.Hash, error) {
	h := Hash(plumbing.TreeObject, data)
	if p.seen[h] || p.Dedupe && p.o.Has(h) {
		p.seen[h] = true
		return h, nil
	}
	if len(data) <= largeObject {
		return h, p.putKnown(h, plumbing.TreeObject, data)
	}
	if p.recent == nil {
		p.recent = map[plumbing.Hash][]byte{}
	}
	if bd, ok := p.recent[base]; ok {
		if delta := prefixSuffixDelta(bd, data); delta != nil {
			delete(p.recent, base)
			p.recent[h] = append(bd[:0], data...)
			return h, p.putDelta(h, base, delta)
		}
	}
	p.recent[h] = append([]byte(nil), data...)
	return h, p.putKnown(h, plumbing.TreeObject, data)
}

// putKnown appends object h, whose bytes are data, whole.
func (p *PackWriter) putKnown(h plumbing.Hash, typ plumbing.ObjectType, data []byte) error {
	if p.seen[h] {
		return nil
	}
	level := 0
	if typ != plumbing.BlobObject || len(data) > packBlobLevel {
		level = 1
	}
	return p.entry(h, packHeader(typ, len(data)), data, level)
}

// putDelta appends object h as a delta on base, which must be in the
// pack: an offset delta when base is already written, else a reference
// delta (git and go-git resolve both within a pack).
func (p *PackWriter) putDelta(h, base plumbing.Hash, delta []byte) error {
	if p.seen[h] {
		return nil
	}
	var hdr []byte
	if off, ok := p.offs[base]; ok {
		hdr = append(packHeader(plumbing.OFSDeltaObject, len(delta)), ofsDistance(p.off-off)...)
	} else {
		hdr = append(packHeader(plumbing.REFDeltaObject, len(delta)), base[:]...)
	}
	return p.entry(h, hdr, delta, 0)
}

// ofsDistance encodes how far back an offset delta's base starts: 7 bits
// a byte, most significant first, each byte but the last with its high
// bit set and (a quirk of the format) one less than its value.
func ofsDistance(n int64) []byte {
	b := []byte{byte(n & 0x7f)}
	for n >>= 7; n > 0; n >>= 7 {
		n--
		b = append([]byte{byte(0x80 | n&0x7f)}, b...)
	}
	return b
}

// entry writes one pack entry: its header, then data compressed at
// level (0 default, 1 fastest).
func (p *PackWriter) entry(h plumbing.Hash, hdr, data []byte, level int) error {
	p.seen[h] = true
	p.buf.Reset()
	p.buf.Write(hdr)
	zw := p.zw[level]
	if zw == nil {
		lv := zlib.DefaultCompression
		if level == 1 {
			lv = zlib.BestSpeed
		}
		zw, _ = zlib.NewWriterLevel(&p.buf, lv)
		p.zw[level] = zw
	}
	zw.Reset(&p.buf)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return fmt.Errorf("gitstore: compress %s: %w", h, err)
	}
	if _, err := p.bw.Write(p.buf.Bytes()); err != nil {
		return fmt.Errorf("gitstore: write the pack: %w", err)
	}
	p.ents = append(p.ents, packEntry{hash: h, off: p.off, crc: crc32.ChecksumIEEE(p.buf.Bytes())})
	p.offs[h] = p.off
	p.off += int64(p.buf.Len())
	return nil
}

// copyMax is the longest copy one delta instruction makes (git's limit).
const copyMax = 0x10000

// prefixSuffixDelta returns a git delta that makes target from base: it
// copies their common prefix and common suffix and inserts what lies
// between. That is all a new version of a tree or a note needs (one
// entry or one passage changed), costs a comparison of the bytes, and
// needs no index of base. It returns nil when the delta would not be
// much smaller than target.
func prefixSuffixDelta(base, target []byte) []byte {
	if len(target) < 64 {
		return nil // a delta header and a copy are as long
	}
	pre := commonPrefix(base, target)
	suf := commonSuffix(base[pre:], target[pre:])
	mid := target[pre : len(target)-suf]
	if len(mid) > len(target)/2 {
		return nil
	}
	d := binary.AppendUvarint(nil, uint64(len(base)))
	d = binary.AppendUvarint(d, uint64(len(target)))
	d = appendCopy(d, 0, pre)
	for len(mid) > 0 {
		n := min(len(mid), 0x7f)
		d = append(d, byte(n))
		d = append(d, mid[:n]...)
		mid = mid[n:]
	}
	return appendCopy(d, len(base)-suf, suf)
}

// commonPrefix is the length of the longest common prefix of a and b,
// compared a block at a time (bytes.Equal is vectorised) then a byte at a
// time.
func commonPrefix(a, b []byte) int {
	const block = 256
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix is the length of the longest common suffix of a and b.
func commonSuffix(a, b []byte) int {
	const block = 256
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && bytes.Equal(a[len(a)-i-block:len(a)-i], b[len(b)-i-block:len(b)-i]) {
		i += block
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// appendCopy appends instructions copying n bytes of the base from off.
func appendCopy(d []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, copyMax)
		op := byte(0x80)
		var args []byte
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				op |= 1 << i
				args = append(args, b)
			}
		}
		if size != copyMax { // a size of 0 means 0x10000
			for i := range 3 {
				if b := byte(size >> (8 * i)); b != 0 {
					op |= 0x10 << i
					args = append(args, b)
				}
			}
		}
		d = append(append(d, op), args...)
		off += size
		n -= size
	}
	return d
}

// packHeader is an entry's type and size: 3 bits of type, then the size
// 4 bits first and 7 bits a byte, the high bit saying more follow.
func packHeader(typ plumbing.ObjectType, size int) []byte {
	b := []byte{byte(typ)<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// Finish completes the pack (object count, SHA-1 trailer), writes its
// index, makes both durable and moves them into place.
func (p *PackWriter) Finish() (plumbing.Hash, error) {
	fail := func(err error) (plumbing.Hash, error) {
		p.Abort()
		return plumbing.ZeroHash, fmt.Errorf("gitstore: write the pack: %w", err)
	}
	if err := p.bw.Flush(); err != nil {
		return fail(err)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(p.ents)))
	if _, err := p.f.WriteAt(n[:], 8); err != nil {
		return fail(err)
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, io.NewSectionReader(p.f, 0, p.off)); err != nil {
		return fail(err)
	}
	var packHash plumbing.Hash
	sum.Sum(packHash[:0])
	if _, err := p.f.WriteAt(packHash[:], p.off); err != nil {
		return fail(err)
	}
	if err := p.f.Sync(); err != nil {
		return fail(err)
	}
	idx, err := p.writeIdx(packHash)
	if err != nil {
		return fail(err)
	}
	base := filepath.Join(p.dir, "pack-"+packHash.String())
	if err := os.Rename(idx, base+".idx"); err != nil {
		os.Remove(idx)
		return fail(err)
	}
	p.f.Close()
	if err := os.Rename(p.f.Name(), base+".pack"); err != nil {
		os.Remove(base + ".idx")
		return fail(err)
	}
	if err := atomicfile.SyncDir(p.dir); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("gitstore: write the pack: %w", err)
	}
	p.o.Reindex()
	return packHash, nil
}

// writeIdx writes the pack's index (go-git's idxfile encoding, version 2)
// to a durable temporary file and returns its name.
func (p *PackWriter) writeIdx(packHash plumbing.Hash) (string, error) {
	w := new(idxfile.Writer)
	w.OnHeader(uint32(len(p.ents)))
	for _, e := range p.ents {
		w.Add(e.hash, uint64(e.off), e.crc)
	}
	if err := w.OnFooter(packHash); err != nil {
		return "", err
	}
	idx, err := w.Index()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(p.dir, "tmp_idx_")
	if err != nil {
		return "", err
	}
	bw := bufio.NewWriter(f)
	_, err = idxfile.NewEncoder(bw).Encode(idx)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// Commit is Finish without the pack's name.
func (p *PackWriter) Commit() error {
	_, err := p.Finish()
	return err
}

// Abort removes the unfinished pack.
func (p *PackWriter) Abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}
