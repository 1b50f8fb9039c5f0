package logging

import (
	"bytes"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSeconds: the process logger writes durations as seconds.
func TestSeconds(t *testing.T) {
	var b bytes.Buffer
	l, err := New(&b, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("x", "wait", 1500*time.Millisecond, slog.Group("g", "d", 2*time.Second))
	if s := b.String(); !strings.Contains(s, `"wait":1.5`) || !strings.Contains(s, `"g":{"d":2}`) {
		t.Fatalf("durations not in seconds: %s", s)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ format, level, want string }{
		{"xml", "info", `format "xml" must be json or text`},
		{"json", "loud", `"loud" must be debug, info, warn or error`},
	} {
		if _, err := New(&bytes.Buffer{}, tc.format, tc.level); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) = %v, want %q", tc.format, tc.level, err, tc.want)
		}
	}
	for _, ok := range []string{"debug", "INFO", "", "warning", "Error"} {
		if _, err := ParseLevel(ok); err != nil {
			t.Errorf("ParseLevel(%q): %v", ok, err)
		}
	}
}

// commitID has the shape of go-git's plumbing.Hash: a [20]byte whose
// String is its hex.
type commitID [20]byte

func (h commitID) String() string { return "id:" + hex.EncodeToString(h[:]) }

// TestByteArraysAsHex: a commit id (a byte array with a String method),
// a digest without one, and a slice of commit ids are logged as text in
// both formats, never as lists of numbers; byte slices and other arrays
// are left to slog.
func TestByteArraysAsHex(t *testing.T) {
	var id commitID
	id[0], id[19] = 0xab, 0x01
	sum := [4]byte{0xde, 0xad, 0xbe, 0xef}
	for _, format := range []string{"json", "text"} {
		var b bytes.Buffer
		l, err := New(&b, format, "info")
		if err != nil {
			t.Fatal(err)
		}
		l.Info("x", "head", id, "sum", sum, "known", []commitID{id}, "ints", [2]int{1, 2}, "raw", []byte("hi"))
		s := b.String()
		want := "id:ab" + strings.Repeat("00", 18) + "01"
		if !strings.Contains(s, want) || !strings.Contains(s, "deadbeef") || strings.Count(s, want) != 2 {
			t.Errorf("%s: commit ids and digests not as hex: %s", format, s)
		}
		if strings.Contains(s, "[171") || strings.Contains(s, "171 0 0") || strings.Contains(s, "222,173") {
			t.Errorf("%s: a byte array logged as numbers: %s", format, s)
		}
	}
	if _, ok := Hex([2]int{1, 2}); ok {
		t.Error("Hex takes an int array")
	}
	if _, ok := Hex(nil); ok {
		t.Error("Hex takes nil")
	}
}
