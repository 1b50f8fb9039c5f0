package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
)

// TestAuthRefusals: every answer to a refused token, as written by the one
// writer: status, WWW-Authenticate (with the facade's scope when it is on),
// Retry-After and the body's error code.
func TestAuthRefusals(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		status    int
		code      string // body "error"
		challenge string // "" when there must be none
		retry     string
	}{
		{"no token", &sso.Error{Kind: sso.NoToken, Description: "d"}, 401, "", `Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp"`, ""},
		{"malformed header", &sso.Error{Kind: sso.Malformed, Description: "d"}, 400, "invalid_request", `Bearer error="invalid_request", error_description="d", resource_metadata=`, ""},
		{"expired", &sso.Error{Kind: sso.Expired, Description: "gone"}, 401, "invalid_token", `Bearer error="invalid_token", error_description="gone", resource_metadata=`, ""},
		{"unverified email", &sso.Error{Kind: sso.EmailUnverified, Description: "d"}, 403, "insufficient_scope", `error="insufficient_scope"`, ""},
		{"issuer unavailable", &sso.Error{Kind: sso.IssuerUnavailable, Description: "d", RetryAfter: 2500 * time.Millisecond}, 503, "temporarily_unavailable", "", "3"},
		{"wrapped", fmt.Errorf("wrapped: %w", &sso.Error{Kind: sso.BadSignature}), 401, "invalid_token", `error_description="the token was refused"`, ""},
		{"verification timed out", context.DeadlineExceeded, 503, "temporarily_unavailable", "", "5"},
		{"other", errors.New("odd"), 401, "invalid_token", `error="invalid_token"`, ""},
	}
	e := &Edge{cfg: Config{MetadataURL: "https://gw/.well-known/oauth-protected-resource/mcp"},
		Deps: Deps{Scopes: func() ([]string, bool) { return nil, false }}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := authRefusalOf(tc.err)
			if a.kind == "" || a.description == "" {
				t.Fatalf("%+v: no metrics kind or description", a)
			}
			rec := httptest.NewRecorder()
			e.writeAuthRefusal(rec, a)
			var body struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tc.status || body.Error != tc.code || body.Description == "" {
				t.Fatalf("%d %s, want %d with error %q", rec.Code, rec.Body.Bytes(), tc.status, tc.code)
			}
			ch := rec.Header().Get("WWW-Authenticate")
			if tc.challenge == "" && ch != "" || !strings.Contains(ch, tc.challenge) {
				t.Fatalf("WWW-Authenticate %q, want %q", ch, tc.challenge)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retry {
				t.Fatalf("Retry-After %q, want %q", got, tc.retry)
			}
			over := a.overBudget("192.0.2.7", 12)
			rec = httptest.NewRecorder()
			e.writeAuthRefusal(rec, over)
			if rec.Code != 429 || rec.Header().Get("Retry-After") != "12" || rec.Header().Get("WWW-Authenticate") != "" ||
				!strings.Contains(rec.Body.String(), string(brain.CodeRateLimited)) || !strings.Contains(rec.Body.String(), "192.0.2.7") {
				t.Fatalf("over the budget: %d %v %s", rec.Code, rec.Header(), rec.Body.Bytes())
			}
		})
	}
}

func TestRetrySeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 5, time.Millisecond: 1, time.Second: 1, 2500 * time.Millisecond: 3, time.Minute: 60} {
		if got := retrySeconds(d); got != want {
			t.Errorf("retrySeconds(%v) = %d, want %d", d, got, want)
		}
	}
}
