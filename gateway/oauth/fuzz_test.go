package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
)

// refusingVerifier is an IdP verifier for servers that never redeem a code.
type refusingVerifier struct{}

func (refusingVerifier) Verify(context.Context, string) (auth.Identity, error) {
	return auth.Identity{}, errors.New("no IdP in this test")
}

// fuzzServer is a server with a fresh key and no IdP (New makes no network
// call): enough for the decoders.
func fuzzServer(f *testing.F) *Server {
	f.Helper()
	return fuzzServerWith(f, nil)
}

// fuzzServerWith is fuzzServer with its configuration adjusted by mutate.
func fuzzServerWith(f *testing.F, mutate func(*Config)) *Server {
	f.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	cfg := Config{
		Enabled: true, SigningKeyFile: "unused",
		Upstream:       UpstreamConfig{Issuer: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s"},
		ClientMetadata: ClientMetadataConfig{Disabled: true}, // no fetches from fuzzed client ids
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(context.Background(), cfg, Options{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp", Verifier: refusingVerifier{}, Keys: []auth.KeyPair{k}})
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzParseRegisteredClient: no input makes the client-id decoder panic,
// and any id it accepts was signed by the server's key.
func FuzzParseRegisteredClient(f *testing.F) {
	s := fuzzServer(f)
	good, rerr := s.register([]byte(`{"client_name":"A","redirect_uris":["http://127.0.0.1/cb"]}`), time.Now())
	if rerr != nil {
		f.Fatal(rerr)
	}
	f.Add(good.ID)
	f.Add(registeredPrefix)
	f.Add(registeredPrefix + "e30.AAAA")
	f.Add(registeredPrefix + "eyJyIjpbImh0dHA6Ly8xMjcuMC4wLjEvY2IiXX0.")
	f.Add(good.ID + "x")
	f.Add(strings.Replace(good.ID, ".", "..", 2))
	f.Fuzz(func(t *testing.T, id string) {
		c, err := s.parseRegisteredClient(id)
		if err != nil {
			return
		}
		if id != good.ID {
			t.Fatalf("an id the server did not sign was accepted: %q → %+v", id, c)
		}
		if len(c.RedirectURIs) == 0 || !c.Dynamic {
			t.Fatalf("accepted client is incomplete: %+v", c)
		}
	})
}

// FuzzOpenSealed: no input makes the sealed-value decoder (login state,
// codes, refresh tokens, consent records) panic, and nothing but values the
// server sealed for that purpose opens.
func FuzzOpenSealed(f *testing.F) {
	s := fuzzServer(f)
	ls, err := s.keys.Seal(purposeLogin, Login{SID: "abc", RedirectURI: "http://127.0.0.1/cb", Exp: 1})
	if err != nil {
		f.Fatal(err)
	}
	code, err := s.keys.Seal(purposeCode, codeState{ID: "c", Exp: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ls)
	f.Add(code)
	f.Add("")
	f.Add("AQ")
	f.Add("AQAAAAA")
	f.Add(ls[:len(ls)-1])
	valid := map[string]string{ls: purposeLogin, code: purposeCode}
	f.Fuzz(func(t *testing.T, v string) {
		for _, purpose := range []string{purposeLogin, purposeCode, purposeRefresh, purposeConsent, purposeRequest, "device code", "device form", "device approval"} { // the device flow's too
			var out map[string]any
			if err := s.keys.Open(purpose, v, maxRefreshBytes, &out); err == nil && valid[v] != purpose {
				t.Fatalf("%q opened as %s", v, purpose)
			}
		}
	})
}

// FuzzVerifyAccessToken: no bearer token makes the access-token verifier
// panic, and only tokens the server signed verify.
func FuzzVerifyAccessToken(f *testing.F) {
	s := fuzzServer(f)
	body, terr := s.Issue(auth.Identity{Email: "a@example.com"}, "client", "", "fam", time.Now().Add(time.Hour).Unix(), "test")
	if terr != nil {
		f.Fatal(terr)
	}
	at := string(body[strings.Index(string(body), `"access_token":"`)+16:])
	at = at[:strings.IndexByte(at, '"')]
	f.Add(at)
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add(at[:len(at)-2])
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := s.Verify(context.Background(), tok)
		if err == nil && (tok != at || id.Email != "a@example.com") {
			t.Fatalf("%q verified as %+v", tok, id)
		}
	})
}

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

// Key and secret makers, as gateway/oauth/machine's tests have them.
func secretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
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
