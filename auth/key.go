package auth

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// maxKeyFileBytes bounds the size of a key file LoadOrCreateKey reads.
const maxKeyFileBytes = 64 << 10

// ErrBadKeyFile reports a key file that is not one PEM "PRIVATE KEY" block
// holding a PKCS#8 Ed25519 key.
var ErrBadKeyFile = errors.New("auth: bad key file")

// LoadOrCreateKey loads the shard's Ed25519 signing key from a PEM PKCS#8
// file, or creates one if the file does not exist: the parent directory is
// created 0700 if missing, the key is written 0600 to a temporary file,
// synced, and linked into place without ever replacing an existing file (two
// processes racing both end up with the same key); the directory is synced.
// An empty path returns GenerateKey's ephemeral key: tokens then stop
// verifying when the process restarts, which the gateway handles by
// re-minting.
func LoadOrCreateKey(path string) (KeyPair, error) {
	if path == "" {
		return GenerateKey()
	}
	k, err := loadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	return createKey(path)
}

func loadKey(path string) (KeyPair, error) {
	return loadFile("key", path, maxKeyFileBytes, ErrBadKeyFile, ParsePrivateKeyPEM)
}

// loadFile reads what (a key, a policy) from path and parses it; a file of
// more than limit bytes is refused with tooLarge.
func loadFile[T any](what, path string, limit int64, tooLarge error, parse func([]byte) (T, error)) (T, error) {
	var v T
	data, err := smallfile.Read(path, limit)
	if errors.Is(err, smallfile.ErrTooLarge) {
		err = fmt.Errorf("%w: %w", tooLarge, err)
	}
	if err == nil {
		if v, err = parse(data); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		return v, fmt.Errorf("auth: load %s: %w", what, err)
	}
	return v, nil
}

// ParsePrivateKeyPEM parses one PEM "PRIVATE KEY" block holding a PKCS#8
// Ed25519 key (as written by LoadOrCreateKey or `openssl genpkey -algorithm
// ed25519`).
func ParsePrivateKeyPEM(data []byte) (KeyPair, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return KeyPair{}, fmt.Errorf("%w: no PEM block (want -----BEGIN PRIVATE KEY-----)", ErrBadKeyFile)
	}
	if block.Type != "PRIVATE KEY" {
		return KeyPair{}, fmt.Errorf("%w: PEM block %q, want \"PRIVATE KEY\" (PKCS#8)", ErrBadKeyFile, block.Type)
	}
	if next, _ := pem.Decode(rest); next != nil {
		return KeyPair{}, fmt.Errorf("%w: more than one PEM block", ErrBadKeyFile)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return KeyPair{}, fmt.Errorf("%w: %w", ErrBadKeyFile, err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return KeyPair{}, fmt.Errorf("%w: key is %T, want Ed25519", ErrBadKeyFile, key)
	}
	return KeyPair{ID: KeyID(priv.Public().(ed25519.PublicKey)), Private: priv}, nil
}

// MarshalPrivateKeyPEM encodes a key as a PEM PKCS#8 "PRIVATE KEY" block.
func MarshalPrivateKeyPEM(k KeyPair) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("auth: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func createKey(path string) (KeyPair, error) {
	k, err := GenerateKey()
	if err != nil {
		return KeyPair{}, err
	}
	data, err := MarshalPrivateKeyPEM(k)
	if err != nil {
		return KeyPair{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return KeyPair{}, fmt.Errorf("auth: create key: %w", err)
	}
	if err := atomicfile.CreateFile(path, data, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Someone else created it first: use theirs.
			return loadKey(path)
		}
		return KeyPair{}, fmt.Errorf("auth: create key: %w", err)
	}
	return k, nil
}
