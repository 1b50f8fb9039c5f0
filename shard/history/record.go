package history

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/internal/durable"
)

// The pending log is a sequence of segment files, each a sequence of
// records in internal/durable's frames, and each payload, in
// internal/codec's encoding, is a kind byte and
//
//	change:  uvarint seq · time at · str author · str action · str tool ·
//	         str subject · str reason · str key · uvarint ops ·
//	         per op: str path · str from · bytes content · bool remove ·
//	         bool had_base · 32 bytes base
//	landed:  uvarint seq (the caller made the change durable)
//	abandon: uvarint seq (the caller did not change the files)
//
// A record torn by a crash at the end of a segment is cut off when the log
// is opened (internal/durable's torn-tail rule).
const (
	kindChange  byte = 1
	kindLanded  byte = 2
	kindAbandon byte = 3
)

// Limits of a record's fields. Begin refuses a change over them; a record
// over them is corrupt when read.
const (
	maxPathBytes    = 4096
	maxFieldBytes   = 1024     // author, action, tool, key
	maxTextBytes    = 64 << 10 // subject, reason
	maxOps          = 4096
	maxRecordBytes  = 256 << 20
	maxContentBytes = 64 << 20 // one op's content
)

// errCorrupt reports bytes that are not a valid pending record.
var errCorrupt = errors.New("history: corrupt pending-log record")

// record is one decoded pending-log record.
type record struct {
	kind   byte
	seq    uint64
	at     time.Time // change
	change Change    // change
}

// appendRecord appends r, framed, to dst.
func appendRecord(dst []byte, r *record) []byte {
	start := len(dst)
	b := append(durable.Begin(dst), r.kind)
	b = codec.AppendUvarint(b, r.seq)
	if r.kind == kindChange {
		c := &r.change
		b = codec.AppendTime(b, r.at)
		for _, s := range []string{c.Author, c.Action, c.Tool, c.Subject, c.Reason, c.Key} {
			b = codec.AppendString(b, s)
		}
		b = codec.AppendUvarint(b, uint64(len(c.Ops)))
		for _, op := range c.Ops {
			b = codec.AppendString(b, op.Path)
			b = codec.AppendString(b, op.From)
			b = codec.AppendBytes(b, op.Content)
			b = codec.AppendBool(b, op.Remove)
			b = codec.AppendBool(b, op.HadBase)
			b = append(b, op.Base[:]...)
		}
	}
	return durable.Seal(b, start)
}

// decodeRecord decodes one payload (without its frame). Byte slices of the
// result alias p.
func decodeRecord(p []byte) (*record, error) {
	d := codec.NewDecoder(p)
	r := &record{kind: d.Byte("kind")}
	r.seq = d.Uvarint("seq")
	switch r.kind {
	case kindLanded, kindAbandon:
	case kindChange:
		c := &r.change
		r.at = d.Time("at")
		c.Author = d.String("author", maxFieldBytes)
		c.Action = d.String("action", maxFieldBytes)
		c.Tool = d.String("tool", maxFieldBytes)
		c.Subject = d.String("subject", maxTextBytes)
		c.Reason = d.String("reason", maxTextBytes)
		c.Key = d.String("key", maxFieldBytes)
		n := d.Count("ops", maxOps)
		if n > 0 {
			c.Ops = make([]Op, n)
		}
		for i := range c.Ops {
			op := &c.Ops[i]
			op.Path = d.String("path", maxPathBytes)
			op.From = d.String("from", maxPathBytes)
			op.Content = d.Bytes("content", maxContentBytes)
			op.Remove = d.Bool("remove")
			op.HadBase = d.Bool("had_base")
			copy(op.Base[:], d.Fixed("base", 32))
		}
	default:
		d.Fail("unknown record kind %d", r.kind)
	}
	if r.seq == 0 {
		d.Fail("sequence number 0")
	}
	if err := d.Done("the record"); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return r, nil
}

// readRecords reads framed records from r until the end, calling fn for
// each, and returns the offset just past the last good one; a torn tail is
// durable.ErrTorn, any other bad frame or record wraps durable.ErrCorrupt.
func readRecords(r io.Reader, fn func(*record)) (good int64, err error) {
	return durable.Read(r, maxRecordBytes, func(p []byte) error {
		rec, err := decodeRecord(p)
		if err == nil {
			fn(rec)
		}
		return err
	})
}
