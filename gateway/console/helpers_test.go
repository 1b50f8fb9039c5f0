package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/logcheck"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// startEnv starts a development environment (IdP, shards, gateway on
// loopback) and returns it with its audit log.
func startEnv(t testing.TB) (*devenv.Env, *logcheck.Buffer) {
	t.Helper()
	audit := &logcheck.Buffer{}
	env := devenvtest.Start(t, devenv.Config{AuditLog: audit, Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
	}})
	if env.ConsoleURL == "" {
		t.Fatal("the dev environment has no console URL")
	}
	return env, audit
}

// user is a browser signed in to the console.
type user struct {
	t       testing.TB
	b       *testbrowser.Browser
	console string
	email   string
}

// signIn signs email in at the dev IdP through the console's sign-in and
// requires the console's home page at the end.
func signIn(t testing.TB, env *devenv.Env, email, groups string) *user {
	t.Helper()
	b := testbrowser.New()
	p, err := b.SignIn(context.Background(), env.ConsoleURL+"login", nil, email, groups)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != http.StatusOK || p.URL.String() != env.ConsoleURL || !strings.Contains(p.Body, email) {
		t.Fatalf("after sign-in: %s %d: %s", p.URL, p.Status, testbrowser.Text(p.Body))
	}
	return &user{t: t, b: b, console: env.ConsoleURL, email: email}
}

// get loads a console page (path relative to the console) without
// following redirects.
func (u *user) get(path string) *testbrowser.Page {
	u.t.Helper()
	p, err := u.b.Get(context.Background(), u.console+path)
	if err != nil {
		u.t.Fatal(err)
	}
	return p
}

// mustGet loads a page and requires 200.
func (u *user) mustGet(path string) *testbrowser.Page {
	u.t.Helper()
	p := u.get(path)
	if p.Status != http.StatusOK {
		u.t.Fatalf("GET %s: %d: %s", path, p.Status, testbrowser.Text(p.Body))
	}
	return p
}

// form returns the form of page p whose action ends with suffix.
func (u *user) form(p *testbrowser.Page, suffix string) *testbrowser.Form {
	u.t.Helper()
	forms, err := p.Forms()
	if err != nil {
		u.t.Fatal(err)
	}
	for _, f := range forms {
		if strings.HasSuffix(f.Action.Path, suffix) {
			return f
		}
	}
	u.t.Fatalf("%s has no form posting to …%s", p.URL, suffix)
	return nil
}

// submit posts a form of p with set, as the browser does (Origin of the
// page), and returns the answer unfollowed.
func (u *user) submit(p *testbrowser.Page, f *testbrowser.Form, set map[string]string) *testbrowser.Page {
	u.t.Helper()
	ans, err := u.b.Submit(context.Background(), p, f, set, "")
	if err != nil {
		u.t.Fatal(err)
	}
	return ans
}

// post sends a form body with the given headers and the browser's cookies.
func (u *user) post(path string, vals url.Values, header http.Header) *http.Response {
	u.t.Helper()
	target, _ := url.Parse(u.console + path)
	req, _ := http.NewRequest(http.MethodPost, target.String(), strings.NewReader(vals.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	for _, c := range u.b.Cookies(target) {
		req.AddCookie(c)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// csrf is the session's CSRF token, read from a page's sign-out form.
func (u *user) csrf() string {
	u.t.Helper()
	return u.form(u.mustGet(""), "/logout").Fields.Get("csrf")
}

// attack is one line of testdata/attacks.txt.
type attack struct {
	Name  string   `json:"name"`
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
	Body  string   `json:"body"`
}

func attacks(t testing.TB) []attack {
	t.Helper()
	b, err := os.ReadFile("testdata/attacks.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []attack
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var a attack
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("attacks.txt: %v", err)
		}
		out = append(out, a)
	}
	return out
}
