package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestSignOutRefusals: POST /console/logout signs out only with a session
// that opens and that session's CSRF token from the console's own origin.
// Anything else is refused as a forged form is (401 without a session,
// 403 with one) and sets no cookie: a cross-site form sends no
// SameSite=Lax cookie, and a browser accepts the cookies of a top-level
// navigation's answer, so clearing the cookie there would let any page
// sign a curator out (issue 34). The session goes on after every refusal,
// and the console's own sign-out form still signs out.
func TestSignOutRefusals(t *testing.T) {
	env, _ := startEnv(t)
	alice := signIn(t, env, "alice@example.com", "")
	other := signIn(t, env, "alice@example.com", "")
	origin := strings.TrimSuffix(env.ConsoleURL, "/console/")
	token := alice.csrf()
	anon := &user{t: t, b: testbrowser.New(), console: env.ConsoleURL}
	ended := &user{t: t, b: testbrowser.New(), console: env.ConsoleURL}
	for _, c := range alice.b.Cookies(mustURL(t, env.ConsoleURL)) {
		if c.Name == "brainstem-console-signin" {
			v := []byte(c.Value)
			v[len(v)/2] ^= 1
			ended.b.SetCookies(mustURL(t, env.ConsoleURL), []*http.Cookie{{Name: c.Name, Value: string(v), Path: "/"}})
		}
	}
	for _, c := range []struct {
		name   string
		who    *user
		vals   url.Values
		header http.Header
		status int
	}{
		// The reproduction of issue 34: another site's form, no cookie.
		{"cross-site form without the cookie", anon, url.Values{}, http.Header{"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusUnauthorized},
		{"no cookie, a token of another session", anon, url.Values{"csrf": {token}}, http.Header{"Origin": {origin}}, http.StatusUnauthorized},
		{"a cookie that does not open", ended, url.Values{"csrf": {token}}, http.Header{"Origin": {origin}}, http.StatusUnauthorized},
		{"no csrf token", alice, url.Values{}, http.Header{"Origin": {origin}}, http.StatusForbidden},
		{"another session's token", alice, url.Values{"csrf": {other.csrf()}}, http.Header{"Origin": {origin}}, http.StatusForbidden},
		{"cross-site origin with the token", alice, url.Values{"csrf": {token}}, http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"same-site other port with the token", alice, url.Values{"csrf": {token}}, http.Header{"Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		{"sec-fetch-site same-site with the token", alice, url.Values{"csrf": {token}}, http.Header{"Sec-Fetch-Site": {"same-site"}, "Origin": {origin}}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := c.who.post("logout", c.vals, c.header)
			b := body(t, resp)
			if resp.StatusCode != c.status || len(resp.Header.Values("Set-Cookie")) != 0 {
				t.Fatalf("%d %v, want %d and no Set-Cookie: %s", resp.StatusCode, resp.Header.Values("Set-Cookie"), c.status, testbrowser.Text(b))
			}
		})
	}
	if p := alice.mustGet("w/payments/inbox"); !strings.Contains(p.Body, "alice@example.com") {
		t.Fatal("the session did not go on after the refused sign-outs")
	}
	home := alice.mustGet("")
	out := alice.submit(home, alice.form(home, "/logout"), nil)
	if out.Status != http.StatusSeeOther || out.Location.Path != "/console/signed-out" || !clearsSession(out.Header) {
		t.Fatalf("the console's own sign-out: %d %v %v", out.Status, out.Location, out.Header.Values("Set-Cookie"))
	}
	if p := alice.get(""); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location.Path, "/console/login") {
		t.Fatalf("after sign-out the console should send to the sign-in: %d", p.Status)
	}
}

// clearsSession reports whether h clears the session cookie.
func clearsSession(h http.Header) bool {
	for _, c := range h.Values("Set-Cookie") {
		if strings.HasPrefix(c, "brainstem-console-signin=;") && strings.Contains(c, "Max-Age=0") {
			return true
		}
	}
	return false
}
