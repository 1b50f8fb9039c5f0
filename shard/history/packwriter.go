package history

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

// objectSink receives the objects of a commit: loose objects (a batch of
// the committer) or a pack (the initial commit).
type objectSink interface {
	put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error)
}

// packBlobLevel is the size up to which a blob in a pack written by the
// engine is compressed at zlib's default level (about 20% smaller than
// the fastest level for prose); larger blobs and every tree use the
// fastest (a tree is mostly hashes, which do not compress).
const packBlobLevel = 16 << 10

// packWriter writes objects straight into a new pack (git's pack format,
// version 2, whole objects without deltas), then its index; finish makes
// both durable and puts them in objects/pack/, the index first (git finds
// a pack through its index, go-git through the pack file).
type packWriter struct {
	o    *objectStore
	dir  string
	f    *os.File
	bw   *bufio.Writer
	off  int64
	seen map[plumbing.Hash]bool
	ents []packEntry
	buf  bytes.Buffer
	zw   [2]*zlib.Writer
}

type packEntry struct {
	hash plumbing.Hash
	off  int64
	crc  uint32
}

func (o *objectStore) newPackWriter() (*packWriter, error) {
	dir := filepath.Join(o.dir, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	f, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return nil, fmt.Errorf("history: start a pack: %w", err)
	}
	p := &packWriter{o: o, dir: dir, f: f, bw: bufio.NewWriterSize(f, 1<<20), seen: map[plumbing.Hash]bool{}}
	hdr := []byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 0} // the count is fixed up at the end
	p.bw.Write(hdr)
	p.off = int64(len(hdr))
	return p, nil
}

// put appends an object to the pack (once per id).
func (p *packWriter) put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := objectHash(typ, data)
	if p.seen[h] {
		return h, nil
	}
	p.seen[h] = true
	level := 0
	if typ != plumbing.BlobObject || len(data) > packBlobLevel {
		level = 1
	}
	p.buf.Reset()
	p.buf.Write(packHeader(typ, len(data)))
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
		return h, fmt.Errorf("history: compress %s: %w", h, err)
	}
	if _, err := p.bw.Write(p.buf.Bytes()); err != nil {
		return h, fmt.Errorf("history: write the pack: %w", err)
	}
	p.ents = append(p.ents, packEntry{hash: h, off: p.off, crc: crc32.ChecksumIEEE(p.buf.Bytes())})
	p.off += int64(p.buf.Len())
	return h, nil
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

// finish completes the pack (object count, SHA-1 trailer), writes its
// index, makes both durable and moves them into place.
func (p *packWriter) finish() (plumbing.Hash, error) {
	fail := func(err error) (plumbing.Hash, error) {
		p.abort()
		return plumbing.ZeroHash, fmt.Errorf("history: write the pack: %w", err)
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
		return plumbing.ZeroHash, fmt.Errorf("history: write the pack: %w", err)
	}
	p.o.reindex()
	return packHash, nil
}

// writeIdx writes the pack's index (go-git's idxfile encoding, version 2)
// to a durable temporary file and returns its name.
func (p *packWriter) writeIdx(packHash plumbing.Hash) (string, error) {
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

// abort removes the unfinished pack.
func (p *packWriter) abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}
