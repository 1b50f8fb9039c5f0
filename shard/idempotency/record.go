package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/codec"
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
// byte 0 or 1 (internal/codec's primitives; varints in their minimal form). A record torn by a crash (the tail of the file) fails its
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

// Field limits of a record (and brain.MaxEmailBytes for its email). A
// record over them is refused when written (ErrTooLarge) and is corrupt
// when read.
const (
	MaxKeyBytes    = brain.MaxIdempotencyKeyBytes
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
	case len(r.email) > brain.MaxEmailBytes:
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
	b = codec.AppendVarint(b, r.at.UnixNano())
	b = codec.AppendString(b, r.email)
	b = codec.AppendString(b, r.key)
	switch r.kind {
	case kindIntent:
		b = codec.AppendString(b, r.tool)
		b = append(b, r.fp[:]...)
		b = codec.AppendVarint(b, int64(r.part))
		b = codec.AppendBytes(b, r.mark)
		b = codec.AppendBytes(b, r.answer)
	case kindCommit, kindAbort:
	case kindFinal:
		b = codec.AppendString(b, r.tool)
		b = append(b, r.fp[:]...)
		b = codec.AppendBool(b, r.isErr)
		b = codec.AppendBytes(b, r.answer)
	case kindPart:
		b = codec.AppendString(b, r.tool)
		b = append(b, r.fp[:]...)
		b = codec.AppendVarint(b, int64(r.part))
		b = codec.AppendBytes(b, r.answer)
	default:
		return dst, fmt.Errorf("idempotency: cannot encode record kind %s", r.kind)
	}
	payload := b[start+frameHeader:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b, nil
}

// decodeRecord decodes one record payload (without its frame). Slices in
// the record alias p. Every error wraps ErrCorrupt.
func decodeRecord(p []byte) (*record, error) {
	d := codec.NewDecoder(p)
	r := &record{kind: kind(d.Byte("kind"))}
	// Not d.Time: the journal writes the zero time's UnixNano like any
	// other, and reads it back the same way.
	r.at = time.Unix(0, d.Varint("at")).UTC()
	r.email = d.String("email", brain.MaxEmailBytes)
	r.key = d.String("key", MaxKeyBytes)
	switch r.kind {
	case kindIntent:
		r.tool = d.String("tool", MaxToolBytes)
		copy(r.fp[:], d.Fixed("fingerprint", len(r.fp)))
		r.part = readPart(d)
		r.mark = d.Bytes("mark", MaxMarkBytes)
		r.answer = d.Bytes("answer", MaxAnswerBytes)
	case kindCommit, kindAbort:
	case kindFinal:
		r.tool = d.String("tool", MaxToolBytes)
		copy(r.fp[:], d.Fixed("fingerprint", len(r.fp)))
		r.isErr = d.Bool("is_error")
		r.answer = d.Bytes("answer", MaxAnswerBytes)
	case kindPart:
		r.tool = d.String("tool", MaxToolBytes)
		copy(r.fp[:], d.Fixed("fingerprint", len(r.fp)))
		r.part = readPart(d)
		r.answer = d.Bytes("answer", MaxAnswerBytes)
	default:
		d.Fail("unknown record kind %d", byte(r.kind))
	}
	if err := d.Done("the record"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return r, nil
}

// readPart reads a part number: -1 (the whole call) or 0…maxParts-1.
func readPart(d *codec.Decoder) int {
	v := d.Varint("part")
	if v < Whole || v >= maxParts {
		d.Fail("part %d out of range", v)
		return 0
	}
	return int(v)
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
