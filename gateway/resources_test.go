package gateway

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
)

// TestResourceURIAttacks runs testdata/resource-uris.txt through
// resources/read on each protocol revision: a bad URI is refused as
// invalid params naming the URI form before any shard is asked; a note
// URI is read (here, as no note exists, "resource not found").
func TestResourceURIAttacks(t *testing.T) {
	env := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	tok := env.idp.token(t, "alice@example.com")
	cases := readCases(t, "testdata/resource-uris.txt")
	if len(cases) < 50 {
		t.Fatalf("resource-uris.txt has %d cases", len(cases))
	}
	for _, legacy := range []bool{false, true} {
		c := env.client(t, tok, legacy)
		for _, tc := range cases {
			uri, err := strconv.Unquote(tc[1])
			if err != nil {
				t.Fatalf("resource-uris.txt: %s: %v", tc[1], err)
			}
			_, perr := brain.ParseNoteURI(uri)
			if (perr == nil) != (tc[0] == "ok") || perr != nil && !errors.Is(perr, brain.ErrBadURI) {
				t.Errorf("ParseNoteURI(%q) = %v, want %s", uri, perr, tc[0])
			}
			before := env.wings["payments"].toolCount("brain_get")
			req := mcp.ReadResourceRequest{}
			req.Params.URI = uri
			_, err = c.ReadResource(context.Background(), req)
			asked := env.wings["payments"].toolCount("brain_get") != before
			switch tc[0] {
			case "ok":
				if err == nil || !strings.Contains(err.Error(), "resource not found") {
					t.Errorf("legacy %v: %q: %v, want resource not found", legacy, uri, err)
				}
			case "bad":
				if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "resource URI") || asked {
					t.Errorf("legacy %v: %q: %v (shard asked: %v), want invalid params before any shard", legacy, uri, err, asked)
				}
			default:
				t.Fatalf("resource-uris.txt: outcome %q", tc[0])
			}
		}
	}
}

// TestResourceCursors: a cursor the gateway made reads back as it was;
// anything else is ErrBadCursor.
func TestResourceCursors(t *testing.T) {
	for _, c := range []resourceCursor{{Wing: "payments"}, {Wing: "people-ops", Shard: "facts/x"}} {
		got, ok, err := decodeCursor(encodeCursor(c))
		if err != nil || !ok || got != c {
			t.Errorf("round trip of %+v: %+v %v %v", c, got, ok, err)
		}
	}
	for _, bad := range []string{"x", "!!!!", "bm90IGEgY3Vyc29y", encodeCursor(resourceCursor{Wing: "../x"}),
		encodeCursor(resourceCursor{Wing: ""}), strings.Repeat("A", maxCursorBytes+4), "e30=" /* {} */} {
		if _, _, err := decodeCursor(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("decodeCursor(%.40q) = %v, want ErrBadCursor", bad, err)
		}
	}
}

// FuzzResourceCursor: decodeCursor never panics, refuses with ErrBadCursor
// only, and what it accepts encodes back to a cursor that decodes alike.
func FuzzResourceCursor(f *testing.F) {
	f.Add(encodeCursor(resourceCursor{Wing: "payments", Shard: "facts/x"}))
	f.Add("e30=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok, err := decodeCursor(s)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("decodeCursor(%q): %v", s, err)
			}
			return
		}
		if !ok {
			return
		}
		again, ok2, err := decodeCursor(encodeCursor(c))
		if err != nil || !ok2 || again != c {
			t.Fatalf("%q: %+v re-encodes to %+v %v", s, c, again, err)
		}
	})
}
