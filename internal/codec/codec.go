// Package codec is the one binary encoding of what Brainstem's wire frames,
// records and snapshots hold (internal/durable frames records and checksums
// snapshots): unsigned and zig-zag varints (always the minimal form),
// length-prefixed bytes and strings, one-byte booleans and times as varint
// Unix nanoseconds (0 for the zero time).
//
// Encoding appends to a byte slice. Decoding has two sources with the same
// primitives: a Decoder over a byte slice, whose bytes
// and strings alias the input, for frames and records held in memory; and a
// Stream over an io.Reader, whose byte reads reuse one buffer, for
// snapshots too large to hold twice (a Decoder also refuses a varint
// that is not in its minimal form). Both keep the first error and return
// zero values after it, so a caller decodes a whole message and checks Err
// once. Every length and count is bounded by a limit the caller gives, and
// a Decoder also by the bytes left, so hostile input cannot make a decoder
// allocate more than the input holds. Errors wrap ErrMalformed or, for a
// length or count over its limit, ErrTooLong, and name the field.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

var (
	// ErrMalformed reports input that is not a valid encoding: cut short,
	// a bad or non-minimal varint, a boolean byte other than 0 or 1.
	ErrMalformed = errors.New("codec: malformed input")
	// ErrTooLong reports a length or count over the limit the caller set.
	ErrTooLong = errors.New("codec: field over its limit")
)

// AppendUvarint appends v as an unsigned varint.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendVarint appends v as a zig-zag varint.
func AppendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// AppendBytes appends p prefixed with its length.
func AppendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// AppendString appends s prefixed with its length.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBool appends v as one byte, 0 or 1.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendTime appends t as a varint of Unix nanoseconds, 0 for the zero time.
func AppendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

// AppendUint32 appends v as four little-endian bytes.
func AppendUint32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// AppendFloat64 appends v as the eight little-endian bytes of its IEEE 754
// bits: every score crosses the wire exactly.
func AppendFloat64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

// timeOf is the time a decoded varint stands for.
func timeOf(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

// unzigzag is the signed value of a zig-zag varint's unsigned one.
func unzigzag(ux uint64) int64 { return int64(ux>>1) ^ -int64(ux&1) }

// littleEndian is the value of up to eight little-endian bytes (0 for none).
func littleEndian(b []byte) uint64 {
	var v uint64
	for i, c := range b {
		v |= uint64(c) << (8 * i)
	}
	return v
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

// state is the sticky error both decoders share.
type state struct{ err error }

// Err returns the first error, or nil.
func (s *state) Err() error { return s.err }

// Fail records err (the first one sticks) wrapped in ErrMalformed, for a
// caller's own checks of decoded values ("unknown kind 7").
func (s *state) Fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// bool is the boolean byte v of field, failing unless it is 0 or 1.
func (s *state) bool(field string, v byte) bool {
	if v > 1 {
		s.Fail("%s: boolean byte %d", field, v)
	}
	return v == 1
}

func (s *state) tooLong(field string, n, limit uint64) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s is %d, the limit is %d", ErrTooLong, field, n, limit)
	}
}
