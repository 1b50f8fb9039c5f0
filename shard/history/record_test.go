package history

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
		{kind: kindChange, seq: 1, at: at, change: Change{Author: "ann@acme.com", Action: "create", Tool: "t", Subject: "create a", Reason: "r", Key: "k",
			Ops: []Op{{Path: "wiki/pay/facts/a.md", Content: []byte("---\ntitle: A\n---\nbody\n")}}}},
		{kind: kindChange, seq: 2, at: at, change: Change{Author: "bob@acme.com", Action: "move",
			Ops: []Op{{Path: "wiki/pay/decisions/a.md", From: "wiki/pay/facts/a.md", Content: []byte("x"), HadBase: true, Base: [32]byte{1, 2, 3}},
				{Path: "inbox/pay/b.md", Remove: true}}}},
		{kind: kindLanded, seq: 1},
		{kind: kindAbandon, seq: 2},
	}
}

// normalise makes a decoded record comparable with its source.
func normalise(r *record) *record {
	c := *r
	c.change.Ops = append([]Op(nil), r.change.Ops...)
	for i := range c.change.Ops {
		if len(c.change.Ops[i].Content) == 0 {
			c.change.Ops[i].Content = nil
		}
	}
	return &c
}

func TestRecordRoundTrip(t *testing.T) {
	var all []byte
	for _, r := range seedRecords() {
		all = appendRecord(all, r)
	}
	var got []*record
	good, err := readRecords(bytes.NewReader(all), func(r *record) { got = append(got, r) })
	if err != nil || good != int64(len(all)) {
		t.Fatalf("read %d of %d: %v", good, len(all), err)
	}
	for i, r := range seedRecords() {
		if !reflect.DeepEqual(normalise(got[i]), normalise(r)) {
			t.Errorf("record %d:\n%+v\n%+v", i, got[i], r)
		}
	}
}

func TestRecordTornAndCorrupt(t *testing.T) {
	var all []byte
	for _, r := range seedRecords() {
		all = appendRecord(all, r)
	}
	first := len(appendRecord(nil, seedRecords()[0]))
	for _, tc := range []struct {
		name     string
		data     []byte
		wantGood int64
		torn     bool
		corrupt  bool
	}{
		{"cut in the header", all[:first+3], int64(first), true, false},
		{"cut in the payload", all[:first+20], int64(first), true, false},
		{"zeros after the end", append(append([]byte{}, all[:first]...), make([]byte, 64)...), int64(first), true, false},
		{"flipped byte in the middle", flip(all, first+12), int64(first), false, true},
		{"flipped byte in the last record", flip(all, len(all)-2), int64(len(all) - len(appendRecord(nil, seedRecords()[3]))), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good, err := readRecords(bytes.NewReader(tc.data), func(*record) {})
			if good != tc.wantGood || errors.Is(err, durable.ErrTorn) != tc.torn || errors.Is(err, durable.ErrCorrupt) != tc.corrupt {
				t.Fatalf("good %d err %v; want good %d torn %v corrupt %v", good, err, tc.wantGood, tc.torn, tc.corrupt)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xff
	return c
}

// FuzzDecodeRecord: the pending-log decoder never panics, refuses with
// errCorrupt, and what it accepts encodes back to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range seedRecords() {
		f.Add(appendRecord(nil, r)[durable.HeaderBytes:])
	}
	f.Add([]byte{})
	f.Add([]byte{kindChange, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeRecord(p)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		if b := appendRecord(nil, r)[durable.HeaderBytes:]; !bytes.Equal(b, p) {
			t.Fatalf("round trip changed the bytes:\n%x\n%x", p, b)
		}
	})
}
