package gateway

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
	"github.com/brainstem/brainstem/proto"
)

// TestClassify: the one mapping from proto codes, proto sentinels and
// context errors to tool error codes and sentinels.
func TestClassify(t *testing.T) {
	tests := []struct {
		err      error
		code     string
		sentinel error
	}{
		{&proto.Error{Code: proto.CodeForbidden, Message: "m"}, CodeForbidden, ErrForbidden},
		{&proto.Error{Code: proto.CodeBadRequest}, CodeInvalidArgument, ErrInvalidArgument},
		{&proto.Error{Code: proto.CodeTooLarge}, CodeTooLarge, nil},
		{&proto.Error{Code: proto.CodeUnknownTool}, CodeUnknownTool, nil},
		{&proto.Error{Code: proto.CodeUnavailable}, CodeUnavailable, ErrUnavailable},
		{&proto.Error{Code: proto.CodeDeadline}, CodeTimeout, ErrTimeout},
		{&proto.Error{Code: proto.CodeCanceled}, CodeCanceled, nil},
		{&proto.Error{Code: proto.CodeUnauthenticated}, CodeUnavailable, ErrTokenRejected},
		{&proto.Error{Code: proto.CodeVersion}, CodeUnavailable, ErrUnavailable},
		{&proto.Error{Code: proto.CodeWrongRole, Message: "only gateways may mint"}, CodeUnavailable, ErrMintRefused},
		{fmt.Errorf("%w: call: reset", proto.ErrConnectionLost), CodeUnavailable, ErrUnavailable},
		{&proto.Error{Code: proto.CodeInternal}, CodeInternal, nil},
		{fmt.Errorf("proto: call: %w", context.DeadlineExceeded), CodeTimeout, ErrTimeout},
		{fmt.Errorf("x: %w", context.Canceled), CodeCanceled, nil},
		{fmt.Errorf("%w: dial: refused", proto.ErrUnavailable), CodeUnavailable, ErrUnavailable},
		{proto.ErrTooLarge, CodeTooLarge, nil},
		{errors.New("boom"), CodeInternal, nil},
		{newError(CodeUnknownWing, ErrUnknownWing, "x"), CodeUnknownWing, ErrUnknownWing},
	}
	for _, tc := range tests {
		e := classify(tc.err, "payments")
		if e.Code != tc.code || e.Message == "" {
			t.Errorf("%v → %+v, want %s", tc.err, e, tc.code)
		}
		if tc.sentinel != nil && !errors.Is(e, tc.sentinel) {
			t.Errorf("%v → %v does not wrap %v", tc.err, e, tc.sentinel)
		}
	}
	if classify(nil, "") != nil {
		t.Fatal("nil error classified")
	}
	// A deadline with no connection is an unreachable shard.
	if e := classifyShard(context.DeadlineExceeded, &wing{name: "w", client: disconnected{}}); e.Code != CodeUnavailable {
		t.Fatalf("deadline while disconnected: %+v", e)
	}
	if e := classifyShard(context.DeadlineExceeded, &wing{name: "w", client: &fakeMintClient{}}); e.Code != CodeTimeout {
		t.Fatalf("deadline while connected: %+v", e)
	}
	// A lost answer: outcome_unknown for a write, unavailable for a read;
	// a request that never left is unavailable either way.
	w := &wing{name: "payments", client: &fakeMintClient{}}
	lost := fmt.Errorf("%w: call: stateless reset", proto.ErrConnectionLost)
	for _, tc := range []struct {
		err   error
		write bool
		code  string
	}{
		{lost, true, CodeOutcomeUnknown},
		{lost, false, CodeUnavailable},
		{fmt.Errorf("%w: dial", proto.ErrUnavailable), true, CodeUnavailable},
	} {
		e := classifyCall(tc.err, w, "brain_write", tc.write)
		if e.Code != tc.code {
			t.Errorf("classifyCall(%v, write=%v) = %+v, want %s", tc.err, tc.write, e, tc.code)
		}
		if tc.code == CodeOutcomeUnknown && (!errors.Is(e, ErrOutcomeUnknown) || !errors.Is(e, proto.ErrConnectionLost)) {
			t.Errorf("outcome_unknown does not wrap its sentinel and cause: %v", e)
		}
	}
}

type disconnected struct{ shardClient }

func (disconnected) Connected() bool { return false }

func (disconnected) State() proto.State { return proto.State{} }

// TestRefusalAndAuthMapping: HTTP statuses for refusals and SSO errors.
func TestRefusalAndAuthMapping(t *testing.T) {
	for err, st := range map[error]int{
		ErrOriginNotAllowed: 403, ErrProtocolVersion: 400, ErrBodyTooLarge: 413, ErrBadBody: 400,
		ErrRateLimited: 429, ErrTooManyAuthFailed: 429, errors.New("x"): 500,
	} {
		if got := refusalOf(err).status; got != st {
			t.Errorf("%v → %d, want %d", err, got, st)
		}
	}
}

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
	g := &Gateway{metadataURL: "https://gw/.well-known/oauth-protected-resource/mcp"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := authRefusalOf(tc.err)
			if a.kind == "" || a.description == "" {
				t.Fatalf("%+v: no metrics kind or description", a)
			}
			rec := httptest.NewRecorder()
			g.writeAuthRefusal(rec, a)
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
			g.writeAuthRefusal(rec, over)
			if rec.Code != 429 || rec.Header().Get("Retry-After") != "12" || rec.Header().Get("WWW-Authenticate") != "" ||
				!strings.Contains(rec.Body.String(), CodeRateLimited) || !strings.Contains(rec.Body.String(), "192.0.2.7") {
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
