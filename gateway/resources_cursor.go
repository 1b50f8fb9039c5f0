package gateway

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

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
)

// resources/list cursors, authenticated.
//
// A cursor is a position in the caller's listing (resourceCursor) that the
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

// cursorVersion is the first byte of every cursor.
const cursorVersion = 1

// cursorTagBytes is the length of a cursor's tag.
const cursorTagBytes = 16

// resourceCursor is where the next resources/list page starts: wings are
// listed in name order and each wing's notes in id order (brain_list), so
// a position is a wing and brain_list's cursor within it. Shard "" means
// the wing is done: the page goes on with the next wing by name. A wing
// the caller can no longer read is skipped.
type resourceCursor struct {
	Wing  string `json:"w"`
	Shard string `json:"c,omitempty"`
}

// cursorSigner makes and checks resources/list cursors.
type cursorSigner struct {
	key []byte
}

// newCursorSigner derives the cursor key from the private key of the
// gateway's mTLS certificate in tc. Without one (a configuration whose
// certificate is chosen per connection) the key is random: cursors then
// work on this replica only, which the log says.
func newCursorSigner(tc *tls.Config, log *slog.Logger) (*cursorSigner, error) {
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
	return &cursorSigner{key: key}, nil
}

// tag is the HMAC of a cursor's JSON for the caller email.
func (cs *cursorSigner) tag(email string, payload []byte) []byte {
	m := hmac.New(sha256.New, cs.key)
	m.Write([]byte(email))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:cursorTagBytes]
}

// encode makes the cursor of c for the caller email.
func (cs *cursorSigner) encode(email string, c resourceCursor) string {
	payload, _ := brain.Marshal(c) // strings only: cannot fail
	b := make([]byte, 0, 1+cursorTagBytes+len(payload))
	b = append(b, cursorVersion)
	b = append(b, cs.tag(email, payload)...)
	b = append(b, payload...)
	return base64.StdEncoding.EncodeToString(b)
}

// decode reads a cursor encode made for the caller email; "" is the first
// page (ok false). Anything else is ErrBadCursor.
func (cs *cursorSigner) decode(email, s string) (c resourceCursor, ok bool, err error) {
	if s == "" {
		return resourceCursor{}, false, nil
	}
	bad := func(why string) error {
		return edge.NewError(brain.CodeInvalidArgument, edge.ErrBadCursor, "invalid cursor (%s): pass back the nextCursor of the previous resources/list page, or none for the first page", why)
	}
	if len(s) > maxCursorBytes {
		return resourceCursor{}, false, bad(fmt.Sprintf("%d bytes, the limit is %d", len(s), maxCursorBytes))
	}
	// Canonical base64 only: the decoder skips CR and LF, and without
	// Strict ignores padding bits, so the same bytes have other spellings.
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return resourceCursor{}, false, bad("not base64")
	}
	const notOurs = "not a cursor this gateway issued to you"
	if len(b) < 1+cursorTagBytes || b[0] != cursorVersion {
		return resourceCursor{}, false, bad(notOurs)
	}
	tag, payload := b[1:1+cursorTagBytes], b[1+cursorTagBytes:]
	if !hmac.Equal(tag, cs.tag(email, payload)) {
		return resourceCursor{}, false, bad(notOurs)
	}
	// Signed by this gateway, so well formed; checked all the same.
	if err := json.Unmarshal(payload, &c); err != nil || brain.ValidWing(c.Wing) != nil || len(c.Shard) > maxCursorBytes {
		return resourceCursor{}, false, bad(notOurs)
	}
	return c, true, nil
}
