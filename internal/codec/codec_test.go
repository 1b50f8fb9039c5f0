package codec

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func appendAll(b []byte) []byte {
	b = AppendUvarint(b, 300)
	b = AppendVarint(b, -5)
	b = AppendBytes(b, []byte("raw"))
	b = AppendString(b, "héllo")
	b = AppendBool(b, true)
	b = AppendTime(b, time.Unix(1700000000, 42))
	b = AppendTime(b, time.Time{})
	b = AppendUint32(b, 0xdeadbeef)
	b = AppendFloat64(b, -1.25e-300)
	return append(b, 7)
}

func TestRoundTrip(t *testing.T) {
	enc := appendAll(nil)
	check := func(t *testing.T, u uint64, v int64, raw []byte, s string, ok bool, at, zero time.Time, w uint32, last byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if u != 300 || v != -5 || string(raw) != "raw" || s != "héllo" || !ok || !at.Equal(time.Unix(1700000000, 42)) || !zero.IsZero() || w != 0xdeadbeef || last != 7 {
			t.Fatalf("decoded %d %d %q %q %v %v %v %x %d", u, v, raw, s, ok, at, zero, w, last)
		}
	}
	t.Run("decoder", func(t *testing.T) {
		d := NewDecoder(enc)
		u, v, raw, s, ok := d.Uvarint("u"), d.Varint("v"), d.Bytes("raw", 10), d.String("s", 10), d.Bool("ok")
		at, zero, w := d.Time("at"), d.Time("zero"), d.Uint32("w")
		if f := d.Float64("f"); f != -1.25e-300 {
			t.Fatalf("float %v", f)
		}
		last := d.Byte("last")
		check(t, u, v, raw, s, ok, at, zero, w, last, d.Done("the test record"))
	})
	t.Run("stream", func(t *testing.T) {
		d := NewStream(bytes.NewReader(enc))
		u, v, raw := d.Uvarint("u", 1000), d.Varint("v"), string(d.Bytes("raw", 10))
		s, ok := d.String("s", 10), d.Bool("ok")
		at, zero, w := d.Time("at"), d.Time("zero"), d.Uint32("w")
		d.Fixed("f", 8)
		last := d.Byte("last")
		check(t, u, v, []byte(raw), s, ok, at, zero, w, last, d.Err())
	})
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(d *Decoder)
		want error
	}{
		{"empty varint", nil, func(d *Decoder) { d.Uvarint("n") }, ErrMalformed},
		{"non-minimal uvarint", []byte{0x81, 0x00}, func(d *Decoder) { d.Uvarint("n") }, ErrMalformed},
		{"non-minimal varint", []byte{0x80, 0x00}, func(d *Decoder) { d.Varint("n") }, ErrMalformed},
		{"bytes over limit", AppendBytes(nil, []byte("abcdef")), func(d *Decoder) { d.Bytes("b", 3) }, ErrTooLong},
		{"bytes cut short", AppendUvarint(nil, 5), func(d *Decoder) { d.Bytes("b", 10) }, ErrMalformed},
		{"bool byte 2", []byte{2}, func(d *Decoder) { d.Bool("b") }, ErrMalformed},
		{"count over limit", AppendUvarint(nil, 9), func(d *Decoder) { d.Count("c", 8) }, ErrTooLong},
		{"count over the bytes left", AppendUvarint(nil, 5), func(d *Decoder) { d.Count("c", 8) }, ErrMalformed},
		{"fixed cut short", []byte{1, 2}, func(d *Decoder) { d.Uint32("w") }, ErrMalformed},
		{"trailing bytes", []byte{1, 2}, func(d *Decoder) { d.Byte("b"); _ = d.Done("x") }, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.in)
			tc.read(d)
			if !errors.Is(d.Err(), tc.want) {
				t.Fatalf("err = %v, want %v", d.Err(), tc.want)
			}
			// Sticky: later reads return zero values and keep the error.
			if d.Uvarint("later") != 0 || d.Bytes("later", 10) != nil || !errors.Is(d.Err(), tc.want) {
				t.Fatal("the first error did not stick")
			}
		})
	}
}

func TestStreamRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(s *Stream)
		want error
	}{
		{"truncated", nil, func(s *Stream) { s.Byte("b") }, ErrMalformed},
		{"count over limit", AppendUvarint(nil, 9), func(s *Stream) { s.Uvarint("c", 8) }, ErrTooLong},
		{"bytes cut short", AppendUvarint(nil, 3<<20), func(s *Stream) { s.Bytes("b", 4<<20) }, ErrMalformed},
		{"bool byte 3", []byte{3}, func(s *Stream) { s.Bool("b") }, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(bytes.NewReader(tc.in))
			tc.read(s)
			if !errors.Is(s.Err(), tc.want) {
				t.Fatalf("err = %v, want %v", s.Err(), tc.want)
			}
		})
	}
}

// FuzzDecoder holds the two decoders to the same answers on any input.
func FuzzDecoder(f *testing.F) {
	f.Add(appendAll(nil))
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder(in)
		s := NewStream(bytes.NewReader(in))
		for i := 0; i < 8 && d.Err() == nil; i++ {
			a, b := d.Bytes("b", 1<<10), s.Bytes("b", 1<<10)
			if d.Err() == nil && (s.Err() != nil || !bytes.Equal(a, b)) {
				t.Fatalf("decoder read %q, stream %q (%v)", a, b, s.Err())
			}
			x, y := d.Varint("v"), s.Varint("v")
			if d.Err() == nil && (s.Err() != nil || x != y) {
				t.Fatalf("decoder read %d, stream %d (%v)", x, y, s.Err())
			}
		}
	})
}

// Uint32 reads four little-endian bytes.
func (d *Decoder) Uint32(field string) uint32 { return uint32(littleEndian(d.Fixed(field, 4))) }
