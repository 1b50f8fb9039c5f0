package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"time"
)

// Stream decodes primitives from a reader. The bytes Bytes and Fixed return
// are valid until the next read. The first error sticks; the end of the
// input before a primitive is complete is ErrMalformed ("truncated").
type Stream struct {
	state
	r   io.Reader
	br  io.ByteReader
	buf []byte
}

// NewStream returns a Stream reading r; r is buffered unless it is already
// an io.ByteReader (then every byte read goes through r itself, so a
// hashing reader sees exactly the bytes decoded).
func NewStream(r io.Reader) *Stream {
	br, ok := r.(io.ByteReader)
	if !ok {
		b := bufio.NewReader(r)
		r, br = b, b
	}
	return &Stream{r: r, br: br}
}

func (s *Stream) readErr(field string, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		s.Fail("%s: truncated", field)
		return
	}
	if s.err == nil {
		s.err = err
	}
}

// Uvarint reads an unsigned varint of at most limit.
func (s *Stream) Uvarint(field string, limit uint64) uint64 {
	if s.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(s.br)
	if err != nil {
		s.readErr(field, err)
		return 0
	}
	if v > limit {
		s.tooLong(field, v, limit)
		return 0
	}
	return v
}

// Varint reads a zig-zag varint.
func (s *Stream) Varint(field string) int64 { return unzigzag(s.Uvarint(field, math.MaxUint64)) }

// Byte reads one byte.
func (s *Stream) Byte(field string) byte {
	if s.err != nil {
		return 0
	}
	v, err := s.br.ReadByte()
	if err != nil {
		s.readErr(field, err)
		return 0
	}
	return v
}

// Bool reads a boolean byte, 0 or 1.
func (s *Stream) Bool(field string) bool { return s.bool(field, s.Byte(field)) }

// Time reads a time written by AppendTime.
func (s *Stream) Time(field string) time.Time { return timeOf(s.Varint(field)) }

// Uint32 reads four little-endian bytes.
func (s *Stream) Uint32(field string) uint32 { return uint32(littleEndian(s.Fixed(field, 4))) }

// Fixed reads exactly n bytes into a reused buffer, growing it a megabyte
// at a time so that a corrupt length fails on the missing bytes before it
// allocates much more than the input holds.
func (s *Stream) Fixed(field string, n int) []byte {
	if s.err != nil {
		return nil
	}
	if n < 0 {
		s.Fail("%s: negative length", field)
		return nil
	}
	s.buf = s.buf[:0]
	for len(s.buf) < n {
		start := len(s.buf)
		chunk := min(n-start, 1<<20)
		s.buf = slices.Grow(s.buf, chunk)[:start+chunk]
		if _, err := io.ReadFull(s.r, s.buf[start:]); err != nil {
			s.readErr(field, err)
			return nil
		}
	}
	return s.buf
}

// Bytes reads length-prefixed bytes of at most limit bytes.
func (s *Stream) Bytes(field string, limit int) []byte {
	n := s.Uvarint(field, uint64(limit))
	if s.err != nil {
		return nil
	}
	return s.Fixed(field, int(n))
}

// String reads a length-prefixed string of at most limit bytes.
func (s *Stream) String(field string, limit int) string { return string(s.Bytes(field, limit)) }
