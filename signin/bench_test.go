package signin

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkTokenFresh is `brainstem token` on a fresh stored sign-in (what
// a headersHelper run costs besides starting the process): the permission
// check, the read, the decode and validation. BenchmarkReadFile reads the
// same file and nothing more, as the baseline.
func BenchmarkTokenFresh(b *testing.B) {
	c, u := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Token(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFile(b *testing.B) {
	c, u := benchStore(b)
	p := c.Store.Path(u)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStore(b *testing.B) (*Client, string) {
	const u = "https://brain.acme.com/mcp"
	rec := testRecord(u)
	c := &Client{Store: &Store{Dir: b.TempDir()}, Now: func() time.Time { return rec.SignedInAt }}
	if err := c.Store.Save(rec); err != nil {
		b.Fatal(err)
	}
	return c, u
}

// BenchmarkParseChallenges parses the gateway's 401 challenge.
func BenchmarkParseChallenges(b *testing.B) {
	h := `Bearer error="invalid_token", error_description="the token expired", resource_metadata="https://brain.acme.com/.well-known/oauth-protected-resource/mcp", scope="mcp"`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseChallenges(h); err != nil {
			b.Fatal(err)
		}
	}
}
