package config

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// FuzzServiceAccountCredential: no configured hash or public key makes the
// credential parsers panic; a key they accept is pinned to EdDSA, ES256 or
// RS256, and a hash they accept is 32 bytes.
func FuzzServiceAccountCredential(f *testing.F) {
	f.Add(publicPEM(f, newEd25519(f)))
	f.Add(publicPEM(f, newP256(f)))
	f.Add("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
	f.Add(secretHash("x"))
	f.Add(strings.ToUpper(secretHash("x")) + "  -\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		if k, err := parsePublicKey([]byte(in)); err == nil {
			switch k.alg {
			case jose.EdDSA, jose.ES256, jose.RS256:
			default:
				t.Fatalf("%q: algorithm %s", in, k.alg)
			}
		}
		if h, err := parseSecretHash(in); err == nil && len(h) != 32 {
			t.Fatalf("%q: a %d-byte hash", in, len(h))
		}
		c, err := loadCredential(Credential{SecretSHA256: in})
		if err == nil && len(c.Hash) != 32 {
			t.Fatalf("%q: loaded a %d-byte hash", in, len(c.Hash))
		}
	})
}

func publicPEM(t testing.TB, k crypto.Signer) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func newEd25519(t testing.TB) crypto.Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newP256(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Key and secret makers, as gateway/oauth/machine's tests have them.
func secretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
