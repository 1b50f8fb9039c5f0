package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
)

func TestCachingVerifier(t *testing.T) {
	clk := newClock()
	k := mustKey(t)
	m := NewMinter("payments", k, time.Minute, clk.Now)
	cv, err := NewCachingVerifier(NewTokenVerifier("payments", clk.Now, k.Public()), 2)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := m.Mint("ann@acme.com", brain.CapRead, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second answer comes from the cache
		c, err := cv.Verify(tok)
		if err != nil || c.Email != "ann@acme.com" || c.Caps != brain.CapRead {
			t.Fatalf("verify %d = %+v, %v", i, c, err)
		}
	}
	if _, ok := cv.cache.Peek(tok); !ok {
		t.Fatal("an accepted token was not remembered")
	}

	// A refused token is never remembered.
	other := mustKey(t)
	forged, _, _ := NewMinter("payments", other, time.Minute, clk.Now).Mint("mallory@acme.com", brain.CapCurate, time.Time{})
	for range 2 {
		if _, err := cv.Verify(forged); !errors.Is(err, ErrTokenInvalid) {
			t.Fatalf("token of another key: %v, want ErrTokenInvalid", err)
		}
	}
	if _, ok := cv.cache.Peek(forged); ok {
		t.Fatal("a refused token was remembered")
	}

	// A remembered token still expires, leeway included, and is forgotten.
	clk.Add(time.Minute + ShardTokenLeeway - time.Second)
	if _, err := cv.Verify(tok); err != nil {
		t.Fatalf("within leeway: %v", err)
	}
	clk.Add(time.Second)
	if _, err := cv.Verify(tok); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("remembered token past exp+leeway: %v, want ErrTokenExpired", err)
	}
	if _, ok := cv.cache.Peek(tok); ok {
		t.Fatal("an expired token stayed in the cache")
	}
}
