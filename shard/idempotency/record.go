package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// The journal file is a sequence of records, each framed as
//
//	offset size field
//	0      4    length   of the payload, big-endian u32
//	4      4    checksum CRC-32C (Castagnoli) of the payload, big-endian u32
//	8      n    payload
//
// and each payload is
//
//	u8     kind     (kindIntent, kindCommit, kindAbort, kindFinal, kindPart)
//	varint at       unix nanoseconds of the record
//	str    email    the caller (canonical verified email)
//	str    key      the idempotency key
//
// followed, by kind, by
//
//	intent: str tool · 32 bytes fingerprint · varint part · bytes mark · bytes answer
//	commit: nothing (the key's open intent reached the disk)
//	abort:  nothing (the key's open intent did not)
//	final:  str tool · 32 bytes fingerprint · bool is_error · bytes answer
//	part:   str tool · 32 bytes fingerprint · varint part · bytes answer
//
// where str and bytes are a uvarint length and the bytes, and bool is one
// byte 0 or 1. A record torn by a crash (the tail of the file) fails its
// length or checksum and is cut off when the journal is opened.

type kind byte

const (
	kindIntent kind = 1
	kindCommit kind = 2
	kindAbort  kind = 3
	kindFinal  kind = 4
	kindPart   kind = 5
)

func (k kind) String() string {
	switch k {
	case kindIntent:
		return "intent"
	case kindCommit:
		return "commit"
	case kindAbort:
		return "abort"
	case kindFinal:
		return "final"
	case kindPart:
		return "part"
	}
	return fmt.Sprintf("kind_%d", byte(k))
}

// Field limits of a record. A record over them is refused when written
// (ErrTooLarge) and is corrupt when read.
const (
	MaxEmailBytes  = 320
	MaxKeyBytes    = 128
	MaxToolBytes   = 128
	MaxMarkBytes   = 64 << 10
	MaxAnswerBytes = 16 << 20
	// MaxRecordBytes bounds one record's payload.
	MaxRecordBytes = MaxAnswerBytes + MaxMarkBytes + 1<<10
	frameHeader    = 8
)

// Record errors.
var (
	// ErrCorrupt reports bytes that are not a valid record.
	ErrCorrupt = errors.New("idempotency: corrupt journal record")
	// ErrTooLarge reports a record field over its limit.
	ErrTooLarge = errors.New("idempotency: record too large")
)

// record is one decoded journal record.
type record struct {
	kind   kind
	at     time.Time
	email  string
	key    string
	tool   string   // intent, final, part
	fp     [32]byte // intent, final, part
	part   int      // intent, part
	mark   []byte   // intent
	answer []byte   // intent, final, part
	isErr  bool     // final
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends the framed record to dst.
func appendRecord(dst []byte, r *record) ([]byte, error) {
	switch {
	case len(r.email) > MaxEmailBytes:
		return dst, fmt.Errorf("%w: email of %d bytes", ErrTooLarge, len(r.email))
	case len(r.key) > MaxKeyBytes:
		return dst, fmt.Errorf("%w: key of %d bytes", ErrTooLarge, len(r.key))
	case len(r.tool) > MaxToolBytes:
		return dst, fmt.Errorf("%w: tool name of %d bytes", ErrTooLarge, len(r.tool))
	case len(r.mark) > MaxMarkBytes:
		return dst, fmt.Errorf("%w: mark of %d bytes", ErrTooLarge, len(r.mark))
	case len(r.answer) > MaxAnswerBytes:
		return dst, fmt.Errorf("%w: answer of %d bytes, the limit is %d", ErrTooLarge, len(r.answer), MaxAnswerBytes)
	}
	start := len(dst)
	b := append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, byte(r.kind))
	b = binary.AppendVarint(b, r.at.UnixNano())
	b = appendStr(b, r.email)
	b = appendStr(b, r.key)
	switch r.kind {
	case kindIntent:
		b = appendStr(b, r.tool)
		b = append(b, r.fp[:]...)
		b = binary.AppendVarint(b, int64(r.part))
		b = appendStr(b, string(r.mark))
		b = appendStr(b, string(r.answer))
	case kindCommit, kindAbort:
	case kindFinal:
		b = appendStr(b, r.tool)
		b = append(b, r.fp[:]...)
		if r.isErr {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = appendStr(b, string(r.answer))
	case kindPart:
		b = appendStr(b, r.tool)
		b = append(b, r.fp[:]...)
		b = binary.AppendVarint(b, int64(r.part))
		b = appendStr(b, string(r.answer))
	default:
		return dst, fmt.Errorf("idempotency: cannot encode record kind %s", r.kind)
	}
	payload := b[start+frameHeader:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord decodes one record payload (without its frame). Slices in
// the record alias p.
func decodeRecord(p []byte) (*record, error) {
	d := decoder{b: p}
	r := &record{kind: kind(d.byte("kind"))}
	r.at = time.Unix(0, d.varint("at")).UTC()
	r.email = string(d.bytes("email", MaxEmailBytes))
	r.key = string(d.bytes("key", MaxKeyBytes))
	switch r.kind {
	case kindIntent:
		r.tool = string(d.bytes("tool", MaxToolBytes))
		copy(r.fp[:], d.fixed("fingerprint", 32))
		r.part = d.part()
		r.mark = d.bytes("mark", MaxMarkBytes)
		r.answer = d.bytes("answer", MaxAnswerBytes)
	case kindCommit, kindAbort:
	case kindFinal:
		r.tool = string(d.bytes("tool", MaxToolBytes))
		copy(r.fp[:], d.fixed("fingerprint", 32))
		switch d.byte("is_error") {
		case 0:
		case 1:
			r.isErr = true
		default:
			d.fail("is_error is not 0 or 1")
		}
		r.answer = d.bytes("answer", MaxAnswerBytes)
	case kindPart:
		r.tool = string(d.bytes("tool", MaxToolBytes))
		copy(r.fp[:], d.fixed("fingerprint", 32))
		r.part = d.part()
		r.answer = d.bytes("answer", MaxAnswerBytes)
	default:
		d.fail("unknown record kind %d", byte(r.kind))
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the record", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// decoder reads primitives; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}

func (d *decoder) byte(field string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("%s missing", field)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 || n != varintLen(v) {
		d.fail("%s: bad varint", field) // malformed or not minimal
		return 0
	}
	d.b = d.b[n:]
	return v
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// part reads a part number: -1 (the whole call) or 0…maxParts-1.
func (d *decoder) part() int {
	v := d.varint("part")
	if v < Whole || v >= maxParts {
		d.fail("part %d out of range", v)
		return 0
	}
	return int(v)
}

func (d *decoder) fixed(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("%s: %d bytes left, want %d", field, len(d.b), n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(field string, limit int) []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || k != uvarintLen(n) {
		d.fail("%s: bad length", field)
		return nil
	}
	d.b = d.b[k:]
	if n > uint64(limit) {
		d.fail("%s of %d bytes, the limit is %d", field, n, limit)
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("%s of %d bytes, only %d left", field, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// readRecords reads framed records from r until the end, calling fn for
// each. It returns the offset just past the last good record and whether
// the rest of the input (if any) is a torn tail: a frame cut short or a
// last frame that fails its checksum. Anything else bad — a bad frame with
// good data after it — is reported as ErrCorrupt with the offset of the
// last good record.
func readRecords(r io.Reader, fn func(*record) error) (good int64, err error) {
	var hdr [frameHeader]byte
	for {
		_, rerr := io.ReadFull(r, hdr[:])
		if rerr == io.EOF {
			return good, nil
		}
		if rerr != nil {
			if errors.Is(rerr, io.ErrUnexpectedEOF) {
				return good, tornTail{}
			}
			return good, rerr
		}
		size := binary.BigEndian.Uint32(hdr[:4])
		if size > MaxRecordBytes || size == 0 {
			return good, rest(r, fmt.Errorf("%w: frame of %d bytes at offset %d", ErrCorrupt, size, good))
		}
		// Read what is there rather than allocate what the header claims.
		p, rerr := io.ReadAll(io.LimitReader(r, int64(size)))
		if rerr != nil {
			return good, rerr
		}
		if len(p) < int(size) {
			return good, tornTail{}
		}
		if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return good, rest(r, fmt.Errorf("%w: checksum mismatch at offset %d", ErrCorrupt, good))
		}
		rec, derr := decodeRecord(p)
		if derr != nil {
			return good, rest(r, fmt.Errorf("%w (at offset %d)", derr, good))
		}
		if err := fn(rec); err != nil {
			return good, err
		}
		good += frameHeader + int64(size)
	}
}

// tornTail is the error of a record cut short by a crash at the end of the
// file: the journal is truncated to the last good record.
type tornTail struct{}

func (tornTail) Error() string { return "idempotency: torn record at the end of the journal" }

// rest decides whether a bad frame is a torn tail or corruption in the
// middle of the journal: it is a tail when nothing but zero bytes follows
// (a crash can leave a file extended with zeros past its last write).
func rest(r io.Reader, err error) error {
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		for _, c := range buf[:n] {
			if c != 0 {
				return err
			}
		}
		if rerr == io.EOF {
			return tornTail{}
		}
		if rerr != nil {
			return err
		}
	}
}
