package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/surfaces"
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

// TestResourcesWingDown: resources/list of a caller who reads a wing
// whose shard is down lists the others and names it in
// _meta["brainstem/unavailable"]; a caller without a grant there is not
// told of it.
func TestResourcesWingDown(t *testing.T) {
	e := newEnv(t, []string{"open", "closed"}, map[string]auth.Policy{
		"open":   policyOpen,
		"closed": {Readers: []string{"email:alice@acme.com"}},
	}, func(c *config.Config, _ *Options) { c.Shards.CallTimeout = 2 * time.Second })
	alice := e.client(t, e.idp.token(t, "alice@acme.com"), false)
	bob := e.client(t, e.idp.token(t, "bob@acme.com"), false)
	list := func(c *client.Client) *mcp.ListResourcesResult {
		res, err := c.ListResourcesByPage(context.Background(), mcp.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if b, _ := json.Marshal(list(alice).Meta); strings.Contains(string(b), surfaces.MetaUnavailable) {
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

// cursorsEnv is a gateway in front of wings a, b and c, one note each, one
// note a page, with a second replica (another gateway on the same
// configuration and mTLS identity) at url2.
func cursorsEnv(t *testing.T) (e *testEnv, url2 string) {
	t.Helper()
	names := []string{"a", "b", "c"}
	policies := map[string]auth.Policy{}
	for _, n := range names {
		policies[n] = policyOpen
	}
	pageOfOne := func(c *config.Config, _ *Options) { c.Limits.ResourcesPageSize = 1 }
	e = newEnv(t, names, policies, pageOfOne)
	for _, n := range names {
		e.wings[n].addNote(n+"/facts/one", "note of "+n, "x@example.com")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	var wcs []config.WingConfig
	for _, n := range names {
		wcs = append(wcs, config.WingConfig{Name: n, Address: e.shards[n].addr, ServerName: "localhost"})
	}
	cfg := e.config(wcs, base)
	pageOfOne(&cfg, nil)
	e.startGatewayOn(ln, cfg, Options{})
	return e, base + "/mcp"
}

// listPage asks c for the resources/list page at cursor.
func listPage(c *client.Client, cursor string) (*mcp.ListResourcesResult, error) {
	req := mcp.ListResourcesRequest{}
	req.Params.Cursor = mcp.Cursor(cursor)
	return c.ListResourcesByPage(context.Background(), req)
}

// firstCursor is the cursor of c's first resources/list page, which must
// be a's note.
func firstCursor(t *testing.T, c *client.Client) string {
	t.Helper()
	res, err := listPage(c, "")
	if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "brain://a/facts/one" || res.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", res, err)
	}
	return string(res.NextCursor)
}

// cursorCases expands testdata/resource-cursors.txt with the cursors the
// test was issued.
func cursorCases(t *testing.T, issued, byReplica, bobs, elsewhere string) [][2]string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(issued)
	if err != nil || len(raw) < 1+surfaces.CursorTagBytes+1 || !strings.HasSuffix(issued, "=") || strings.HasSuffix(issued, "==") {
		t.Fatalf("issued cursor %q: want version, tag, JSON, one padding character", issued)
	}
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 1
		return base64.StdEncoding.EncodeToString(b)
	}
	// With one '=', the last character's two low bits are padding:
	// setting one keeps the bytes but makes the encoding non-canonical.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	last := strings.IndexByte(alphabet, issued[len(issued)-2])
	nonCanonical := issued[:len(issued)-2] + string(alphabet[last|1]) + "="
	zeroTag := append(append([]byte{surfaces.CursorVersion}, make([]byte, surfaces.CursorTagBytes)...), raw[1+surfaces.CursorTagBytes:]...)
	expand := strings.NewReplacer(
		"$ISSUED_BY_REPLICA", byReplica, "$ISSUED", issued, "$BOBS", bobs, "$ELSEWHERE", elsewhere,
		"$TAG_FLIPPED", flip(1), "$PAYLOAD_FLIPPED", flip(len(raw)-2), "$VERSION_FLIPPED", flip(0),
		"$NON_CANONICAL", nonCanonical, "$ZERO_TAG", base64.StdEncoding.EncodeToString(zeroTag),
		"$TRUNCATED", issued[:len(issued)-4], "$EXTENDED", issued+"AAAA", "$LONG", strings.Repeat("QUFB", surfaces.MaxCursorBytes/4+1),
	)
	var out [][2]string
	for _, tc := range readCases(t, "testdata/resource-cursors.txt") {
		s, err := strconv.Unquote(tc[1])
		if err != nil {
			t.Fatalf("resource-cursors.txt: %s: %v", tc[1], err)
		}
		if rest, ok := strings.CutPrefix(s, "b64:"); ok {
			s = base64.StdEncoding.EncodeToString([]byte(rest))
		}
		out = append(out, [2]string{tc[0], expand.Replace(s)})
	}
	if len(out) < 30 {
		t.Fatalf("resource-cursors.txt has %d cases", len(out))
	}
	return out
}

// TestResourceCursorAttacks runs testdata/resource-cursors.txt through
// resources/list at two replicas, on each protocol revision: the cursors
// the gateway issued to the caller go on with the listing at either
// replica; every other (forged, tampered, another caller's, another
// gateway's) is refused as invalid params before any shard is asked for
// a listing (issue 34: a forged cursor was accepted and skipped wings).
func TestResourceCursorAttacks(t *testing.T) {
	e, url2 := cursorsEnv(t)
	other, _ := cursorsEnv(t) // another deployment: its own CA and mTLS key
	alice, bob := e.idp.token(t, "alice@example.com"), e.idp.token(t, "bob@example.com")
	issued := firstCursor(t, e.client(t, alice, false))
	cases := cursorCases(t, issued,
		firstCursor(t, newMCPClient(t, url2, alice, false)),
		firstCursor(t, e.client(t, bob, false)),
		firstCursor(t, other.client(t, other.idp.token(t, "alice@example.com"), false)))
	listed := func() (n int64) {
		for _, w := range e.wings {
			n += w.toolCount("brain_list")
		}
		return n
	}
	for _, legacy := range []bool{false, true} {
		for _, c := range []*client.Client{e.client(t, alice, legacy), newMCPClient(t, url2, alice, legacy)} {
			for _, tc := range cases {
				before := listed()
				res, err := listPage(c, tc[1])
				switch tc[0] {
				case "page2":
					if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "brain://b/facts/one" {
						t.Errorf("legacy %v: %.60q: %+v, %v; want b's note", legacy, tc[1], res, err)
					}
				case "bad":
					if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "cursor") || listed() != before {
						t.Errorf("legacy %v: %.60q: %+v, %v (shards asked: %v); want invalid params before any listing", legacy, tc[1], res, err, listed() != before)
					}
				default:
					t.Fatalf("resource-cursors.txt: outcome %q", tc[0])
				}
			}
		}
	}
}
