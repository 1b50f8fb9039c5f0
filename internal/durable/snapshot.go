package durable

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// ErrChecksum reports a snapshot whose trailer is missing or does not match
// its bytes, or that has bytes after the trailer.
var ErrChecksum = errors.New("durable: snapshot checksum mismatch")

// WriteSnapshot replaces path durably and atomically (package atomicfile)
// with the bytes write writes, buffered, followed by their CRC-32C.
func WriteSnapshot(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	p, err := atomicfile.New(path, perm)
	if err != nil {
		return err
	}
	defer p.Cleanup()
	crc := crc32.New(castagnoli)
	w := bufio.NewWriterSize(io.MultiWriter(p, crc), 1<<20)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		_, err = p.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	}
	if err != nil {
		return err
	}
	return p.Replace()
}

// SnapshotReader reads a snapshot, hashing exactly the bytes read through
// it (it is an io.ByteReader, so a codec.Stream over it reads no further
// than it decodes), until Verify checks the trailer.
type SnapshotReader struct {
	r *bufio.Reader
	h hash.Hash32
}

// NewSnapshotReader returns a SnapshotReader over r.
func NewSnapshotReader(r io.Reader) *SnapshotReader {
	return &SnapshotReader{r: bufio.NewReaderSize(r, 256<<10), h: crc32.New(castagnoli)}
}

func (c *SnapshotReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	return n, err
}

// ReadByte reads one byte, hashing it.
func (c *SnapshotReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.h.Write([]byte{b})
	}
	return b, err
}

// Verify reads the trailer and checks it against every byte read before,
// and that nothing follows it; errors wrap ErrChecksum.
func (c *SnapshotReader) Verify() error {
	sum := c.h.Sum32()
	var trailer [4]byte
	if _, err := io.ReadFull(c.r, trailer[:]); err != nil || binary.LittleEndian.Uint32(trailer[:]) != sum {
		return fmt.Errorf("%w (the trailer: %x)", ErrChecksum, trailer)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: bytes after the checksum", ErrChecksum)
	}
	return nil
}
