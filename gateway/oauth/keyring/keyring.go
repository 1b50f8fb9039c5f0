// Package keyring is the keys of the gateway's authorization server
// (gateway/oauth): the Ed25519 signing keys every replica holds (the
// current one first, then those being rotated out), and what is derived
// from each: the AEAD that seals codes, refresh tokens and cookies, and the
// MAC that signs client ids.
package keyring

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// maxKeyFileBytes bounds a key or secret file.
const maxKeyFileBytes = 64 << 10

// Key is one Ed25519 key and what is derived from it.
type Key struct {
	ID     string // JWS kid: "bsf-" + auth.KeyID
	Priv   ed25519.PrivateKey
	aead   cipher.AEAD // seals codes, refresh tokens and cookies
	tag    [4]byte     // identifies the sealing key in a sealed value
	macKey []byte      // signs client ids
}

// Ring holds the current key (first) and the ones being rotated out.
type Ring struct {
	keys []*Key
	JWKS []byte // the public JWKS document
}

// Key labels for HKDF. Changing one invalidates everything made with it.
const (
	labelSeal     = "brainstem oauth seal v1"
	labelSealTag  = "brainstem oauth seal tag v1"
	labelClientID = "brainstem oauth client id v1"
)

// ErrBadKey reports an unusable signing key file.
var ErrBadKey = errors.New("oauth: bad signing key")

// Load reads the current key file and those being rotated out.
func Load(current string, previous []string) (*Ring, error) {
	var keys []auth.KeyPair
	for _, path := range append([]string{current}, previous...) {
		data, err := ReadSmallFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
		}
		k, err := auth.ParsePrivateKeyPEM(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadKey, path, err)
		}
		keys = append(keys, k)
	}
	return New(keys...)
}

// New derives the keys of each pair; the first is current.
func New(pairs ...auth.KeyPair) (*Ring, error) {
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrBadKey)
	}
	kr := &Ring{}
	set := jose.JSONWebKeySet{}
	for _, p := range pairs {
		seed := p.Private.Seed()
		sealKey, err1 := hkdf.Key(sha256.New, seed, nil, labelSeal, 32)
		tag, err2 := hkdf.Key(sha256.New, seed, nil, labelSealTag, 4)
		mac, err3 := hkdf.Key(sha256.New, seed, nil, labelClientID, 32)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("oauth: derive: %w", err)
		}
		block, err := aes.NewCipher(sealKey)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		sk := &Key{ID: "bsf-" + p.ID, Priv: p.Private, aead: aead, macKey: mac}
		copy(sk.tag[:], tag)
		if slices.ContainsFunc(kr.keys, func(other *Key) bool { return other.ID == sk.ID }) {
			return nil, fmt.Errorf("%w: the same key is listed twice", ErrBadKey)
		}
		kr.keys = append(kr.keys, sk)
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: p.Private.Public(), KeyID: sk.ID, Algorithm: string(jose.EdDSA), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("oauth: jwks: %w", err)
	}
	kr.JWKS = b
	return kr, nil
}

func (kr *Ring) Current() *Key { return kr.keys[0] }

// ByID returns the key with JWS key id kid.
func (kr *Ring) ByID(kid string) *Key {
	for _, k := range kr.keys {
		if k.ID == kid {
			return k
		}
	}
	return nil
}

// sealVersion prefixes every sealed value.
const sealVersion = 1

// ErrSealed reports a sealed value that does not open: forged, damaged,
// made for another purpose or with a key no longer held.
var ErrSealed = errors.New("oauth: sealed value is invalid")

// Seal encrypts v (as JSON) with the current key; purpose is bound as
// additional data, so a value sealed for one purpose never opens as another.
// The result is URL-safe base64 without padding.
func (kr *Ring) Seal(purpose string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("oauth: seal: %w", err)
	}
	k := kr.Current()
	out := make([]byte, 0, 1+len(k.tag)+k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	out = append(out, sealVersion)
	out = append(out, k.tag[:]...)
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return "", fmt.Errorf("oauth: seal: %w", err)
	}
	out = append(out, nonce...)
	out = k.aead.Seal(out, nonce, plain, []byte(purpose))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// OpenToken opens into v a token that is prefix followed by what Seal
// made for purpose; ok is false for anything else.
func (kr *Ring) OpenToken(token, prefix, purpose string, limit int, v any) (ok bool) {
	raw, ok := strings.CutPrefix(token, prefix)
	return ok && kr.Open(purpose, raw, limit, v) == nil
}

// Open reverses Seal into v. Values larger than limit bytes are refused
// before any work.
func (kr *Ring) Open(purpose, s string, limit int, v any) error {
	if len(s) == 0 || len(s) > limit {
		return ErrSealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 5 || raw[0] != sealVersion {
		return ErrSealed
	}
	var k *Key
	for _, c := range kr.keys {
		if bytes.Equal(c.tag[:], raw[1:5]) {
			k = c
			break
		}
	}
	if k == nil {
		return ErrSealed
	}
	rest := raw[5:]
	if len(rest) < k.aead.NonceSize()+k.aead.Overhead() {
		return ErrSealed
	}
	plain, err := k.aead.Open(nil, rest[:k.aead.NonceSize()], rest[k.aead.NonceSize():], []byte(purpose))
	if err != nil {
		return ErrSealed
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return ErrSealed
	}
	return nil
}

// MAC signs data for client ids with the current key.
func (kr *Ring) MAC(data []byte) []byte { return macWith(kr.Current().macKey, data) }

// VerifyMAC reports whether sum is data's MAC under any held key.
func (kr *Ring) VerifyMAC(data, sum []byte) bool {
	ok := false
	for _, k := range kr.keys {
		// Every key is tried, whatever the result, so the time taken does
		// not tell which key (if any) matched.
		if hmac.Equal(macWith(k.macKey, data), sum) {
			ok = true
		}
	}
	return ok
}

func macWith(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)[:16]
}

// ReadSmallFile reads a key or secret file of at most maxKeyFileBytes.
func ReadSmallFile(path string) ([]byte, error) { return smallfile.Read(path, maxKeyFileBytes) }

// IsDigest reports, in constant time, whether digest is Digest(parts...):
// whether a sealed value was bound to these.
func IsDigest(digest string, parts ...string) bool {
	return subtle.ConstantTimeCompare([]byte(digest), []byte(Digest(parts...))) == 1
}

// Digest is a short, stable fingerprint of a value (client ids, redirect
// URIs) for binding without carrying the value.
func Digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}
