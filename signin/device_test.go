package signin_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// lockedBuilder is an output the test reads while the client writes.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var codeRE = regexp.MustCompile(`(?m)^  ([B-Z]{4}-[B-Z]{4})$`)

// TestLoginDevice signs in with the device flow against a real gateway:
// the client prints the verification URL and the code; a browser
// elsewhere (the scripted one, with its own cookies) types the code,
// approves and signs in at the IdP; the client's next poll gets the
// tokens, which it stores and which work at /mcp. The client's waits are
// injected: the first poll waits until the browser is done.
func TestLoginDevice(t *testing.T) {
	env := startDev(t, nil)
	out := &lockedBuilder{}
	approved := make(chan struct{})
	var (
		mu     sync.Mutex
		sleeps []time.Duration
	)
	c := &signin.Client{Store: &signin.Store{Dir: t.TempDir() + "/signins"}, Out: out,
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			sleeps = append(sleeps, d)
			mu.Unlock()
			select {
			case <-approved:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		rec *signin.Record
		err error
	}
	done := make(chan result, 1)
	go func() {
		rec, err := c.LoginDevice(ctx, env.MCPURL)
		done <- result{rec, err}
	}()

	// The user reads the code off the terminal (polled: the client prints
	// it before its first wait, which blocks until approved is closed).
	var code, verify string
	for code == "" {
		select {
		case r := <-done:
			t.Fatalf("LoginDevice returned early: %v\n%s", r.err, out)
		case <-time.After(10 * time.Millisecond):
		}
		s := out.String()
		if m := codeRE.FindStringSubmatch(s); m != nil && strings.Contains(s, "Waiting up to") {
			code = m[1]
			verify = strings.TrimSpace(strings.SplitN(strings.SplitN(s, "open\n\n", 2)[1], "\n", 2)[0])
		}
	}
	if !strings.HasSuffix(verify, "/device") || !strings.Contains(out.String(), "?user_code="+code) {
		t.Fatalf("printed:\n%s", out)
	}
	b := testbrowser.New()
	p, err := b.Get(ctx, verify)
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Form()
	if err != nil {
		t.Fatal(err)
	}
	if p, err = b.Submit(ctx, p, f, map[string]string{"user_code": code}, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Body, signin.DefaultDeviceClientName) || !strings.Contains(p.Body, "brainstem login --device (host ") {
		t.Fatalf("approval page: %s", testbrowser.Text(p.Body))
	}
	// From here the approval page's allow button is a consent form the
	// scripted sign-in knows.
	if f, err = p.Form(); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Submit(ctx, p, f, nil, "allow"); err != nil {
		t.Fatal(err)
	}
	last, err := b.SignIn(ctx, p.Location.String(), nil, "frank@example.com", "")
	if err != nil || last.Status != http.StatusOK || !strings.Contains(last.Body, "signed in as frank@example.com") {
		t.Fatalf("approval: %v %s", err, testbrowser.Text(last.Body))
	}
	close(approved)

	r := <-done
	if r.err != nil {
		t.Fatalf("LoginDevice: %v\n%s", r.err, out)
	}
	if r.rec.Email != "frank@example.com" || r.rec.RefreshToken == "" {
		t.Fatalf("record %+v", r.rec)
	}
	if st := callMCP(t, env.MCPURL, r.rec.AccessToken); st != http.StatusOK {
		t.Fatalf("/mcp with the device token: %d", st)
	}
	stored, err := c.Token(ctx, env.MCPURL)
	if err != nil || stored.AccessToken != r.rec.AccessToken {
		t.Fatalf("stored sign-in: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sleeps) == 0 || sleeps[0] != 5*time.Second {
		t.Errorf("waits %v, want the server's interval of 5 s first", sleeps)
	}
}
