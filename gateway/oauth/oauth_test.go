package oauth_test

import (
	"context"
	"errors"
	"fmt"
	. "github.com/brainstem/brainstem/gateway/oauth"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/tooling/oauthtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestSignInAndRefresh walks the whole flow with a dynamically registered
// client: consent, IdP login, code, tokens, refresh; and a second sign-in
// from the same browser that is not asked for consent again.
func TestSignInAndRefresh(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	b := testbrowser.New()

	// The consent page names the client and warns it registered itself.
	p, err := b.Get(context.Background(), a.AuthorizeURL(r, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Test App", "registered itself", "an application on this computer (127.0.0.1:43210)"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, e.IdPURL) {
		t.Errorf("consent page CSP = %q", csp)
	}
	// Under "no-referrer" a browser sends Origin: null with the consent
	// form, which the origin check refuses (found by the Chromium run).
	if rp := p.Header.Get("Referrer-Policy"); rp != "same-origin" {
		t.Errorf("consent page Referrer-Policy = %q", rp)
	}

	code := e.Code(b, r, a, "Alice@Example.com")
	st, out := e.Token(r, a.Redeem(code))
	if st != http.StatusOK || out["token_type"] != "Bearer" || out["scope"] != "mcp" || out["refresh_token"] == nil {
		t.Fatalf("token: %d %v", st, out)
	}
	if out["expires_in"].(float64) != 3600 {
		t.Errorf("expires_in = %v", out["expires_in"])
	}
	id, err := oauthtest.IdentityOf(t, r, out["access_token"].(string))
	if err != nil || id.Email != "alice@example.com" {
		t.Fatalf("verify: %+v %v", id, err)
	}

	// Refresh: a new pair; the new access token verifies.
	e.Clock.Advance(time.Minute)
	st, out2 := e.Token(r, a.Refresh(out["refresh_token"].(string)))
	if st != http.StatusOK || out2["access_token"] == out["access_token"] || out2["refresh_token"] == out["refresh_token"] {
		t.Fatalf("refresh: %d %v", st, out2)
	}
	if id, err := oauthtest.IdentityOf(t, r, out2["access_token"].(string)); err != nil || id.Email != "alice@example.com" {
		t.Fatalf("refreshed token: %+v %v", id, err)
	}

	// The same browser signs in again: no consent page this time.
	p, err = b.Get(context.Background(), a.AuthorizeURL(r, nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != http.StatusFound || !strings.HasPrefix(p.Location.String(), e.IdPURL) {
		t.Fatalf("second sign-in was asked for consent again: %d %.200s", p.Status, p.Body)
	}
	// Another browser is asked.
	p, _ = testbrowser.New().Get(context.Background(), a.AuthorizeURL(r, nil))
	if p.Status != http.StatusOK || !strings.Contains(p.Body, `name="decision"`) {
		t.Fatalf("a new browser was not asked for consent: %d", p.Status)
	}
}

// TestGroupsFollowTheIdP: the access token carries the IdP's groups, and a
// refresh picks up a change.
func TestGroupsFollowTheIdP(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	back := e.SignIn(testbrowser.New(), a.AuthorizeURL(r, nil), "carol@example.com", "people-team, eng")
	st, out := e.Token(r, a.Redeem(back.Query().Get("code")))
	if st != http.StatusOK {
		t.Fatalf("%d %v", st, out)
	}
	id, err := oauthtest.IdentityOf(t, r, out["access_token"].(string))
	if err != nil || !slices.Equal(id.Groups, []string{"people-team", "eng"}) {
		t.Fatalf("%+v %v", id, err)
	}
}

// TestMetadataDocumentClient signs in with a client id that is the URL of a
// client metadata document, served on loopback (allowed in this test as in
// `brainstem dev`); the document is fetched once and cached.
func TestMetadataDocumentClient(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	var fetches atomic.Int32
	ln, docBase := oauthtest.Listen(t)
	docURL := docBase + "/client.json"
	mux := http.NewServeMux()
	mux.HandleFunc("/client.json", func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Metadata App","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none"}`, docURL)
	})
	oauthtest.Serve(t, ln, mux)
	a := oauthtest.NewApp(docURL, "http://127.0.0.1:43210/callback")
	b := testbrowser.New()
	p, err := b.Get(context.Background(), a.AuthorizeURL(r, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Body, "Metadata App") || !strings.Contains(p.Body, ln.Addr().String()) || strings.Contains(p.Body, "registered itself") {
		t.Fatalf("consent page: %.600s", p.Body)
	}
	code := e.Code(b, r, a, "dave@example.com")
	st, out := e.Token(r, a.Redeem(code))
	if st != http.StatusOK {
		t.Fatalf("%d %v", st, out)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times, want 1 (cached)", n)
	}
}

// TestAuthorizeRefusals: errors before the redirect URI is trusted are a
// page (never a redirect); after, they go back to the client.
func TestAuthorizeRefusals(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	tampered := a.ID[:len(RegisteredPrefix)+3] + "x" + a.ID[len(RegisteredPrefix)+4:]
	if tampered == a.ID {
		tampered = a.ID[:len(RegisteredPrefix)+3] + "y" + a.ID[len(RegisteredPrefix)+4:]
	}
	pages := []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"unregistered redirect URI", map[string]string{"redirect_uri": "http://127.0.0.1:43210/elsewhere"}, "not registered"},
		{"https redirect URI", map[string]string{"redirect_uri": "https://evil.example/cb"}, "not registered"},
		{"no redirect URI", map[string]string{"redirect_uri": ""}, "no redirect URI"},
		{"tampered client id", map[string]string{"client_id": tampered}, "client id is not one this gateway issued"},
		{"no client id", map[string]string{"client_id": ""}, "no client"},
		{"unknown client id", map[string]string{"client_id": "some-client"}, "client id is not one"},
		{"state too long", map[string]string{"state": strings.Repeat("s", MaxStateBytes+1)}, "state parameter"},
	}
	for _, tc := range pages {
		t.Run(tc.name, func(t *testing.T) {
			p, err := testbrowser.New().Get(context.Background(), a.AuthorizeURL(r, tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			if p.Location != nil || p.Status < 400 || !strings.Contains(p.Body, tc.want) {
				t.Fatalf("want an error page with %q, got %d %v %.300s", tc.want, p.Status, p.Location, p.Body)
			}
		})
	}
	redirects := []struct {
		name  string
		extra map[string]string
		code  string
	}{
		{"PKCE missing", map[string]string{"code_challenge": "", "code_challenge_method": ""}, "invalid_request"},
		{"PKCE plain", map[string]string{"code_challenge_method": "plain"}, "invalid_request"},
		{"PKCE challenge malformed", map[string]string{"code_challenge": "short"}, "invalid_request"},
		{"wrong resource", map[string]string{"resource": "https://other.example/mcp"}, "invalid_target"},
		{"response type token", map[string]string{"response_type": "token"}, "unsupported_response_type"},
	}
	for _, tc := range redirects {
		t.Run(tc.name, func(t *testing.T) {
			p, err := testbrowser.New().Get(context.Background(), a.AuthorizeURL(r, tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			if p.Location == nil || p.Location.Host != "127.0.0.1:43210" {
				t.Fatalf("want a redirect to the client, got %d %.300s", p.Status, p.Body)
			}
			q := p.Location.Query()
			if q.Get("error") != tc.code || q.Get("state") != "st-123" || q.Get("iss") != r.URL {
				t.Fatalf("redirect %s", p.Location)
			}
		})
	}
}

// TestConsentCannotBeSkipped: no code without this browser's consent.
func TestConsentCannotBeSkipped(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	ctx := context.Background()

	victim := testbrowser.New()
	p, err := victim.Get(ctx, a.AuthorizeURL(r, nil))
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Form()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("another browser posts the form", func(t *testing.T) {
		// An attacker holding a consent form (its own or the victim's) cannot
		// submit it from a browser that did not load it: the CSRF cookie is
		// missing.
		res, err := testbrowser.New().Submit(ctx, p, f, nil, "allow")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusForbidden || res.Location != nil {
			t.Fatalf("got %d %v", res.Status, res.Location)
		}
	})
	t.Run("cross-site post", func(t *testing.T) {
		evil := *p
		evil.URL, _ = url.Parse("https://evil.example/page")
		res, err := victim.Submit(ctx, &evil, f, nil, "allow")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusForbidden {
			t.Fatalf("got %d", res.Status)
		}
	})
	t.Run("altered request", func(t *testing.T) {
		res, err := victim.Submit(ctx, p, f, map[string]string{"request": f.Fields.Get("request") + "x"}, "allow")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusBadRequest {
			t.Fatalf("got %d", res.Status)
		}
	})
	t.Run("callback without the login cookie", func(t *testing.T) {
		// Straight to the callback with a made-up state: no login cookie.
		res, err := victim.Get(ctx, r.URL+PathCallback+"?state="+RandomString(16)+"&code=abc")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusBadRequest || res.Location != nil {
			t.Fatalf("got %d %v", res.Status, res.Location)
		}
	})
	t.Run("deny", func(t *testing.T) {
		res, err := victim.Submit(ctx, p, f, nil, "deny")
		if err != nil {
			t.Fatal(err)
		}
		if res.Location == nil || res.Location.Query().Get("error") != "access_denied" {
			t.Fatalf("got %d %v", res.Status, res.Location)
		}
	})
	t.Run("a form is used once", func(t *testing.T) {
		// The deny above consumed the CSRF cookie.
		res, err := victim.Submit(ctx, p, f, nil, "allow")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusForbidden {
			t.Fatalf("got %d", res.Status)
		}
	})
}

// TestCodeRefusals: each binding of a code is checked.
func TestCodeRefusals(t *testing.T) {
	e := newEnv(t, 2, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	other := e.RegisteredApp(r)

	t.Run("replayed on the same replica", func(t *testing.T) {
		code := e.Code(testbrowser.New(), r, a, "alice@example.com")
		if st, out := e.Token(r, a.Redeem(code)); st != http.StatusOK {
			t.Fatalf("%d %v", st, out)
		}
		st, out := e.Token(r, a.Redeem(code))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("replayed on another replica", func(t *testing.T) {
		code := e.Code(testbrowser.New(), r, a, "alice@example.com")
		if st, out := e.Token(r, a.Redeem(code)); st != http.StatusOK {
			t.Fatalf("%d %v", st, out)
		}
		st, out := e.Token(e.Replicas[1], a.Redeem(code))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("for another client", func(t *testing.T) {
		code := e.Code(testbrowser.New(), r, a, "alice@example.com")
		form := a.Redeem(code)
		form.Set("client_id", other.ID)
		st, out := e.Token(r, form)
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
		// The refusal did not burn the code for its owner.
		if st, out := e.Token(r, a.Redeem(code)); st != http.StatusOK {
			t.Fatalf("owner: %d %v", st, out)
		}
	})
	cases := []struct {
		name   string
		change func(url.Values)
		status int
		code   string
	}{
		{"wrong verifier", func(f url.Values) { f.Set("code_verifier", RandomString(32)) }, 400, "invalid_grant"},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_grant"},
		{"other redirect URI", func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:43211/callback") }, 400, "invalid_grant"},
		{"wrong resource", func(f url.Values) { f.Set("resource", "https://other.example/mcp") }, 400, "invalid_target"},
		{"forged code", func(f url.Values) { f.Set("code", CodePrefix+RandomString(64)) }, 400, "invalid_grant"},
		{"no client id", func(f url.Values) { f.Del("client_id") }, 401, "invalid_client"},
		{"tampered client id", func(f url.Values) { f.Set("client_id", f.Get("client_id")+"x") }, 401, "invalid_client"},
		{"bad grant type", func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code := e.Code(testbrowser.New(), r, a, "alice@example.com")
			form := a.Redeem(code)
			tc.change(form)
			st, out := e.Token(r, form)
			oauthtest.WantTokenError(t, st, out, tc.status, tc.code)
		})
	}
	t.Run("expired", func(t *testing.T) {
		code := e.Code(testbrowser.New(), r, a, "alice@example.com")
		e.Clock.Advance(config.DefaultCodeTTL + time.Second)
		st, out := e.Token(r, a.Redeem(code))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
		if !strings.Contains(out["error_description"].(string), "expired") {
			t.Errorf("description: %v", out["error_description"])
		}
	})
}

// TestRefreshRefusals: rotation with a reuse grace, revocation, and a user
// disabled at the IdP.
func TestRefreshRefusals(t *testing.T) {
	e := newEnv(t, 2, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	signedIn := func(email string) map[string]any {
		t.Helper()
		st, out := e.Token(r, a.Redeem(e.Code(testbrowser.New(), r, a, email)))
		if st != http.StatusOK {
			t.Fatalf("%d %v", st, out)
		}
		return out
	}

	t.Run("reuse within the grace gets the same answer; after it, the sign-in ends", func(t *testing.T) {
		out := signedIn("alice@example.com")
		rt := out["refresh_token"].(string)
		_, first := e.Token(r, a.Refresh(rt))
		e.Clock.Advance(config.DefaultRefreshReuseGrace / 2)
		st, again := e.Token(r, a.Refresh(rt))
		if st != http.StatusOK || again["refresh_token"] != first["refresh_token"] {
			t.Fatalf("within the grace: %d %v", st, again)
		}
		e.Clock.Advance(config.DefaultRefreshReuseGrace)
		st, late := e.Token(r, a.Refresh(rt))
		oauthtest.WantTokenError(t, st, late, http.StatusBadRequest, "invalid_grant")
		// Reuse past the grace ends the whole sign-in on this replica: the
		// rotated token and its access token are refused too.
		st, next := e.Token(r, a.Refresh(first["refresh_token"].(string)))
		oauthtest.WantTokenError(t, st, next, http.StatusBadRequest, "invalid_grant")
		if _, err := oauthtest.IdentityOf(t, r, first["access_token"].(string)); err == nil {
			t.Error("an access token of the revoked sign-in still verifies")
		}
	})
	t.Run("reuse on another replica", func(t *testing.T) {
		out := signedIn("alice@example.com")
		rt := out["refresh_token"].(string)
		if st, o := e.Token(r, a.Refresh(rt)); st != http.StatusOK {
			t.Fatalf("%d %v", st, o)
		}
		e.Clock.Advance(config.DefaultRefreshReuseGrace + time.Second)
		// The development IdP rotates its refresh tokens, so the sealed one
		// inside rt is dead at the IdP too.
		st, o := e.Token(e.Replicas[1], a.Refresh(rt))
		oauthtest.WantTokenError(t, st, o, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("another client", func(t *testing.T) {
		out := signedIn("alice@example.com")
		b := e.RegisteredApp(r)
		st, o := e.Token(r, b.Refresh(out["refresh_token"].(string)))
		oauthtest.WantTokenError(t, st, o, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("user disabled at the IdP", func(t *testing.T) {
		out := signedIn("mallory@example.com")
		if err := e.IdP.SetDisabled("mallory@example.com", true); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.IdP.SetDisabled("mallory@example.com", false) })
		st, o := e.Token(r, a.Refresh(out["refresh_token"].(string)))
		oauthtest.WantTokenError(t, st, o, http.StatusBadRequest, "invalid_grant")
		if !strings.Contains(o["error_description"].(string), "no longer valid") {
			t.Errorf("description: %v", o["error_description"])
		}
	})
	t.Run("revoked", func(t *testing.T) {
		out := signedIn("alice@example.com")
		resp, err := http.PostForm(r.URL+PathRevoke, url.Values{"token": {out["refresh_token"].(string)}, "client_id": {a.ID}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		st, o := e.Token(r, a.Refresh(out["refresh_token"].(string)))
		oauthtest.WantTokenError(t, st, o, http.StatusBadRequest, "invalid_grant")
		if _, err := oauthtest.IdentityOf(t, r, out["access_token"].(string)); err == nil {
			t.Error("the revoked sign-in's access token still verifies on this replica")
		}
	})
	t.Run("access token revoked", func(t *testing.T) {
		out := signedIn("alice@example.com")
		at := out["access_token"].(string)
		if _, err := oauthtest.IdentityOf(t, r, at); err != nil {
			t.Fatal(err)
		}
		resp, err := http.PostForm(r.URL+PathRevoke, url.Values{"token": {at}, "client_id": {a.ID}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if _, err := oauthtest.IdentityOf(t, r, at); !errors.Is(err, sso.ErrExpired) {
			t.Fatalf("revoked access token: %v", err)
		}
	})
}

// TestAccessTokenChecks: what Verify refuses.
func TestAccessTokenChecks(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	_, out := e.Token(r, a.Redeem(e.Code(testbrowser.New(), r, a, "alice@example.com")))
	at := out["access_token"].(string)

	// Another gateway (same IdP, its own key and URL) issues a token: this
	// one's key id is unknown here, so it is not even taken as ours.
	other := newEnv(t, 1, nil)
	oa := other.RegisteredApp(other.Replicas[0])
	_, oout := other.Token(other.Replicas[0], oa.Redeem(other.Code(testbrowser.New(), other.Replicas[0], oa, "alice@example.com")))
	if r.Srv.Handles(oout["access_token"].(string)) {
		t.Error("a token of another gateway's key is taken as this gateway's")
	}

	// Same key, another audience: a replica configured for another MCP URL.
	mis := e.AddReplica(nil)
	if _, err := mis.Srv.Verify(context.Background(), at); !errors.Is(err, sso.ErrWrongIssuer) && !errors.Is(err, sso.ErrWrongAudience) {
		t.Errorf("token for another resource: %v", err)
	}

	e.Clock.Advance(config.DefaultAccessTokenTTL + AccessClockSkew + time.Second)
	if _, err := r.Srv.Verify(context.Background(), at); !errors.Is(err, sso.ErrExpired) {
		t.Errorf("expired token: %v", err)
	}
	tampered := at[:len(at)-4] + "AAAA"
	if _, err := r.Srv.Verify(context.Background(), tampered); err == nil {
		t.Error("tampered signature verifies")
	}
}

func TestRegistrationRefusals(t *testing.T) {
	e := newEnv(t, 1, func(c *Config) {
		c.RedirectURIs = []string{"https://vscode.dev/redirect"}
		c.RedirectSchemes = []string{"cursor"}
	})
	r := e.Replicas[0]
	for _, ok := range []string{
		`{"redirect_uris":["http://127.0.0.1:1234/cb"]}`,
		`{"redirect_uris":["http://localhost/callback"],"token_endpoint_auth_method":"client_secret_post"}`,
		`{"redirect_uris":["http://[::1]:9/cb"],"client_name":"X"}`,
		`{"redirect_uris":["https://vscode.dev/redirect"]}`,
		`{"redirect_uris":["cursor://anysphere.cursor-mcp/oauth/callback"]}`,
	} {
		if st, out := e.Register(r, ok); st != http.StatusCreated || out["token_endpoint_auth_method"] != "none" {
			t.Errorf("%s: %d %v", ok, st, out)
		}
	}
	for _, tc := range []struct{ body, code string }{
		{`{}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["https://evil.example/cb"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["http://evil.example/cb"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["http://127.0.0.1/cb#frag"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["vscode://x/cb"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["http://127.0.0.1/` + strings.Repeat("a", clients.MaxRedirectURIBytes) + `"]}`, "invalid_redirect_uri"},
		{`{"redirect_uris":["http://127.0.0.1/cb"],"client_name":"a\u0000b"}`, "invalid_client_metadata"},
		{`{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":["client_credentials"]}`, "invalid_client_metadata"},
		{`{"redirect_uris":["http://127.0.0.1/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
		{`[1]`, "invalid_client_metadata"},
		{`{"redirect_uris":["http://127.0.0.1/cb"]} {}`, "invalid_client_metadata"},
	} {
		st, out := e.Register(r, tc.body)
		if st != http.StatusBadRequest || out["error"] != tc.code {
			t.Errorf("%.80s: %d %v, want 400 %s", tc.body, st, out, tc.code)
		}
	}
	// Too many from one address.
	var last int
	for range RegisterPerMin + 1 {
		last, _ = e.Register(r, `{"redirect_uris":["http://127.0.0.1/cb"]}`)
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("registration flood: last status %d", last)
	}
}

// TestMetadataDocumentRefusals: SSRF protection and document checks.
func TestMetadataDocumentRefusals(t *testing.T) {
	prod := newEnv(t, 1, func(c *Config) { c.ClientMetadata.AllowLoopback = false })
	dev := newEnv(t, 1, nil)
	ln, base := oauthtest.Listen(t)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	mux := http.NewServeMux()
	doc := func(id string, extra string) string {
		return fmt.Sprintf(`{"client_id":%q,"redirect_uris":["http://127.0.0.1/cb"]%s}`, id, extra)
	}
	mux.HandleFunc("/ok.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc(base+"/ok.json", ""))
	})
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc(base+"/big.json", `,"pad":"`+strings.Repeat("x", clients.MaxMetadataDocumentBytes)+`"`))
	})
	mux.HandleFunc("/slow.json", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/mismatch.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc("https://other.example/client.json", ""))
	})
	mux.HandleFunc("/secret.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, doc(base+"/secret.json", `,"token_endpoint_auth_method":"private_key_jwt"`))
	})
	mux.HandleFunc("/html.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, doc(base+"/html.json", ""))
	})
	mux.HandleFunc("/redirect.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok.json", http.StatusFound)
	})
	oauthtest.Serve(t, ln, mux)
	dev.Replicas[0].Srv.SetMetadataFetchTimeout(300 * time.Millisecond)

	try := func(e *testEnv, id string) *testbrowser.Page {
		t.Helper()
		a := oauthtest.NewApp(id, "http://127.0.0.1:43210/cb")
		p, err := testbrowser.New().Get(context.Background(), a.AuthorizeURL(e.Replicas[0], nil))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Sanity: the good document works in development.
	if p := try(dev, base+"/ok.json"); p.Status != http.StatusOK {
		t.Fatalf("good document: %d %.300s", p.Status, p.Body)
	}
	t.Run("a host name that resolves to loopback", func(t *testing.T) {
		// The machine's own name often resolves to a loopback address
		// (/etc/hosts); the name passes the name check, the address not.
		host, err := os.Hostname()
		if err != nil {
			t.Skip(err)
		}
		addrs, err := net.LookupHost(host)
		if err != nil || len(addrs) == 0 || !net.ParseIP(addrs[0]).IsLoopback() {
			t.Skipf("%s does not resolve to a loopback address here (%v %v)", host, addrs, err)
		}
		p := try(prod, fmt.Sprintf("https://%s:%d/ok.json", host, ln.Addr().(*net.TCPAddr).Port))
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "not a public address") {
			t.Fatalf("got %d %s", p.Status, testbrowser.Text(p.Body))
		}
	})
	for _, tc := range []struct {
		name string
		e    *testEnv
		id   string
		want string
	}{
		{"loopback in production", prod, base + "/ok.json", "loopback"},
		// 0.0.0.0 passes the name check (it is not a loopback address) but
		// reaches this machine: the check after resolution refuses it.
		{"unspecified address in production", prod, fmt.Sprintf("https://0.0.0.0:%d/ok.json", ln.Addr().(*net.TCPAddr).Port), "not a public address"},
		{"unspecified address in development", dev, fmt.Sprintf("https://0.0.0.0:%d/ok.json", ln.Addr().(*net.TCPAddr).Port), "not a public address"},
		{"plain http in production", prod, "http://client.example/c.json", "must use https"},
		{"no path", prod, "https://client.example", "must have a path"},
		{"dot segments", prod, "https://client.example/a/../c.json", "dot segments"},
		{"oversized", dev, base + "/big.json", "over"},
		{"slow", dev, base + "/slow.json", "fetching"},
		{"client_id mismatch", dev, base + "/mismatch.json", "is not its URL"},
		{"confidential client", dev, base + "/secret.json", "not supported"},
		{"not JSON", dev, base + "/html.json", "not application/json"},
		{"redirected", dev, base + "/redirect.json", "without redirects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := try(tc.e, tc.id)
			if p.Status != http.StatusBadRequest || p.Location != nil || !strings.Contains(p.Body, tc.want) {
				t.Fatalf("want a 400 page with %q, got %d %s", tc.want, p.Status, testbrowser.Text(p.Body))
			}
		})
	}
}

// TestRedirectAttackList: no URI of testdata/redirects.txt can be
// registered, and none matches a client registered with a loopback URI.
func TestRedirectAttackList(t *testing.T) {
	e := newEnv(t, 1, func(c *Config) {
		c.RedirectURIs = []string{"https://vscode.dev/redirect"}
		c.RedirectSchemes = []string{"cursor"}
	})
	s := e.Replicas[0].Srv
	data, err := os.ReadFile("testdata/redirects.txt")
	if err != nil {
		t.Fatal(err)
	}
	loopback := &Client{ID: "x", RedirectURIs: []string{"http://127.0.0.1/cb", "http://localhost/cb", "https://vscode.dev/redirect"}}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if err := s.CheckRedirectURI(line); err == nil {
			t.Errorf("registrable: %q", line)
		}
		if line != "https://vscode.dev/redirect" && RedirectAllowed(loopback, line) {
			t.Errorf("matches a registered URI: %q", line)
		}
	}
	if n < 30 {
		t.Fatalf("only %d attack strings read", n)
	}
}

// TestIdPUnavailable: an unreachable IdP is a 503 with Retry-After, as a
// page at /authorize and as temporarily_unavailable at /token, and a code
// whose redemption failed so can be redeemed again.
func TestIdPUnavailable(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	a := e.RegisteredApp(r)
	code := e.Code(testbrowser.New(), r, a, "alice@example.com")
	e.StopIdP()

	st, out := e.Token(r, a.Redeem(code))
	oauthtest.WantTokenError(t, st, out, http.StatusServiceUnavailable, "temporarily_unavailable")

	// A fresh replica has not discovered the IdP yet: its authorization
	// endpoint says so in a page.
	fresh := e.AddReplica(nil)
	b := e.RegisteredApp(fresh)
	p, err := testbrowser.New().Get(context.Background(), b.AuthorizeURL(fresh, nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != http.StatusServiceUnavailable || p.Header.Get("Retry-After") == "" || p.Location != nil {
		t.Fatalf("authorize with the IdP down: %d %q %s", p.Status, p.Header.Get("Retry-After"), testbrowser.Text(p.Body))
	}
	// The failed redemption did not burn the code on this replica: with the
	// IdP still down the answer is again "unavailable", not "already used".
	st, out = e.Token(r, a.Redeem(code))
	oauthtest.WantTokenError(t, st, out, http.StatusServiceUnavailable, "temporarily_unavailable")
}

// TestDeviceRegistration: a client registers the device grant alone (no
// redirect URI) or with the code flow; what the grant types leave out is
// refused, and the grants are part of the signed id.
func TestDeviceRegistration(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	for body, want := range map[string]string{
		`{"grant_types":["` + GrantTypeDevice + `"]}`:                                                              "[refresh_token " + GrantTypeDevice + "]",
		`{"grant_types":["authorization_code","` + GrantTypeDevice + `"],"redirect_uris":["http://127.0.0.1/cb"]}`: "[authorization_code refresh_token " + GrantTypeDevice + "]",
		`{"redirect_uris":["http://127.0.0.1/cb"]}`:                                                                "[authorization_code refresh_token]",
	} {
		st, out := e.Register(r, body)
		if st != http.StatusCreated || fmt.Sprint(out["grant_types"]) != want {
			t.Errorf("%s: %d %v, want grant types %s", body, st, out, want)
			continue
		}
		c, err := r.Srv.ParseRegisteredClient(out["client_id"].(string))
		if err != nil || c.Device != strings.Contains(want, GrantTypeDevice) {
			t.Errorf("%s: parsed %+v %v", body, c, err)
		}
	}
	for _, tc := range []struct{ body, code string }{
		{`{"grant_types":["refresh_token"]}`, "invalid_client_metadata"},
		{`{"grant_types":["` + GrantTypeDevice + `"],"redirect_uris":["http://127.0.0.1/cb"]}`, "invalid_redirect_uri"},
		{`{"grant_types":["authorization_code","` + GrantTypeDevice + `"]}`, "invalid_redirect_uri"},
		{`{"grant_types":["urn:ietf:params:oauth:grant-type:device_code "]}`, "invalid_client_metadata"},
	} {
		st, out := e.Register(r, tc.body)
		if st != http.StatusBadRequest || out["error"] != tc.code {
			t.Errorf("%s: %d %v, want 400 %s", tc.body, st, out, tc.code)
		}
	}
}
