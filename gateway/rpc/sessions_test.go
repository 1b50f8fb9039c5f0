package rpc

import (
	"net/http"
	"testing"
	"time"
)

// TestSessionGate: a session opens once mcp-go served a POST of it (an
// initialize's new id included) and closes an eighth of the idle TTL
// later; modern requests and refused ones open nothing.
func TestSessionGate(t *testing.T) {
	now := time.Unix(1000, 0)
	s, err := NewLeanServer(LeanConfig{SessionIdleTTL: 80 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	legacy := hdr("Mcp-Protocol-Version", "2025-06-18", "Mcp-Session-Id", "a")
	s.SessionServed(legacy, hdr(), http.StatusOK)
	s.SessionServed(hdr(), hdr("Mcp-Session-Id", "b"), http.StatusOK)                                       // an initialize
	s.SessionServed(hdr("Mcp-Protocol-Version", "2026-07-28", "Mcp-Session-Id", "c"), hdr(), http.StatusOK) // stateless
	s.SessionServed(hdr("Mcp-Session-Id", "d"), hdr(), http.StatusNotFound)                                 // refused
	s.SessionServed(hdr("Mcp-Session-Id", "e"), hdr(), http.StatusBadRequest)
	for _, tc := range []struct {
		after time.Duration
		id    string
		open  bool
	}{
		{0, "a", true}, {0, "b", true}, {0, "c", false}, {0, "d", false}, {0, "e", false}, {0, "never", false},
		{9*time.Second + 999*time.Millisecond, "a", true},
		{10 * time.Second, "a", false},
	} {
		now = time.Unix(1000, 0).Add(tc.after)
		if got := s.sessions.open(tc.id); got != tc.open {
			t.Errorf("after %s, session %q open = %v, want %v", tc.after, tc.id, got, tc.open)
		}
	}
}
