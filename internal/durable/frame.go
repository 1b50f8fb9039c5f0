// Package durable is Brainstem's one durable-record format: the frame every
// record of an append-only log is written in (the history's pending log,
// the idempotency journal), the rule that tells a record torn by a crash
// from damage, the file those frames are appended to (a failed write cut
// off again, concurrent appends sharing one fsync), the copy of a damaged
// file kept aside, the CRC-32C trailer that checksums a snapshot, and the
// advisory lock (flock) that keeps a second process off a journal, a state
// directory or a git lock file. What goes inside a frame or a snapshot is internal/codec's encoding.
//
// A frame is
//
//	u32 length of the payload (little-endian)
//	u32 CRC-32C (Castagnoli) of the payload (little-endian)
//	payload
//
// and a snapshot is its bytes followed by the CRC-32C of all of them
// (little-endian u32). Idempotency journals written before issue 37 framed
// their records with big-endian headers; Legacy and ReadLegacy read them so
// that the journal converts them, and go with the release after.
package durable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// HeaderBytes is the size of a frame's header.
const HeaderBytes = 8

var (
	// ErrCorrupt reports a frame that is damaged where more data follows
	// (a disk fault, not a crash), or whose payload the caller refused.
	ErrCorrupt = errors.New("durable: corrupt record")
	// ErrTorn reports a frame cut short at the end of a file by a crash:
	// the file is good up to the offset returned with it.
	ErrTorn = errors.New("durable: torn record at the end of the file")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C of p.
func Checksum(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// Begin appends the room of a frame's header to dst. Append the payload
// after it, then call Seal with len(dst) as it was before Begin.
func Begin(dst []byte) []byte { return append(dst, 0, 0, 0, 0, 0, 0, 0, 0) }

// Seal fills in the header of the frame starting at start in b, whose
// payload is the rest of b, and returns b.
func Seal(b []byte, start int) []byte {
	p := b[start+HeaderBytes:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(p)))
	binary.LittleEndian.PutUint32(b[start+4:], Checksum(p))
	return b
}

// Read reads frames from r until its end, calling fn with each payload
// (fresh bytes, which fn may keep), and returns the offset just past the
// last good frame. The torn-tail rule: a frame cut short, or a bad frame
// (a length of 0 or over limit, a checksum mismatch) followed by nothing
// but zero bytes (a crash can leave a file extended with zeros past its
// last write), is ErrTorn; any other bad frame is ErrCorrupt. A payload
// fn refuses (returns an error for) is ErrCorrupt too, wrapping fn's
// error: its checksum holds, so it was written whole.
func Read(r io.Reader, limit uint32, fn func(payload []byte) error) (good int64, err error) {
	return read(r, binary.LittleEndian, limit, fn)
}

// ReadLegacy is Read for a file of big-endian frame headers (an
// idempotency journal written before issue 37).
func ReadLegacy(r io.Reader, limit uint32, fn func(payload []byte) error) (good int64, err error) {
	return read(r, binary.BigEndian, limit, fn)
}

func read(r io.Reader, order binary.ByteOrder, limit uint32, fn func([]byte) error) (good int64, err error) {
	var hdr [HeaderBytes]byte
	for {
		_, rerr := io.ReadFull(r, hdr[:])
		if rerr == io.EOF {
			return good, nil
		}
		if errors.Is(rerr, io.ErrUnexpectedEOF) {
			return good, ErrTorn
		}
		if rerr != nil {
			return good, rerr
		}
		size, sum := order.Uint32(hdr[:4]), order.Uint32(hdr[4:])
		if size == 0 || size > limit {
			return good, zeroTail(r, fmt.Errorf("%w: frame of %d bytes at offset %d", ErrCorrupt, size, good))
		}
		// Read what is there rather than allocate what the header claims.
		p, rerr := io.ReadAll(io.LimitReader(r, int64(size)))
		if rerr != nil {
			return good, rerr
		}
		if len(p) < int(size) {
			return good, ErrTorn
		}
		if Checksum(p) != sum {
			return good, zeroTail(r, fmt.Errorf("%w: checksum mismatch at offset %d", ErrCorrupt, good))
		}
		if err := fn(p); err != nil {
			return good, fmt.Errorf("%w: %w (at offset %d)", ErrCorrupt, err, good)
		}
		good += HeaderBytes + int64(size)
	}
}

// zeroTail returns ErrTorn when nothing but zero bytes follows in r, else
// err.
func zeroTail(r io.Reader, err error) error {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		if slices.ContainsFunc(buf[:n], func(c byte) bool { return c != 0 }) {
			return err
		}
		if rerr == io.EOF {
			return ErrTorn
		}
		if rerr != nil {
			return err
		}
	}
}

// Legacy reports whether the first frame of f is whole and valid with a
// big-endian header and not with a little-endian one. (A frame valid in
// both orders, which takes a palindromic length and checksum, is read as
// little-endian.)
func Legacy(f io.ReaderAt, limit uint32) bool {
	return validAt(f, binary.BigEndian, limit) && !validAt(f, binary.LittleEndian, limit)
}

// validAt reports whether the first frame of f, its header read in order,
// is whole and matches its checksum.
func validAt(f io.ReaderAt, order binary.ByteOrder, limit uint32) bool {
	var hdr [HeaderBytes]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return false
	}
	size := order.Uint32(hdr[:4])
	if size == 0 || size > limit {
		return false
	}
	p := make([]byte, size)
	_, err := f.ReadAt(p, HeaderBytes)
	return err == nil && Checksum(p) == order.Uint32(hdr[4:])
}
