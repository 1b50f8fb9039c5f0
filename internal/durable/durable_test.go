package durable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func frames(payloads ...string) []byte {
	var b []byte
	for _, p := range payloads {
		start := len(b)
		b = Seal(append(Begin(b), p...), start)
	}
	return b
}

// bigEndian re-frames b's frames with big-endian headers, as the
// idempotency journal wrote them before issue 37.
func bigEndian(t *testing.T, b []byte) []byte {
	t.Helper()
	var out []byte
	if _, err := Read(bytes.NewReader(b), 1<<20, func(p []byte) error {
		out = binary.BigEndian.AppendUint32(out, uint32(len(p)))
		out = binary.BigEndian.AppendUint32(out, Checksum(p))
		out = append(out, p...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func readAll(r io.Reader, legacy bool) ([]string, int64, error) {
	var got []string
	read := Read
	if legacy {
		read = ReadLegacy
	}
	good, err := read(r, 1<<10, func(p []byte) error {
		if string(p) == "refuse" {
			return errors.New("refused")
		}
		got = append(got, string(p))
		return nil
	})
	return got, good, err
}

func TestFrameLayout(t *testing.T) {
	b := frames("abc")
	want := append(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 3), Checksum([]byte("abc"))), "abc"...)
	if !bytes.Equal(b, want) {
		t.Fatalf("frame %x, want %x", b, want)
	}
}

func TestReadTornAndCorrupt(t *testing.T) {
	all := frames("first", "second record", "third")
	first := int64(HeaderBytes + len("first"))
	last := int64(len(all) - HeaderBytes - len("third"))
	flip := func(i int) []byte { c := bytes.Clone(all); c[i] ^= 0xff; return c }
	for _, tc := range []struct {
		name          string
		data          []byte
		good          int64
		torn, corrupt bool
	}{
		{"whole", all, int64(len(all)), false, false},
		{"empty", nil, 0, false, false},
		{"cut in the header", all[:first+3], first, true, false},
		{"cut in the payload", all[:first+10], first, true, false},
		{"zeros after the end", append(bytes.Clone(all[:first]), make([]byte, 40)...), first, true, false},
		{"flipped byte in the middle", flip(int(first) + 10), first, false, true},
		{"flipped byte in the last record", flip(len(all) - 1), last, true, false},
		{"length over the limit", append(bytes.Clone(all[:first]), 0xff, 0xff, 0, 0, 1, 2, 3, 4, 5), first, false, true},
		{"refused payload", append(frames("first"), frames("refuse", "x")...), first, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, good, err := readAll(bytes.NewReader(tc.data), false)
			if good != tc.good || errors.Is(err, ErrTorn) != tc.torn || errors.Is(err, ErrCorrupt) != tc.corrupt {
				t.Fatalf("good %d err %v; want good %d torn %v corrupt %v", good, err, tc.good, tc.torn, tc.corrupt)
			}
		})
	}
}

func TestLegacy(t *testing.T) {
	le := frames("one", "two")
	be := bigEndian(t, le)
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"little-endian", le, false},
		{"big-endian", be, true},
		{"empty", nil, false},
		{"garbage", []byte("not a journal at all"), false},
		{"torn after a big-endian frame", be[:len(be)-2], true},
	} {
		if legacy := Legacy(bytes.NewReader(tc.data), 1<<10); legacy != tc.want {
			t.Errorf("%s: legacy %v, want %v", tc.name, legacy, tc.want)
		}
	}
	got, good, err := readAll(bytes.NewReader(be), true)
	if err != nil || good != int64(len(be)) || len(got) != 2 || got[1] != "two" {
		t.Fatalf("legacy read %q, %d of %d: %v", got, good, len(be), err)
	}
}

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	a := NewFile(f, 0)
	end, err := a.Append(frames("a"))
	if err != nil || end != int64(HeaderBytes+1) || a.Size() != end {
		t.Fatalf("append: %d %v", end, err)
	}
	if err := a.SyncTo(end); err != nil {
		t.Fatal(err)
	}
	if err := a.SyncTo(end); err != nil { // already durable: no fsync
		t.Fatal(err)
	}
	if err := a.Sync(); err != nil || a.Close() != nil {
		t.Fatal(err)
	}
	// A closed file refuses the write; it cannot be cut off either: broken.
	if _, err := a.Append(frames("b")); err == nil || !errors.Is(err, ErrBroken) || !errors.Is(a.broken, ErrBroken) {
		t.Fatalf("append to a closed file: %v", err)
	}
	if err := CopyFile(path, path+".copy"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path + ".copy"); !bytes.Equal(b, frames("a")) {
		t.Fatalf("copy %x", b)
	}
}

func TestSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	if err := WriteSnapshot(path, 0o600, func(w io.Writer) error { _, err := w.Write([]byte("state")); return err }); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if want := binary.LittleEndian.AppendUint32([]byte("state"), Checksum([]byte("state"))); !bytes.Equal(raw, want) {
		t.Fatalf("snapshot %x, want %x", raw, want)
	}
	check := func(b []byte) error {
		r := NewSnapshotReader(bytes.NewReader(b))
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		return r.Verify()
	}
	if err := check(raw); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(raw)
	flipped[1] ^= 1
	for name, b := range map[string][]byte{"flipped": flipped, "cut": raw[:len(raw)-1], "trailing": append(bytes.Clone(raw), 0)} {
		if err := check(b); !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := WriteSnapshot(path, 0o600, func(io.Writer) error { return errors.New("no") }); err == nil {
		t.Fatal("a failed write replaced the snapshot")
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, raw) {
		t.Fatal("a failed write changed the snapshot")
	}
}

// FuzzRead: reading any bytes never panics, the error is torn or corrupt,
// and the good prefix reads cleanly to the same payloads, in either byte
// order.
func FuzzRead(f *testing.F) {
	all := frames("one", "two", "three")
	f.Add(all, false)
	f.Add(all[:len(all)-2], false)
	f.Add(append(bytes.Clone(all), 0, 0, 0), false)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, b []byte, legacy bool) {
		got, good, err := readAll(bytes.NewReader(b), legacy)
		if good < 0 || good > int64(len(b)) {
			t.Fatalf("good offset %d of %d bytes", good, len(b))
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTorn) {
			t.Fatalf("error of another kind: %v", err)
		}
		again, _, err := readAll(bytes.NewReader(b[:good]), legacy)
		if err != nil || len(again) != len(got) {
			t.Fatalf("the good prefix reads %q (%v), the whole %q", again, err, got)
		}
		_ = Legacy(bytes.NewReader(b), 1<<10)
	})
}
