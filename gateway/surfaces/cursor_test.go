package surfaces

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/gateway/edge"
)

// testCursorSigner is a cursor signer with a key of its own.
func testCursorSigner(t testing.TB) *CursorSigner {
	t.Helper()
	cs, err := NewCursorSigner(nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestResourceCursors: a cursor the gateway made reads back as it was for
// the caller it was made for; anything else is ErrBadCursor: another
// caller's, another key's, a changed byte, and the unsigned cursors of
// before (issue 34).
func TestResourceCursors(t *testing.T) {
	cs, other := testCursorSigner(t), testCursorSigner(t)
	const alice = "alice@example.com"
	for _, c := range []ResourceCursor{{Wing: "payments"}, {Wing: "people-ops", Shard: "facts/x"}} {
		got, ok, err := cs.Decode(alice, cs.Encode(alice, c))
		if err != nil || !ok || got != c {
			t.Errorf("round trip of %+v: %+v %v %v", c, got, ok, err)
		}
	}
	issued := cs.Encode(alice, ResourceCursor{Wing: "payments", Shard: "cGF5bWVudHMvZmFjdHMveA"})
	raw, _ := base64.StdEncoding.DecodeString(issued)
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 1
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, bad := range []string{"x", "!!!!", "bm90IGEgY3Vyc29y", "e30=" /* {} */, "eyJ3IjoicGF5bWVudHMifQ==", /* {"w":"payments"} */
		strings.Repeat("A", MaxCursorBytes+4),
		cs.Encode("bob@example.com", ResourceCursor{Wing: "payments"}), other.Encode(alice, ResourceCursor{Wing: "payments"}),
		flip(0), flip(1), flip(1 + CursorTagBytes), flip(len(raw) - 1), issued[:len(issued)-4], issued + "AAAA",
		base64.StdEncoding.EncodeToString(raw[:1+CursorTagBytes])} {
		if _, _, err := cs.Decode(alice, bad); !errors.Is(err, edge.ErrBadCursor) {
			t.Errorf("decode(%.60q) = %v, want ErrBadCursor", bad, err)
		}
	}
}

// FuzzResourceCursor: decode never panics, refuses with ErrBadCursor only,
// and what it accepts is a cursor it made: it encodes back to itself.
func FuzzResourceCursor(f *testing.F) {
	cs := testCursorSigner(f)
	const alice = "alice@example.com"
	f.Add(cs.Encode(alice, ResourceCursor{Wing: "payments", Shard: "facts/x"}))
	f.Add(cs.Encode(alice, ResourceCursor{Wing: "payments"}))
	f.Add("e30=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok, err := cs.Decode(alice, s)
		if err != nil {
			if !errors.Is(err, edge.ErrBadCursor) {
				t.Fatalf("decode(%q): %v", s, err)
			}
			return
		}
		if ok && cs.Encode(alice, c) != s {
			t.Fatalf("%q accepted as %+v, which is not the cursor made of it", s, c)
		}
	})
}
