// Package surfaces holds the gateway's MCP surfaces beyond tools: notes
// as resources and the resources/list cursors it signs, the union of the
// wings' prompts and prompts/get, the cross links of a tool's answer, and
// change notifications. It asks the gateway for the request's caller
// through one interface (Gateway).
package surfaces

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
)

// resources/list cursors, authenticated.
//
// A cursor is a position in the caller's listing (ResourceCursor) that the
// gateway signs for the caller it issues it to: standard base64 (mcp-go
// decodes every cursor so before its own listing) of a version byte, a
// 128-bit HMAC-SHA256 tag and the position's JSON. The tag covers the
// caller's canonical email and the JSON, under a key every replica derives
// from the gateway's mTLS private key, which they all hold (one Secret).
// So a cursor one replica issued is accepted by every other, and a cursor
// made or changed by anyone else (a forged position, a tampered byte, a
// cursor of another gateway or issued to another caller, brain_list's own
// cursor) is refused with ErrBadCursor before any shard is asked
// (docs/decisions.md, "Issue 34").

// cursorKeyLabel is the HKDF label of the cursor key. Changing it refuses
// every cursor issued before (a client then lists from the start again).
const cursorKeyLabel = "brainstem gateway resources/list cursor v1"

// CursorVersion is the first byte of every cursor.
const CursorVersion = 1

// CursorTagBytes is the length of a cursor's tag.
const CursorTagBytes = 16

// MaxCursorBytes bounds a resources/list cursor as received.
const MaxCursorBytes = 2048

// ResourceCursor is where the next resources/list page starts: wings are
// listed in name order and each wing's notes in id order (brain_list), so
// a position is a wing and brain_list's cursor within it. Shard "" means
// the wing is done: the page goes on with the next wing by name. A wing
// the caller can no longer read is skipped.
type ResourceCursor struct {
	Wing  string `json:"w"`
	Shard string `json:"c,omitempty"`
}

// CursorSigner makes and checks resources/list cursors.
type CursorSigner struct {
	key []byte
}

// NewCursorSigner derives the cursor key from the private key of the
// gateway's mTLS certificate in tc. Without one (a configuration whose
// certificate is chosen per connection) the key is random: cursors then
// work on this replica only, which the log says.
func NewCursorSigner(tc *tls.Config, log *slog.Logger) (*CursorSigner, error) {
	var secret []byte
	if tc != nil && len(tc.Certificates) > 0 && tc.Certificates[0].PrivateKey != nil {
		der, err := x509.MarshalPKCS8PrivateKey(tc.Certificates[0].PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("gateway: resources/list cursor key: %w", err)
		}
		secret = der
	} else {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // crypto/rand.Read never fails on supported platforms
		log.Warn("the gateway's mTLS certificate has no static key: resources/list cursors are accepted by this replica only")
	}
	key, err := hkdf.Key(sha256.New, secret, nil, cursorKeyLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("gateway: resources/list cursor key: %w", err)
	}
	return &CursorSigner{key: key}, nil
}

// tag is the HMAC of a cursor's JSON for the caller email.
func (cs *CursorSigner) tag(email string, payload []byte) []byte {
	m := hmac.New(sha256.New, cs.key)
	m.Write(slices.Concat([]byte(email), []byte{0}, payload))
	return m.Sum(nil)[:CursorTagBytes]
}

// Encode makes the cursor of c for the caller email.
func (cs *CursorSigner) Encode(email string, c ResourceCursor) string {
	payload, _ := brain.Marshal(c) // strings only: cannot fail
	return base64.StdEncoding.EncodeToString(slices.Concat([]byte{CursorVersion}, cs.tag(email, payload), payload))
}

// Decode reads a cursor Encode made for the caller email; "" is the first
// page (ok false). Anything else is ErrBadCursor.
func (cs *CursorSigner) Decode(email, s string) (c ResourceCursor, ok bool, err error) {
	if s == "" {
		return ResourceCursor{}, false, nil
	}
	bad := func(why string) error {
		return edge.NewError(brain.CodeInvalidArgument, edge.ErrBadCursor, "invalid cursor (%s): pass back the nextCursor of the previous resources/list page, or none for the first page", why)
	}
	if len(s) > MaxCursorBytes {
		return ResourceCursor{}, false, bad(fmt.Sprintf("%d bytes, the limit is %d", len(s), MaxCursorBytes))
	}
	// Canonical base64 only: the decoder skips CR and LF, and without
	// Strict ignores padding bits, so the same bytes have other spellings.
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return ResourceCursor{}, false, bad("not base64")
	}
	const notOurs = "not a cursor this gateway issued to you"
	if len(b) < 1+CursorTagBytes || b[0] != CursorVersion {
		return ResourceCursor{}, false, bad(notOurs)
	}
	tag, payload := b[1:1+CursorTagBytes], b[1+CursorTagBytes:]
	if !hmac.Equal(tag, cs.tag(email, payload)) {
		return ResourceCursor{}, false, bad(notOurs)
	}
	// Signed by this gateway, so well formed; checked all the same.
	if err := json.Unmarshal(payload, &c); err != nil || brain.ValidWing(c.Wing) != nil || len(c.Shard) > MaxCursorBytes {
		return ResourceCursor{}, false, bad(notOurs)
	}
	return c, true, nil
}
