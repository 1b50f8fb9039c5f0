package signin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"sync"
	"time"
)

// CallbackPath is the path of the loopback redirect URI.
const CallbackPath = "/callback"

// RegisteredRedirectURI is the redirect URI this client registers: loopback
// http without a port, which the authorization server matches in all but
// the port (RFC 8252 §7.3); each sign-in listens on a fresh port.
const RegisteredRedirectURI = "http://127.0.0.1" + CallbackPath

// ErrCallbackTimeout: the browser did not come back in time.
var ErrCallbackTimeout = errors.New("signin: no answer from the browser")

// callbackResult is the one valid answer the listener accepts.
type callbackResult struct {
	code, iss string
	err       error
}

// callbackListener is the loopback redirect target of one sign-in. It is
// bound to 127.0.0.1 only and accepts exactly one answer carrying the
// sign-in's state; answers with another state are refused and do not end
// the wait, so a page that does not know the state cannot end the sign-in.
type callbackListener struct {
	ln     net.Listener
	srv    *http.Server
	state  string
	once   sync.Once
	result chan callbackResult
	done   chan struct{}
}

func listenCallback(state string) (*callbackListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("signin: cannot listen on 127.0.0.1 for the browser's answer: %w", err)
	}
	l := &callbackListener{ln: ln, state: state, result: make(chan callbackResult, 1), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CallbackPath, l.serve)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// RedirectURI is the redirect URI of this sign-in (with its port).
func (l *callbackListener) RedirectURI() string {
	return "http://" + l.ln.Addr().String() + CallbackPath
}

func (l *callbackListener) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(l.state)) != 1 {
		page(w, http.StatusBadRequest, "This answer is not for this sign-in",
			"The page that sent you here does not belong to the sign-in `brainstem` is waiting for. Nothing was signed in; the sign-in in your terminal is still waiting.")
		return
	}
	res := callbackResult{code: q.Get("code"), iss: q.Get("iss")}
	if e := q.Get("error"); e != "" {
		res.err = &OAuthError{Endpoint: "authorization", Code: clip(e, 100), Description: clip(q.Get("error_description"), 500)}
	} else if res.code == "" {
		res.err = errors.New("signin: the authorization server answered without a code")
	}
	accepted := false
	l.once.Do(func() {
		l.result <- res
		accepted = true
	})
	switch {
	case !accepted:
		page(w, http.StatusConflict, "This sign-in is already finished", "You can close this window.")
	case res.err != nil:
		page(w, http.StatusOK, "Sign-in refused", res.err.Error()+". Go back to your terminal.")
	default:
		page(w, http.StatusOK, "Signed in to Brainstem", "You can close this window and go back to your terminal.")
	}
}

// wait returns the answer, or an error when ctx ends or timeout passes.
func (l *callbackListener) wait(ctx context.Context, timeout time.Duration) (callbackResult, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case res := <-l.result:
		return res, nil
	case <-ctx.Done():
		return callbackResult{}, fmt.Errorf("signin: stopped waiting for the browser: %w", ctx.Err())
	case <-t.C:
		return callbackResult{}, fmt.Errorf("%w within %s", ErrCallbackTimeout, timeout)
	}
}

// close stops the listener, after the answer's page was written.
func (l *callbackListener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
	<-l.done
}

var resultPage = template.Must(template.New("result").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Brainstem: {{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em;line-height:1.45}</style></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

func page(w http.ResponseWriter, status int, title, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = resultPage.Execute(w, struct{ Title, Message string }{title, msg})
}
