package idempotency

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/internal/durable"
)

// The journal file is a sequence of records in internal/durable's frames
// (little-endian headers; a journal written before issue 37, with
// big-endian ones, is converted when it is opened), and each payload is
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
// byte 0 or 1 (internal/codec's primitives; varints in their minimal
// form). A record torn by a crash (the tail of the file) is cut off when
// the journal is opened (internal/durable's torn-tail rule).

type kind byte

const (
	kindIntent kind = 1
	kindCommit kind = 2
	kindAbort  kind = 3
	kindFinal  kind = 4
	kindPart   kind = 5
)

var kindNames = [...]string{kindIntent: "intent", kindCommit: "commit", kindAbort: "abort", kindFinal: "final", kindPart: "part"}

func (k kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
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
	b := append(durable.Begin(dst), byte(r.kind))
	b = codec.AppendVarint(b, r.at.UnixNano())
	b = codec.AppendString(b, r.email)
	b = codec.AppendString(b, r.key)
	switch r.kind {
	case kindIntent, kindFinal, kindPart: // tool · fingerprint · is_error or part · [mark] · answer
		b = codec.AppendString(b, r.tool)
		b = append(b, r.fp[:]...)
		if r.kind == kindFinal {
			b = codec.AppendBool(b, r.isErr)
		} else {
			b = codec.AppendVarint(b, int64(r.part))
		}
		if r.kind == kindIntent {
			b = codec.AppendBytes(b, r.mark)
		}
		b = codec.AppendBytes(b, r.answer)
	case kindCommit, kindAbort:
	default:
		return dst, fmt.Errorf("idempotency: cannot encode record kind %s", r.kind)
	}
	return durable.Seal(b, start), nil
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
	case kindIntent, kindFinal, kindPart: // as appendRecord writes them
		r.tool = d.String("tool", MaxToolBytes)
		copy(r.fp[:], d.Fixed("fingerprint", len(r.fp)))
		if r.kind == kindFinal {
			r.isErr = d.Bool("is_error")
		} else {
			r.part = readPart(d)
		}
		if r.kind == kindIntent {
			r.mark = d.Bytes("mark", MaxMarkBytes)
		}
		r.answer = d.Bytes("answer", MaxAnswerBytes)
	case kindCommit, kindAbort:
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
// each, and returns the offset just past the last good record. A torn
// tail is durable.ErrTorn; a bad frame or record with good data after it
// wraps durable.ErrCorrupt. With legacy, the frame headers are big-endian
// (a journal written before issue 37).
func readRecords(r io.Reader, legacy bool, fn func(*record) error) (good int64, err error) {
	read := durable.Read
	if legacy {
		read = durable.ReadLegacy
	}
	return read(r, MaxRecordBytes, func(p []byte) error {
		rec, err := decodeRecord(p)
		if err != nil {
			return err
		}
		return fn(rec)
	})
}
