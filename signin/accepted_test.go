package signin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/signin"
)

// TestAccepted: a 401 from the gateway is ErrRefused naming the fix and
// the gateway's reason; any other answer, or none, is no verdict.
func TestAccepted(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		refused bool
	}{
		{"accepted", http.StatusOK, false},
		{"no session yet", http.StatusBadRequest, false},
		{"rate limited", http.StatusTooManyRequests, false},
		{"refused", http.StatusUnauthorized, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" || r.Method != http.MethodPost {
					t.Errorf("request %s %q", r.Method, r.Header.Get("Authorization"))
				}
				if c.status == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="the token was signed by a key this gateway does not have"`)
				}
				w.WriteHeader(c.status)
			}))
			t.Cleanup(srv.Close)
			err := (&signin.Client{}).Accepted(context.Background(), srv.URL+"/mcp", "tok")
			if got := errors.Is(err, signin.ErrRefused); got != c.refused {
				t.Fatalf("Accepted: %v", err)
			}
			if c.refused && (!strings.Contains(err.Error(), "sign in again: brainstem login "+srv.URL) || !strings.Contains(err.Error(), "a key this gateway does not have")) {
				t.Fatalf("message: %v", err)
			}
		})
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // a gateway that cannot be reached: no verdict
	if err := (&signin.Client{}).Accepted(context.Background(), srv.URL+"/mcp", "tok"); err != nil {
		t.Fatalf("unreachable: %v", err)
	}
}
