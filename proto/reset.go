package proto

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/quic-go/quic-go"
)

// resetKeySalt separates stateless-reset keys from any other use of the
// secret they are derived from.
const resetKeySalt = "brainstem/1 stateless reset key"

// minResetSecret is the least secret length DeriveStatelessResetKey accepts.
const minResetSecret = 16

// DeriveStatelessResetKey derives a QUIC stateless-reset key (for
// ServerConfig.StatelessResetKey) with HKDF-SHA256 from a secret that
// survives restarts, such as the DER of the shard's TLS private key, and a
// label naming what the key is for (the wing). The same secret and label
// always give the same key, so a shard restarted on the same address resets
// the connections its predecessor held at once; different labels give
// unrelated keys, so shards that share a certificate do not share a key.
// The secret cannot be recovered from the key.
func DeriveStatelessResetKey(secret []byte, label string) (*quic.StatelessResetKey, error) {
	if len(secret) < minResetSecret {
		return nil, fmt.Errorf("proto: stateless reset key: %w", errShortSecret)
	}
	b, err := hkdf.Key(sha256.New, secret, []byte(resetKeySalt), label, len(quic.StatelessResetKey{}))
	if err != nil {
		return nil, fmt.Errorf("proto: stateless reset key: %w", err)
	}
	var k quic.StatelessResetKey
	copy(k[:], b)
	return &k, nil
}

var errShortSecret = errors.New("the secret is shorter than 16 bytes")
