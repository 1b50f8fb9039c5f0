package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/offboard"
)

// benchToken is an access token of s for alice with three groups.
func benchToken(b *testing.B, s *Server) string {
	b.Helper()
	body, terr := s.Issue(auth.Identity{Email: "alice@example.com", Groups: []string{"eng", "people-team", "oncall"}},
		"client", "", "fam", time.Now().Add(time.Hour).Unix(), "bench")
	if terr != nil {
		b.Fatal(terr)
	}
	var r TokenResponse
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
	// Offboarding's cost: the same, with 10,000 people's sign-ins ended
	// (none of them alice).
	var ended []offboard.Entry
	for i := range 10000 {
		ended = append(ended, offboard.Entry{Email: fmt.Sprintf("left-%d@example.com", i), NotBefore: time.Now()})
	}
	s.ended.SetFile(ended)
	b.Run("uncached, 10000 ended sign-ins", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.verified.Purge()
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached, 10000 ended sign-ins", func(b *testing.B) {
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
