package idjag

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/gateway/oauth/machine"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// FuzzParseIDJAG: no input makes the ID-JAG decoder panic; what it
// accepts is within MaxIDJAGBytes, a compact JWS with one asymmetric
// signature and the ID-JAG typ.
func FuzzParseIDJAG(f *testing.F) {
	hdr := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		hdr(`{"alg":"RS256","typ":"oauth-id-jag+jwt"}`) + "." + hdr(`{"iss":"https://idp","jti":"j"}`) + ".c2ln",
		hdr(`{"alg":"RS256","typ":"application/oauth-id-jag+jwt"}`) + "." + hdr(`{}`) + ".c2ln",
		hdr(`{"alg":"RS256","typ":"JWT"}`) + "." + hdr(`{}`) + ".c2ln",
		hdr(`{"alg":"none","typ":"oauth-id-jag+jwt"}`) + "." + hdr(`{}`) + ".",
		hdr(`{"alg":"HS256","typ":"oauth-id-jag+jwt"}`) + "." + hdr(`{}`) + ".c2ln",
		hdr(`{"alg":"RS256","typ":"oauth-id-jag+jwt"}`) + "." + hdr(`{"exp":"soon","resource":["a","b"],"scope":1}`) + ".c2ln",
		"", "a.b.c", "...", strings.Repeat("a", MaxIDJAGBytes+1),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := parseIDJAG(raw); err != nil {
			return
		}
		if len(raw) > MaxIDJAGBytes || strings.Count(raw, ".") != 2 {
			t.Fatalf("accepted %q", raw)
		}
		jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA})
		if err != nil {
			t.Fatalf("accepted %q that go-jose refuses: %v", raw, err)
		}
		typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string)
		if !strings.EqualFold(strings.TrimPrefix(strings.ToLower(typ), "application/"), TypeIDJAG) {
			t.Fatalf("accepted typ %q", typ)
		}
	})
}

// FuzzJWTBearerForm: whatever the form, the JWT bearer grant answers
// JSON with an error code, and never issues a token when no trusted IdP
// can have signed the assertion (its keys are unreachable here).
func FuzzJWTBearerForm(f *testing.F) {
	s := oauthtest.BareServer(f, func(c *Config) {
		c.ServiceAccounts = []ServiceAccount{{ID: "ci", Credentials: []Credential{{SecretSHA256: oauthtest.SecretHash(oauthtest.NewSecret(f))}}}}
		c.Enterprise = EnterpriseConfig{IdPs: []EnterpriseIdP{{Issuer: "http://127.0.0.1:1", Clients: []string{"agent", "ci"}}}}
	})
	machines, err := machine.New(s)
	if err != nil {
		f.Fatal(err)
	}
	g, err := New(context.Background(), s, machines, Options{})
	if err == nil {
		err = s.Add(machines, g)
	}
	if err != nil {
		f.Fatal(err)
	}
	jag := func(claims string) string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"oauth-id-jag+jwt","kid":"k"}`))
		return h + "." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".c2ln"
	}
	for _, a := range []string{jag(`{"iss":"http://127.0.0.1:1","client_id":"agent","jti":"1"}`), jag(`{"iss":"https://x"}`), "a.b.c", ""} {
		f.Add(url.Values{"grant_type": {GrantTypeJWTBearer}, "client_id": {"agent"}, "assertion": {a}}.Encode())
		f.Add(url.Values{"grant_type": {GrantTypeJWTBearer}, "client_id": {"ci"}, "client_secret": {"x"}, "assertion": {a}}.Encode())
	}
	f.Add("grant_type=" + url.QueryEscape(GrantTypeJWTBearer) + "&assertion=a&assertion=b")
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
		if w.Code == http.StatusOK && strings.Contains(body, "jwt-bearer") {
			t.Fatalf("%q: a token from an assertion nobody could verify: %v", body, out)
		}
		if w.Code != http.StatusOK && out["error"] == "" {
			t.Fatalf("%q: %d without an error code", body, w.Code)
		}
	})
}
