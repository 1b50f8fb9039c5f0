package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
)

// refusingVerifier is an IdP verifier for servers that never redeem a code.
type refusingVerifier struct{}

func (refusingVerifier) Verify(context.Context, string) (auth.Identity, error) {
	return auth.Identity{}, errors.New("no IdP in this test")
}

// fuzzServer is a server with a fresh key and no IdP (New makes no network
// call): enough for the decoders.
func fuzzServer(f *testing.F) *Server {
	f.Helper()
	return fuzzServerWith(f, nil)
}

// fuzzServerWith is fuzzServer with its configuration adjusted by mutate.
func fuzzServerWith(f *testing.F, mutate func(*Config)) *Server {
	f.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	cfg := Config{
		Enabled: true, SigningKeyFile: "unused",
		Upstream:       UpstreamConfig{Issuer: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s"},
		ClientMetadata: ClientMetadataConfig{Disabled: true}, // no fetches from fuzzed client ids
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(context.Background(), cfg, Options{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp", Verifier: refusingVerifier{}, Keys: []auth.KeyPair{k}})
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzParseRegisteredClient: no input makes the client-id decoder panic,
// and any id it accepts was signed by the server's key.
func FuzzParseRegisteredClient(f *testing.F) {
	s := fuzzServer(f)
	good, rerr := s.register([]byte(`{"client_name":"A","redirect_uris":["http://127.0.0.1/cb"]}`), time.Now())
	if rerr != nil {
		f.Fatal(rerr)
	}
	f.Add(good.ID)
	f.Add(registeredPrefix)
	f.Add(registeredPrefix + "e30.AAAA")
	f.Add(registeredPrefix + "eyJyIjpbImh0dHA6Ly8xMjcuMC4wLjEvY2IiXX0.")
	f.Add(good.ID + "x")
	f.Add(strings.Replace(good.ID, ".", "..", 2))
	f.Fuzz(func(t *testing.T, id string) {
		c, err := s.parseRegisteredClient(id)
		if err != nil {
			return
		}
		if id != good.ID {
			t.Fatalf("an id the server did not sign was accepted: %q → %+v", id, c)
		}
		if len(c.RedirectURIs) == 0 || !c.Dynamic {
			t.Fatalf("accepted client is incomplete: %+v", c)
		}
	})
}

// FuzzOpenSealed: no input makes the sealed-value decoder (login state,
// codes, refresh tokens, consent records) panic, and nothing but values the
// server sealed for that purpose opens.
func FuzzOpenSealed(f *testing.F) {
	s := fuzzServer(f)
	ls, err := s.keys.seal(purposeLogin, loginState{SID: "abc", RedirectURI: "http://127.0.0.1/cb", Exp: 1})
	if err != nil {
		f.Fatal(err)
	}
	code, err := s.keys.seal(purposeCode, codeState{ID: "c", Exp: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ls)
	f.Add(code)
	f.Add("")
	f.Add("AQ")
	f.Add("AQAAAAA")
	f.Add(ls[:len(ls)-1])
	valid := map[string]string{ls: purposeLogin, code: purposeCode}
	f.Fuzz(func(t *testing.T, v string) {
		for _, purpose := range []string{purposeLogin, purposeCode, purposeRefresh, purposeConsent, purposeRequest, purposeDeviceCode, purposeDeviceForm, purposeDeviceApprove} {
			var out map[string]any
			if err := s.keys.open(purpose, v, maxRefreshBytes, &out); err == nil && valid[v] != purpose {
				t.Fatalf("%q opened as %s", v, purpose)
			}
		}
	})
}

// FuzzVerifyAccessToken: no bearer token makes the access-token verifier
// panic, and only tokens the server signed verify.
func FuzzVerifyAccessToken(f *testing.F) {
	s := fuzzServer(f)
	body, terr := s.issue(auth.Identity{Email: "a@example.com"}, "client", "", "fam", time.Now().Add(time.Hour).Unix(), "test")
	if terr != nil {
		f.Fatal(terr)
	}
	at := string(body[strings.Index(string(body), `"access_token":"`)+16:])
	at = at[:strings.IndexByte(at, '"')]
	f.Add(at)
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add(at[:len(at)-2])
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := s.Verify(context.Background(), tok)
		if err == nil && (tok != at || id.Email != "a@example.com") {
			t.Fatalf("%q verified as %+v", tok, id)
		}
	})
}

// FuzzDeviceAuthorizationForm: no form body makes the device authorization
// endpoint panic; it answers a device code only to the one client
// registered for the device grant, and every answer is JSON.
func FuzzDeviceAuthorizationForm(f *testing.F) {
	s := fuzzServer(f)
	dev, rerr := s.register([]byte(`{"client_name":"D","grant_types":["`+GrantTypeDevice+`"]}`), time.Now())
	if rerr != nil {
		f.Fatal(rerr)
	}
	good := url.Values{"client_id": {dev.ID}}.Encode()
	f.Add(good)
	f.Add(good + "&scope=mcp&resource=http%3A%2F%2F127.0.0.1%3A1%2Fmcp")
	f.Add(good + "&client_id=x")
	f.Add("client_id=")
	f.Add("client_id=https%3A%2F%2Fexample.com%2Fc.json")
	f.Add("%zz=1")
	f.Add(good + "&scope=admin")
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/device_authorization", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "192.0.2.1:1234"
		s.limits.Purge() // the per-address budget is not under test
		w := httptest.NewRecorder()
		s.serveDeviceAuthorization(w, req)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%q: answer is not JSON: %s", body, w.Body)
		}
		if w.Code == http.StatusOK {
			form, err := url.ParseQuery(body)
			if err != nil || form.Get("client_id") != dev.ID {
				t.Fatalf("%q: a device code for another client: %v", body, out)
			}
			if _, err := normalizeUserCode(out["user_code"].(string)); err != nil {
				t.Fatalf("%q: user code %v", body, out["user_code"])
			}
		} else if out["error"] == "" {
			t.Fatalf("%q: %d without an error code", body, w.Code)
		}
	})
}

// FuzzUserCode: the verification page's reading of a typed code never
// panics and accepts only 8 letters of the alphabet.
func FuzzUserCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdf ghjk", "AAAA-AAAA", "", "----", "ＢＣＤＦ", "BCDFGHJK\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := normalizeUserCode(in)
		if err != nil {
			return
		}
		if len(c) != UserCodeLength || strings.Trim(c, userCodeAlphabet) != "" {
			t.Fatalf("%q read as %q", in, c)
		}
	})
}

// FuzzDevicePageForm: no form posted to the verification page makes it
// panic, and without the page's own sealed token and CSRF cookie nothing
// is accepted: every answer is an error page, never the approval page or
// a redirect to the IdP.
func FuzzDevicePageForm(f *testing.F) {
	s := fuzzServer(f)
	f.Add("step=code&user_code=BCDF-GHJK&token=x")
	f.Add("step=approve&decision=allow&token=x")
	f.Add("step=code&step=approve")
	f.Add("%zz")
	f.Add("step=code&token=" + strings.Repeat("A", 200))
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, PathDevice, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookieDeviceCSRF+"=x")
		w := httptest.NewRecorder()
		s.serveDeviceForm(w, req)
		if w.Code < 400 || w.Header().Get("Location") != "" || strings.Contains(w.Body.String(), `name="decision"`) {
			t.Fatalf("%q: %d %s", body, w.Code, w.Header().Get("Location"))
		}
		if !strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Fatalf("%q: a page without the CSP", body)
		}
	})
}

// FuzzClientCredentialsForm: no form body makes the client credentials
// grant panic; every answer is JSON, and a token is issued only to a
// genuine secret of its account or to a genuine assertion, once.
func FuzzClientCredentialsForm(f *testing.F) {
	secret := newSecret(f)
	key := newEd25519(f)
	s := fuzzServerWith(f, func(c *Config) {
		c.ServiceAccounts = []ServiceAccount{
			{ID: "ci", Credentials: []Credential{{SecretSHA256: secretHash(secret)}}},
			{ID: "bot", Credentials: []Credential{{PublicKey: publicPEM(f, key)}}},
		}
	})
	r := &replica{srv: s, url: "http://127.0.0.1:1"}
	bot := machine{id: "bot", key: key, alg: jose.EdDSA}
	genuine := map[string]bool{}
	now := time.Now()
	for _, over := range []map[string]any{nil, {"aud": r.url}, {"aud": []string{r.url + PathToken}}} {
		a := bot.assertion(f, r, now, over)
		genuine[a] = true
		f.Add(assertionForm(a).Encode())
	}
	good := machine{id: "ci", secret: secret}.secretForm()
	f.Add(good.Encode())
	f.Add(good.Encode() + "&resource=http%3A%2F%2F127.0.0.1%3A1%2Fmcp&scope=mcp")
	f.Add(good.Encode() + "&client_id=bot")
	f.Add("grant_type=client_credentials&client_id=ci&client_secret=" + secretHash(secret))
	f.Add("grant_type=client_credentials&client_assertion_type=x&client_assertion=a.b.c")
	f.Add("grant_type=client_credentials")
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "192.0.2.1:1234"
		s.limits.Purge() // the per-address budget is not under test
		w := httptest.NewRecorder()
		s.serveToken(w, req)
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

// FuzzServiceAccountCredential: no configured hash or public key makes the
// credential parsers panic; a key they accept is pinned to EdDSA, ES256 or
// RS256, and a hash they accept is 32 bytes.
func FuzzServiceAccountCredential(f *testing.F) {
	f.Add(publicPEM(f, newEd25519(f)))
	f.Add(publicPEM(f, newP256(f)))
	f.Add("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
	f.Add(secretHash("x"))
	f.Add(strings.ToUpper(secretHash("x")) + "  -\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		if k, err := parsePublicKey([]byte(in)); err == nil {
			switch k.alg {
			case jose.EdDSA, jose.ES256, jose.RS256:
			default:
				t.Fatalf("%q: algorithm %s", in, k.alg)
			}
		}
		if h, err := parseSecretHash(in); err == nil && len(h) != 32 {
			t.Fatalf("%q: a %d-byte hash", in, len(h))
		}
		c, err := loadCredential(Credential{SecretSHA256: in})
		if err == nil && len(c.hash) != 32 {
			t.Fatalf("%q: loaded a %d-byte hash", in, len(c.hash))
		}
	})
}

// FuzzPeerRequest: a peer request sealed with the replicas' key but with
// any operation, target, method, path and body never makes the peer
// endpoint panic, and is answered only when it is a find or a step of the
// device flow for this replica; anything else is refused unanswered.
func FuzzPeerRequest(f *testing.F) {
	self := "10.0.0.1:9090"
	s := fuzzServer(f)
	s.peers = &Peers{Self: self, List: func(context.Context) ([]string, error) { return nil, nil }}
	f.Add("find", self, "", "", "BCDFGHJK", "")
	f.Add("forward", self, http.MethodPost, PathToken, "", "grant_type="+GrantTypeDevice+"&device_code=bsd1.x&client_id=x")
	f.Add("forward", self, http.MethodPost, PathDevice, "", "step=code&user_code=BCDF-GHJK")
	f.Add("forward", self, http.MethodGet, PathCallback+"?state=aaaaaaaaaaaaaaaaaaaaaa&code=x", "", "")
	f.Add("forward", self, http.MethodPost, PathRegister, "", "{}")
	f.Add("forward", "10.0.0.2:9090", http.MethodPost, PathToken, "", "")
	f.Add("forward", self, http.MethodPost, "/../token", "", "")
	f.Fuzz(func(t *testing.T, op, to, method, uri, code, body string) {
		sealed, err := s.keys.seal(purposePeerRequest, peerRequest{Op: op, To: to, Nonce: randomString(8), Exp: s.now().Add(peerTTL).Unix(),
			Code: code, Method: method, URI: uri, Body: []byte(body), IP: "192.0.2.1",
			Header: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}})
		if err != nil {
			t.Skip()
		}
		w := httptest.NewRecorder()
		s.servePeer(w, httptest.NewRequest(http.MethodPost, PathPeer, strings.NewReader(sealed)))
		answered := w.Code == http.StatusOK
		allowed := to == self && (op == "find" || op == "forward" && s.forwardable(method, pathOf(uri)))
		if answered != allowed {
			t.Fatalf("op %q to %q %s %q: status %d, allowed %v", op, to, method, uri, w.Code, allowed)
		}
		if answered {
			var ans peerAnswer
			if err := s.keys.open(purposePeerAnswer, w.Body.String(), maxPeerBytes, &ans); err != nil {
				t.Fatalf("an answer that does not open: %v", err)
			}
			if op == "forward" && ans.Status == http.StatusOK && strings.Contains(string(ans.Body), "access_token") {
				t.Fatalf("tokens for a made-up request: %s", ans.Body)
			}
		}
	})
}

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
	s := fuzzServerWith(f, func(c *Config) {
		c.ServiceAccounts = []ServiceAccount{{ID: "ci", Credentials: []Credential{{SecretSHA256: secretHash(newSecret(f))}}}}
		c.Enterprise = EnterpriseConfig{IdPs: []EnterpriseIdP{{Issuer: "http://127.0.0.1:1", Clients: []string{"agent", "ci"}}}}
	})
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
		s.limits.Purge()
		w := httptest.NewRecorder()
		s.serveToken(w, req)
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
