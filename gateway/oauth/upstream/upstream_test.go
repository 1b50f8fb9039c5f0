package upstream

import (
	"errors"
	"net/http"
	"testing"

	"golang.org/x/oauth2"
)

// TestClassifyUpstream: how an IdP's token-endpoint failure is taken.
func TestClassifyUpstream(t *testing.T) {
	resp := func(status int) *http.Response {
		return &http.Response{StatusCode: status, Status: http.StatusText(status)}
	}
	for _, tc := range []struct {
		err  error
		want error
	}{
		{&oauth2.RetrieveError{Response: resp(400), ErrorCode: "invalid_grant"}, ErrRefused},
		{&oauth2.RetrieveError{Response: resp(400), ErrorCode: "invalid_request"}, ErrRefused}, // Dex, for a forgotten refresh token
		{&oauth2.RetrieveError{Response: resp(401), ErrorCode: "invalid_client"}, ErrClient},
		{&oauth2.RetrieveError{Response: resp(400), ErrorCode: "unauthorized_client"}, ErrClient},
		{&oauth2.RetrieveError{Response: resp(503)}, ErrUnavailable},
		{&oauth2.RetrieveError{Response: resp(500), ErrorCode: "invalid_grant"}, ErrUnavailable},
		{errors.New("connection refused"), ErrUnavailable},
	} {
		if got := classifyUpstream(tc.err); !errors.Is(got, tc.want) {
			t.Errorf("classifyUpstream(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
