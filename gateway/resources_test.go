package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
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

// TestResourcesWingDown: resources/list of a caller who reads a wing
// whose shard is down lists the others and names it in
// _meta["brainstem/unavailable"]; a caller without a grant there is not
// told of it.
func TestResourcesWingDown(t *testing.T) {
	e := newEnv(t, []string{"open", "closed"}, map[string]auth.Policy{
		"open":   policyOpen,
		"closed": {Readers: []string{"email:alice@acme.com"}},
	}, func(c *Config, _ *Options) { c.Shards.CallTimeout = 2 * time.Second })
	alice := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	bob := e.client(t, e.idp.token(t, "bob@acme.com"), false)
	list := func(c *client.Client) *mcp.ListResourcesResult {
		res, err := c.ListResourcesByPage(context.Background(), mcp.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if b, _ := json.Marshal(list(alice).Meta); strings.Contains(string(b), metaUnavailable) {
		t.Fatalf("every wing up: _meta %s", b)
	}
	e.shards["closed"].stop()
	for _, c := range []struct {
		who  *client.Client
		told bool
	}{{alice, true}, {bob, false}} {
		res := list(c.who)
		b, _ := json.Marshal(res.Meta)
		if told := strings.Contains(string(b), `"wing":"closed"`); told != c.told {
			t.Errorf("told %v of the down wing, want %v: %s", told, c.told, b)
		}
	}
}
