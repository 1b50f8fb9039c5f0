package sso

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/devidp"
)

// serveDevIDP runs a development IdP on loopback for the test.
func serveDevIDP(t *testing.T, clk *fakeClock, clientID string) *devidp.Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := devidp.Serve(ctx, ln, devidp.Config{Now: clk.Now, ClientID: clientID})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDevIDPTokens runs the token matrix cases that a real provider can
// produce against the development IdP through discovery and JWKS.
func TestDevIDPTokens(t *testing.T) {
	clk := newClock()
	p := serveDevIDP(t, clk, "brainstem")
	other := serveDevIDP(t, clk, "brainstem")
	otherClient := serveDevIDP(t, clk, "someone-else")
	v, err := NewVerifier(context.Background(), Config{
		Issuers: []IssuerConfig{
			{URL: p.Issuer(), Audiences: []string{"brainstem"}},
			{URL: otherClient.Issuer(), Audiences: []string{"brainstem"}},
		},
		Now:       clk.Now,
		CacheSize: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(p *devidp.Provider, ttl time.Duration) string {
		tok, _, err := p.Mint("Dev@Example.com", []string{"eng"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := mint(p, 0)
	short := mint(p, time.Minute)
	tests := []struct {
		name  string
		token string
		at    time.Duration // clock advance before verifying
		want  error
	}{
		{"valid", valid, 0, nil},
		{"valid near expiry", short, time.Minute, nil},
		{"expired", short, time.Minute + DefaultClockSkew, ErrExpired},
		{"issuer not configured", mint(other, 0), 0, ErrWrongIssuer},
		{"audience of another client", mint(otherClient, 0), 0, ErrWrongAudience},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Add(tt.at)
			t.Cleanup(func() { clk.Add(-tt.at) })
			id, err := v.Verify(context.Background(), tt.token)
			if tt.want == nil {
				if err != nil || id.Email != "dev@example.com" || len(id.Groups) != 1 {
					t.Fatalf("Verify = %+v, %v", id, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
