package signin_test

// These tests sign in to a real development environment (devenv: the dev
// IdP, shards and a gateway with its authorization server, on loopback
// ports chosen by the kernel), driving a scripted browser
// (tooling/testbrowser) through the injected Browser.

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

func startDev(t *testing.T, mutate func(*config.Config)) *devenv.Env {
	t.Helper()
	return devenvtest.Start(t, devenv.Config{Gateway: mutate})
}

// browserAs signs in as email in a fresh scripted browser, allowing the
// consent page; it fails the test unless the client's loopback page says
// the sign-in finished.
func browserAs(t *testing.T, email string) signin.Browser {
	return signin.BrowserFunc(func(ctx context.Context, authURL string) error {
		p, err := testbrowser.New().SignIn(ctx, authURL, nil, email, "")
		if err != nil {
			return err
		}
		if p.Status != http.StatusOK || !strings.Contains(p.Body, "Signed in to Brainstem") {
			t.Errorf("the sign-in ended at %s with %d: %.300s", p.URL, p.Status, p.Body)
		}
		return nil
	})
}

func newClient(t *testing.T, b signin.Browser) (*signin.Client, *strings.Builder) {
	out := &strings.Builder{}
	return &signin.Client{Store: &signin.Store{Dir: t.TempDir() + "/signins"}, Browser: b, Out: out}, out
}

// callMCP posts an MCP initialize with token and returns the status.
func callMCP(t *testing.T, mcpURL, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestLoginTokenRefresh: login through the browser, then Token returns the
// stored access token while it is fresh, and refreshes an expired one,
// saving the rotated refresh token before handing out the new access token.
func TestLoginTokenRefresh(t *testing.T) {
	env := startDev(t, nil)
	c, out := newClient(t, browserAs(t, "alice@example.com"))
	ctx := context.Background()

	if _, err := c.Token(ctx, env.MCPURL); !errors.Is(err, signin.ErrNotSignedIn) {
		t.Fatalf("Token before login: %v, want ErrNotSignedIn", err)
	}
	rec, err := c.Login(ctx, env.MCPURL)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	if rec.Email != "alice@example.com" || rec.RefreshToken == "" || rec.MCPURL != env.MCPURL || rec.ExpiresAt.IsZero() {
		t.Fatalf("record %+v", rec)
	}
	authURL := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "/authorize?") {
			authURL = strings.TrimSpace(l)
		}
	}
	q := must(url.Parse(authURL)).Query()
	if q.Get("resource") != env.MCPURL || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 ||
		len(q.Get("state")) < 22 || !strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") {
		t.Errorf("authorization request %v", q)
	}
	if st := callMCP(t, env.MCPURL, rec.AccessToken); st != http.StatusOK {
		t.Fatalf("the new access token: %d at /mcp", st)
	}
	st, err := os.Stat(c.Store.Path(env.MCPURL))
	if err != nil || st.Mode().Perm() != signin.FileMode {
		t.Fatalf("sign-in file: %v, %v", st, err)
	}

	// Fresh: the stored token, unchanged.
	again, err := c.Token(ctx, env.MCPURL)
	if err != nil || again.AccessToken != rec.AccessToken {
		t.Fatalf("Token while fresh: %v (same token: %v)", err, again != nil && again.AccessToken == rec.AccessToken)
	}

	// Expired (the clock is left alone; the stored expiry is moved):
	// refreshed, and the rotated refresh token is on disk.
	expired := *rec
	expired.ExpiresAt = time.Now().Add(-time.Minute)
	if err := c.Store.Save(&expired); err != nil {
		t.Fatal(err)
	}
	fresh, err := c.Token(ctx, env.MCPURL)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if fresh.AccessToken == rec.AccessToken || fresh.RefreshToken == rec.RefreshToken || fresh.RefreshToken == "" {
		t.Fatal("the refresh did not rotate both tokens")
	}
	onDisk, err := c.Store.Load(env.MCPURL)
	if err != nil || onDisk.RefreshToken != fresh.RefreshToken || onDisk.AccessToken != fresh.AccessToken || onDisk.RefreshedAt.IsZero() {
		t.Fatalf("the stored sign-in was not updated before the token was returned: %v", err)
	}
	if !fresh.Fresh(time.Now(), signin.DefaultRefreshMargin) {
		t.Errorf("the refreshed token expires at %s", fresh.ExpiresAt)
	}
	if st := callMCP(t, env.MCPURL, fresh.AccessToken); st != http.StatusOK {
		t.Fatalf("the refreshed access token: %d at /mcp", st)
	}
}

// countingTransport counts the token requests a client sends.
type countingTransport struct {
	mu     sync.Mutex
	tokens int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/token") {
		c.mu.Lock()
		c.tokens++
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestConcurrentRefresh: two processes' worth of Token calls on one
// expired sign-in redeem the rotating refresh token once.
func TestConcurrentRefresh(t *testing.T) {
	env := startDev(t, nil)
	ctx := context.Background()
	c, _ := newClient(t, browserAs(t, "alice@example.com"))
	rec, err := c.Login(ctx, env.MCPURL)
	if err != nil {
		t.Fatal(err)
	}
	expired := *rec
	expired.ExpiresAt = time.Now().Add(-time.Minute)
	if err := c.Store.Save(&expired); err != nil {
		t.Fatal(err)
	}
	ct := &countingTransport{}
	const n = 4
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		// One Client per caller, sharing only the directory, as separate
		// processes would.
		ci := &signin.Client{Store: &signin.Store{Dir: c.Store.Dir}, HTTP: &http.Client{Transport: ct}}
		wg.Go(func() {
			r, err := ci.Token(ctx, env.MCPURL)
			if err == nil {
				got[i] = r.AccessToken
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("caller %d: %v (same token: %v)", i, errs[i], got[i] == got[0])
		}
	}
	if ct.tokens != 1 {
		t.Errorf("%d token requests, want exactly one refresh", ct.tokens)
	}
}

// TestLoginRefusals: what ends a sign-in without tokens, and what does not.
func TestLoginRefusals(t *testing.T) {
	env := startDev(t, nil)
	ctx := context.Background()

	t.Run("a stray answer does not end the sign-in", func(t *testing.T) {
		real := browserAs(t, "alice@example.com")
		c, out := newClient(t, signin.BrowserFunc(func(ctx context.Context, authURL string) error {
			redirect := must(url.Parse(authURL)).Query().Get("redirect_uri")
			resp, err := http.Get(redirect + "?code=forged&state=guessed")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("forged answer: %d, want 400", resp.StatusCode)
			}
			return real.Open(ctx, authURL)
		}))
		if _, err := c.Login(ctx, env.MCPURL); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	})

	t.Run("consent denied", func(t *testing.T) {
		c, _ := newClient(t, signin.BrowserFunc(func(ctx context.Context, authURL string) error {
			b := testbrowser.New()
			p, err := b.Get(ctx, authURL)
			if err != nil {
				return err
			}
			f, err := p.Form()
			if err != nil {
				return err
			}
			if p, err = b.Submit(ctx, p, f, nil, "deny"); err != nil {
				return err
			}
			_, err = b.Follow(ctx, p, nil)
			return err
		}))
		_, err := c.Login(ctx, env.MCPURL)
		var oe *signin.OAuthError
		if !errors.As(err, &oe) || oe.Code != "access_denied" {
			t.Fatalf("Login = %v, want access_denied", err)
		}
		if _, err := c.Store.Load(env.MCPURL); !errors.Is(err, signin.ErrNotSignedIn) {
			t.Errorf("a denied sign-in left a file: %v", err)
		}
	})

	t.Run("no answer from the browser", func(t *testing.T) {
		c, out := newClient(t, signin.BrowserFunc(func(context.Context, string) error { return signin.ErrNoBrowser }))
		c.CallbackTimeout = time.Nanosecond
		_, err := c.Login(ctx, env.MCPURL)
		if !errors.Is(err, signin.ErrCallbackTimeout) || !strings.Contains(err.Error(), "brainstem login "+env.MCPURL) {
			t.Fatalf("Login = %v, want ErrCallbackTimeout naming the command to run", err)
		}
		if !strings.Contains(out.String(), "Could not open a browser") || !strings.Contains(out.String(), "/authorize?") {
			t.Errorf("without a browser the URL is printed:\n%s", out)
		}
	})

	t.Run("the sign-in ends when the IdP disables the user", func(t *testing.T) {
		c, _ := newClient(t, browserAs(t, "mallory@example.com"))
		rec, err := c.Login(ctx, env.MCPURL)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.IdP().SetDisabled("mallory@example.com", true); err != nil {
			t.Fatal(err)
		}
		expired := *rec
		expired.ExpiresAt = time.Now().Add(-time.Minute)
		if err := c.Store.Save(&expired); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Token(ctx, env.MCPURL); !errors.Is(err, signin.ErrSignInEnded) {
			t.Fatalf("Token after the IdP disabled the user: %v, want ErrSignInEnded", err)
		}
	})
}

// TestLoginChecksTheResource: a gateway whose public_url is not the URL
// used is refused before anything is registered or a browser opens.
func TestLoginChecksTheResource(t *testing.T) {
	env := startDev(t, func(c *config.Config) { c.PublicURL = "http://127.0.0.1:1" })
	c, _ := newClient(t, signin.BrowserFunc(func(context.Context, string) error {
		t.Error("a browser was opened for a gateway with the wrong public_url")
		return nil
	}))
	if _, err := c.Login(context.Background(), env.MCPURL); !errors.Is(err, signin.ErrResourceMismatch) {
		t.Fatalf("Login = %v, want ErrResourceMismatch", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
