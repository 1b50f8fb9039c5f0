package oauth

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
)

// benchToken is an access token of s for alice with three groups.
func benchToken(b *testing.B, s *Server) string {
	b.Helper()
	body, terr := s.issue(auth.Identity{Email: "alice@example.com", Groups: []string{"eng", "people-team", "oncall"}},
		"client", "", "fam", time.Now().Add(time.Hour).Unix(), "bench")
	if terr != nil {
		b.Fatal(terr)
	}
	var r tokenResponse
	if err := json.Unmarshal(body, &r); err != nil {
		b.Fatal(err)
	}
	return r.AccessToken
}

// BenchmarkVerifyAccessToken is what /mcp pays per request for one of the
// gateway's own access tokens: the key-id check that routes it (Handles),
// then Verify, uncached (a new token: Ed25519 and claims) and cached (the
// same token again), beside auth/sso's BenchmarkVerifyCached for the IdP's
// tokens.
func BenchmarkVerifyAccessToken(b *testing.B) {
	s := benchServer(b)
	tok := benchToken(b, s)
	ctx := context.Background()
	b.Run("handles", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !s.Handles(tok) {
				b.Fatal("not handled")
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.verified.Purge()
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchServer(b *testing.B) *Server {
	b.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(context.Background(), Config{
		Enabled: true, SigningKeyFile: "unused",
		Upstream: UpstreamConfig{Issuer: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s"},
	}, Options{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp", Verifier: refusingVerifier{}, Keys: []auth.KeyPair{k}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
