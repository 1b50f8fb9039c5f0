package idempotency

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/brainstem/brainstem/internal/durable"
)

func seedRecords() []*record {
	at := time.Unix(0, 1764486000123456789).UTC()
	return []*record{
		{kind: kindIntent, at: at, email: "ann@acme.com", key: "k-1", tool: "brain_write", fp: fp("f"), part: Whole, mark: []byte(`{"op":"create"}`), answer: []byte(`{"id":"a"}`)},
		{kind: kindIntent, at: at, email: "ann@acme.com", key: "k-1", tool: "brain_ingest_raw", fp: fp("g"), part: 99, mark: []byte(`{}`), answer: []byte(`{}`)},
		{kind: kindCommit, at: at, email: "ann@acme.com", key: "k-1"},
		{kind: kindAbort, at: at, email: "b@c.d", key: "x"},
		{kind: kindFinal, at: at, email: "ann@acme.com", key: "k-1", tool: "brain_update", fp: fp("h"), isErr: true, answer: []byte(`{"error":{}}`)},
		{kind: kindPart, at: at, email: "ann@acme.com", key: "k-1", tool: "brain_ingest_raw", fp: fp("i"), part: 3, answer: []byte(`{"status":"created"}`)},
	}
}

// FuzzDecodeRecord: the record decoder never panics, and whatever it
// accepts re-encodes to exactly the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range seedRecords() {
		b, err := appendRecord(nil, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[durable.HeaderBytes:])
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeRecord(p)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		b, err := appendRecord(nil, r)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v (%+v)", err, r)
		}
		if !bytes.Equal(b[durable.HeaderBytes:], p) {
			t.Fatalf("round trip changed the bytes:\n%x\n%x", p, b[durable.HeaderBytes:])
		}
	})
}

// FuzzReadRecords: reading any file never panics; the records it returns
// are exactly the good prefix, and a journal opened on it works.
func FuzzReadRecords(f *testing.F) {
	var all []byte
	for _, r := range seedRecords() {
		all, _ = appendRecord(all, r)
	}
	f.Add(all)
	f.Add(all[:len(all)-3])
	f.Add(append(bytes.Clone(all), 0, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []*record
		good, err := readRecords(bytes.NewReader(b), false, func(r *record) error { got = append(got, r); return nil })
		if good < 0 || good > int64(len(b)) {
			t.Fatalf("good offset %d of %d bytes", good, len(b))
		}
		if err != nil && !errors.Is(err, durable.ErrCorrupt) && !errors.Is(err, durable.ErrTorn) {
			t.Fatalf("error of another kind: %v", err)
		}
		var again []*record
		if _, err := readRecords(bytes.NewReader(b[:good]), false, func(r *record) error { again = append(again, r); return nil }); err != nil {
			t.Fatalf("the good prefix does not read cleanly: %v", err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatal("the good prefix reads differently")
		}
	})
}
