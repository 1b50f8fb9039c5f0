package codec

import (
	"encoding/binary"
	"math"
	"time"
)

// Decoder decodes primitives from a byte slice. Bytes and strings it
// returns alias the input. The first error sticks.
type Decoder struct {
	state
	b []byte
}

// NewDecoder returns a Decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Len returns the number of bytes not read yet.
func (d *Decoder) Len() int { return len(d.b) }

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != uvarintLen(v) {
		d.Fail("%s: bad varint", field)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Varint reads a zig-zag varint.
func (d *Decoder) Varint(field string) int64 { return unzigzag(d.Uvarint(field)) }

// Byte reads one byte.
func (d *Decoder) Byte(field string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.Fail("%s: missing", field)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// Bool reads a boolean byte, 0 or 1.
func (d *Decoder) Bool(field string) bool { return d.bool(field, d.Byte(field)) }

// Time reads a time written by AppendTime.
func (d *Decoder) Time(field string) time.Time { return timeOf(d.Varint(field)) }

// Float64 reads a float written by AppendFloat64.
func (d *Decoder) Float64(field string) float64 {
	return math.Float64frombits(littleEndian(d.Fixed(field, 8)))
}

// Fixed reads exactly n bytes.
func (d *Decoder) Fixed(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b) < n {
		d.Fail("%s: %d bytes left, want %d", field, len(d.b), n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// Bytes reads length-prefixed bytes of at most limit bytes.
func (d *Decoder) Bytes(field string, limit int) []byte {
	n := d.Uvarint(field)
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) {
		d.tooLong(field+" length", n, uint64(limit))
		return nil
	}
	if n > uint64(len(d.b)) {
		d.Fail("%s: length %d exceeds the %d bytes left", field, n, len(d.b))
		return nil
	}
	return d.Fixed(field, int(n))
}

// String reads a length-prefixed string of at most limit bytes.
func (d *Decoder) String(field string, limit int) string { return string(d.Bytes(field, limit)) }

// Count reads an element count of at most limit, and at most the bytes
// left (every element takes at least one byte), so that a hostile count
// cannot make the caller allocate.
func (d *Decoder) Count(field string, limit int) int {
	n := d.Uvarint(field)
	if d.err != nil {
		return 0
	}
	if n > uint64(limit) {
		d.tooLong(field+" count", n, uint64(limit))
		return 0
	}
	if n > uint64(len(d.b)) {
		d.Fail("%s: %d entries cannot fit in %d bytes", field, n, len(d.b))
		return 0
	}
	return int(n)
}

// Done fails unless every byte was read, and returns Err.
func (d *Decoder) Done(what string) error {
	if d.err == nil && len(d.b) > 0 {
		d.Fail("%d bytes after the end of %s", len(d.b), what)
	}
	return d.err
}
