package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// TestPollDevice: the poll loop honours the interval, adds 5 s at each
// slow_down, keeps waiting on authorization_pending, and ends on the
// tokens, access_denied or expired_token. The token endpoint is scripted
// (a real HTTP server answering a fixed sequence) so that the client's
// reaction to each answer is checked.
func TestPollDevice(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		waits   []time.Duration
		wantErr error
	}{
		{"pending then tokens", []string{"authorization_pending", "authorization_pending", "ok"}, []time.Duration{3, 3, 3}, nil},
		{"slow_down adds 5 s each time", []string{"slow_down", "slow_down", "authorization_pending", "ok"}, []time.Duration{3, 8, 13, 13}, nil},
		{"denied", []string{"authorization_pending", "access_denied"}, []time.Duration{3, 3}, ErrDeviceDenied},
		{"expired", []string{"expired_token"}, []time.Duration{3}, ErrDeviceExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != GrantTypeDevice || r.PostForm.Get("device_code") != "dc" {
					http.Error(w, "bad poll", http.StatusBadRequest)
					return
				}
				a := tc.answers[min(n, len(tc.answers)-1)]
				n++
				w.Header().Set("Content-Type", "application/json")
				if a == "ok" {
					fmt.Fprint(w, `{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt"}`)
					return
				}
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":%q}`, a)
			}))
			t.Cleanup(srv.Close)
			var waits []time.Duration
			now := time.Unix(1e9, 0)
			c := &Client{Now: func() time.Time { return now }, Sleep: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d/time.Second)
				now = now.Add(d)
				return nil
			}}
			tr, err := c.pollDevice(context.Background(), srv.Client(), srv.URL, &DeviceAuthorization{DeviceCode: "dc", Interval: 3}, "client", "http://127.0.0.1/mcp", time.Hour)
			if !errors.Is(err, tc.wantErr) || tc.wantErr == nil && (tr == nil || tr.AccessToken != "at") {
				t.Fatalf("got %v %v, want %v", tr, err, tc.wantErr)
			}
			if !slices.Equal(waits, tc.waits) {
				t.Errorf("waits %v s, want %v", waits, tc.waits)
			}
		})
	}
	t.Run("gives up after the wait", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"authorization_pending"}`)
		}))
		t.Cleanup(srv.Close)
		now := time.Unix(1e9, 0)
		polls := 0
		c := &Client{Now: func() time.Time { return now }, Sleep: func(_ context.Context, d time.Duration) error {
			now = now.Add(d)
			polls++
			return nil
		}}
		_, err := c.pollDevice(context.Background(), srv.Client(), srv.URL, &DeviceAuthorization{DeviceCode: "dc", Interval: 5}, "client", "http://127.0.0.1/mcp", time.Minute)
		if !errors.Is(err, ErrDeviceExpired) || polls != 12 {
			t.Fatalf("%v after %d polls", err, polls)
		}
	})
}
