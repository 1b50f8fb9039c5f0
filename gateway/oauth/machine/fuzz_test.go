package machine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// FuzzClientCredentialsForm: no form body makes the client credentials
// grant panic; every answer is JSON, and a token is issued only to a
// genuine secret of its account or to a genuine assertion, once.
func FuzzClientCredentialsForm(f *testing.F) {
	secret := oauthtest.NewSecret(f)
	key := newEd25519(f)
	s := oauthtest.BareServer(f, func(c *Config) {
		c.ServiceAccounts = []ServiceAccount{
			{ID: "ci", Credentials: []Credential{{SecretSHA256: oauthtest.SecretHash(secret)}}},
			{ID: "bot", Credentials: []Credential{{PublicKey: publicPEM(f, key)}}},
		}
	})
	g, err := New(s)
	if err == nil {
		err = s.Add(g)
	}
	if err != nil {
		f.Fatal(err)
	}
	r := &replica{Srv: s, Grants: []oauth.Grant{g}, URL: "http://127.0.0.1:1"}
	bot := machine{id: "bot", key: key, alg: jose.EdDSA}
	genuine := map[string]bool{}
	now := time.Now()
	for _, over := range []map[string]any{nil, {"aud": r.URL}, {"aud": []string{r.URL + PathToken}}} {
		a := bot.assertion(f, r, now, over)
		genuine[a] = true
		f.Add(assertionForm(a).Encode())
	}
	good := machine{id: "ci", secret: secret}.secretForm()
	f.Add(good.Encode())
	f.Add(good.Encode() + "&resource=http%3A%2F%2F127.0.0.1%3A1%2Fmcp&scope=mcp")
	f.Add(good.Encode() + "&client_id=bot")
	f.Add("grant_type=client_credentials&client_id=ci&client_secret=" + oauthtest.SecretHash(secret))
	f.Add("grant_type=client_credentials&client_assertion_type=x&client_assertion=a.b.c")
	f.Add("grant_type=client_credentials")
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		s.Endpoints().ServeHTTP(w, req)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%q: answer is not JSON: %s", body, w.Body)
		}
		if w.Code != http.StatusOK {
			if out["error"] == "" {
				t.Fatalf("%q: %d without an error code", body, w.Code)
			}
			return
		}
		form, err := url.ParseQuery(body)
		if err != nil {
			t.Fatalf("%q: a token for a form that does not parse", body)
		}
		bySecret := form.Get("client_id") == "ci" && form.Get("client_secret") == secret
		byKey := genuine[form.Get("client_assertion")]
		if !bySecret && !byKey {
			t.Fatalf("%q: a token without a genuine credential: %v", body, out)
		}
		if byKey {
			delete(genuine, form.Get("client_assertion")) // once only
		}
		if _, err := s.Verify(context.Background(), out["access_token"].(string)); err != nil {
			t.Fatalf("%q: the token issued does not verify: %v", body, err)
		}
	})
}
