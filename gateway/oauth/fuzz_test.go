package oauth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
