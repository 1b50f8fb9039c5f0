package signin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCallbackListener: bound to 127.0.0.1; answers with another state are
// refused and do not end the wait; exactly one valid answer is accepted.
func TestCallbackListener(t *testing.T) {
	l, err := listenCallback("the-state")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	if ip := l.ln.Addr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("listening on %s, want 127.0.0.1 only", ip)
	}
	redirect := l.RedirectURI()
	if !strings.HasPrefix(redirect, "http://127.0.0.1:") || !strings.HasSuffix(redirect, CallbackPath) {
		t.Fatalf("redirect URI %s", redirect)
	}
	if st := get(t, redirect+"?code=evil&state=guess"); st != http.StatusBadRequest {
		t.Errorf("wrong state: %d, want 400", st)
	}
	if st := get(t, redirect+"?code=evil"); st != http.StatusBadRequest {
		t.Errorf("no state: %d, want 400", st)
	}
	if st := get(t, strings.TrimSuffix(redirect, CallbackPath)+"/favicon.ico"); st != http.StatusNotFound {
		t.Errorf("other path: %d, want 404", st)
	}
	select {
	case res := <-l.result:
		t.Fatalf("a refused answer ended the wait: %+v", res)
	default:
	}
	if st := get(t, redirect+"?"+url.Values{"code": {"c1"}, "state": {"the-state"}, "iss": {"https://i"}}.Encode()); st != http.StatusOK {
		t.Errorf("valid answer: %d", st)
	}
	if st := get(t, redirect+"?code=c2&state=the-state"); st != http.StatusConflict {
		t.Errorf("second valid answer: %d, want 409", st)
	}
	res, err := l.wait(context.Background(), time.Minute)
	if err != nil || res.code != "c1" || res.iss != "https://i" || res.err != nil {
		t.Errorf("wait = %+v, %v", res, err)
	}
}

func TestCallbackListenerErrors(t *testing.T) {
	l, err := listenCallback("s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	get(t, l.RedirectURI()+"?"+url.Values{"error": {"access_denied"}, "error_description": {"the user denied the request"}, "state": {"s"}}.Encode())
	res, _ := l.wait(context.Background(), time.Minute)
	var oe *OAuthError
	if !errors.As(res.err, &oe) || oe.Code != "access_denied" {
		t.Errorf("denied answer: %+v", res)
	}

	// Nobody answers: the wait ends with ErrCallbackTimeout.
	l2, err := listenCallback("s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l2.close)
	if _, err := l2.wait(context.Background(), time.Nanosecond); !errors.Is(err, ErrCallbackTimeout) {
		t.Errorf("no answer: %v, want ErrCallbackTimeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l2.wait(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
