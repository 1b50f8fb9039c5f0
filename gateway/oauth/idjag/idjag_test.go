package idjag

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth/devidp"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// enterpriseEnv is one replica that trusts the test's development IdP for
// ID-JAGs naming the public client devidp.DefaultAssertionClientID or the
// service account ci (secret returned).
func enterpriseEnv(t *testing.T) (*testEnv, *replica, string) {
	t.Helper()
	secret := oauthtest.NewSecret(t)
	e := newEnv(t, 0, nil)
	r := e.AddReplica(func(c *Config) {
		c.ServiceAccounts = []ServiceAccount{{ID: "ci", Credentials: []Credential{{SecretSHA256: oauthtest.SecretHash(secret)}}}}
		c.Enterprise = EnterpriseConfig{IdPs: []EnterpriseIdP{{Issuer: e.IdPURL, Clients: []string{devidp.DefaultAssertionClientID, "ci"}}}}
	})
	return e, r, secret
}

// exchangeAtIdP is the client's RFC 8693 token exchange at the IdP: the
// user's ID token for an ID-JAG for the gateway r.
func exchangeAtIdP(t *testing.T, e *testEnv, r *replica, idToken string) (int, map[string]any) {
	t.Helper()
	form := url.Values{
		"grant_type": {devidp.GrantTypeTokenExchange}, "requested_token_type": {devidp.TokenTypeIDJAG},
		"subject_token": {idToken}, "subject_token_type": {devidp.TokenTypeIDToken},
		"audience": {r.URL}, "resource": {r.URL + "/mcp"}, "scope": {Scope},
		"client_id": {devidp.DefaultClientID}, "client_secret": {oauthtest.Secret},
	}
	resp, err := http.PostForm(e.IdPURL+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// idjagOf signs in email at the IdP (an ID token) and exchanges it there
// for an ID-JAG.
func idjagOf(t *testing.T, e *testEnv, r *replica, email string) string {
	t.Helper()
	idt, _, err := e.IdP.Mint(email, []string{"eng"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, out := exchangeAtIdP(t, e, r, idt)
	jag, _ := out["access_token"].(string)
	if st != http.StatusOK || jag == "" || out["issued_token_type"] != devidp.TokenTypeIDJAG || out["token_type"] != "N_A" {
		t.Fatalf("token exchange: %d %v", st, out)
	}
	return jag
}

func jwtBearer(clientID, assertion string) url.Values {
	return url.Values{"grant_type": {GrantTypeJWTBearer}, "client_id": {clientID}, "assertion": {assertion}}
}

// TestIDJAGExchange: an ID-JAG from the development IdP's token exchange
// is exchanged at /token for an access token of the user, without
// consent and without a refresh token; the metadata advertises the grant
// and the profile.
func TestIDJAGExchange(t *testing.T) {
	e, r, secret := enterpriseEnv(t)
	var meta map[string]any
	resp, err := http.Get(r.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if !strings.Contains(stringOf(meta["grant_types_supported"]), GrantTypeJWTBearer) ||
		!strings.Contains(stringOf(meta["authorization_grant_profiles_supported"]), GrantProfileIDJAG) {
		t.Fatalf("metadata: %v", meta)
	}

	jag := idjagOf(t, e, r, "Alice@Example.com")
	st, out := e.Token(r, jwtBearer(devidp.DefaultAssertionClientID, jag))
	at, _ := out["access_token"].(string)
	if st != http.StatusOK || at == "" || out["refresh_token"] != nil || out["scope"] != Scope {
		t.Fatalf("jwt-bearer: %d %v", st, out)
	}
	id, err := oauthtest.IdentityOf(t, r, at)
	if err != nil || id.Email != "alice@example.com" || len(id.Groups) != 0 && id.Groups[0] != "eng" {
		t.Fatalf("identity %+v %v", id, err)
	}

	// A confidential client: the service account ci authenticates.
	jag = mustIDJAG(t, e, devidp.IDJAGClaims{Email: "bob@example.com", Audience: r.URL, ClientID: "ci"})
	req, _ := http.NewRequest(http.MethodPost, r.URL+PathToken, strings.NewReader(url.Values{"grant_type": {GrantTypeJWTBearer}, "assertion": {jag}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ci", url.QueryEscape(secret))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out = nil
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	at, _ = out["access_token"].(string)
	if id, err := oauthtest.IdentityOf(t, r, at); resp.StatusCode != http.StatusOK || err != nil || id.Email != "bob@example.com" {
		t.Fatalf("confidential client: %d %v %+v %v", resp.StatusCode, out, id, err)
	}
}

func stringOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func mustIDJAG(t *testing.T, e *testEnv, c devidp.IDJAGClaims) string {
	t.Helper()
	jag, _, err := e.IdP.MintIDJAG(c)
	if err != nil {
		t.Fatal(err)
	}
	return jag
}

// validJAGClaims are the claims of a good ID-JAG for r, for tests that
// change one.
func validJAGClaims(e *testEnv, r *replica) map[string]any {
	now := e.Clock.Now()
	return map[string]any{
		"iss": e.IdPURL, "sub": "alice@example.com", "aud": r.URL, "client_id": devidp.DefaultAssertionClientID,
		"jti": oauth.RandomString(16), "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"email": "alice@example.com", "email_verified": true, "resource": r.URL + "/mcp", "scope": Scope,
	}
}

func signJAG(t *testing.T, e *testEnv, typ string, edit func(map[string]any)) string {
	t.Helper()
	c := validJAGClaims(e, e.Replicas[0])
	if edit != nil {
		edit(c)
	}
	tok, err := e.IdP.Sign(typ, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestIDJAGRefusals: each refusal of the issue and the brief, one case
// each; afterwards a genuine assertion still works.
func TestIDJAGRefusals(t *testing.T) {
	e, r, _ := enterpriseEnv(t)
	// An ES256 key under the IdP's key id: the IdP is pinned to RS256.
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	foreign := func(alg jose.SignatureAlgorithm, key any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType(TypeIDJAG))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := json.Marshal(validJAGClaims(e, r))
		jws, _ := s.Sign(p)
		out, _ := jws.CompactSerialize()
		return out
	}
	unsigned := func() string {
		h := b64(`{"alg":"none","typ":"oauth-id-jag+jwt"}`)
		p, _ := json.Marshal(validJAGClaims(e, r))
		return h + "." + b64(string(p)) + "."
	}()
	replayed := signJAG(t, e, TypeIDJAG, nil)
	if st, out := e.Token(r, jwtBearer(devidp.DefaultAssertionClientID, replayed)); st != http.StatusOK {
		t.Fatalf("first use: %d %v", st, out)
	}
	idToken, _, _ := e.IdP.Mint("alice@example.com", nil, 0)
	cases := []struct {
		name, client, assertion, code string
	}{
		{"wrong audience", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["aud"] = "https://other.example" }), "invalid_grant"},
		{"wrong client", "other-client", signJAG(t, e, TypeIDJAG, nil), "invalid_grant"},
		{"client not allowed", "stranger", signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["client_id"] = "stranger" }), "invalid_grant"},
		{"expired", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) {
			c["exp"] = e.Clock.Now().Add(-time.Minute).Unix()
		}), "invalid_grant"},
		{"too long-lived", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) {
			c["exp"] = e.Clock.Now().Add(time.Hour).Unix()
		}), "invalid_grant"},
		{"replay", devidp.DefaultAssertionClientID, replayed, "invalid_grant"},
		{"wrong typ", devidp.DefaultAssertionClientID, signJAG(t, e, "JWT", nil), "invalid_grant"},
		{"an ID token", devidp.DefaultAssertionClientID, idToken, "invalid_grant"},
		{"wrong algorithm", devidp.DefaultAssertionClientID, foreign(jose.ES256, jose.JSONWebKey{Key: ec, KeyID: "x"}), "invalid_grant"},
		{"HS256", devidp.DefaultAssertionClientID, foreign(jose.HS256, []byte("0123456789abcdef0123456789abcdef")), "invalid_grant"},
		{"unsigned", devidp.DefaultAssertionClientID, unsigned, "invalid_grant"},
		{"unknown issuer", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["iss"] = "https://idp.evil.example" }), "invalid_grant"},
		{"no jti", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { delete(c, "jti") }), "invalid_grant"},
		{"no sub", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { delete(c, "sub") }), "invalid_grant"},
		{"unverified email", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["email_verified"] = false }), "invalid_grant"},
		{"service account domain", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["email"] = "ci@clients.brainstem.invalid" }), "invalid_grant"},
		{"other resource", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["resource"] = "https://other.example/mcp" }), "invalid_grant"},
		{"scope without mcp", devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["scope"] = "admin" }), "invalid_grant"},
		{"service account without its secret", "ci", signJAG(t, e, TypeIDJAG, func(c map[string]any) { c["client_id"] = "ci" }), "invalid_client"},
		{"no client", "", signJAG(t, e, TypeIDJAG, nil), "invalid_client"},
		{"no assertion", devidp.DefaultAssertionClientID, "", "invalid_request"},
	}
	// The reason each is refused for, so that none passes for another.
	why := map[string]string{
		"wrong audience": "not for this gateway", "wrong client": "not to the client presenting it",
		"client not allowed": "not one the identity provider may vouch for", "expired": "expired at",
		"too long-lived": "more than 10m0s ahead", "replay": "already used", "wrong typ": "typ is",
		"an ID token": "typ is", "wrong algorithm": "pinned to [RS256]", "HS256": "asymmetric",
		"unsigned": "asymmetric", "unknown issuer": "not one of oauth.enterprise.idps", "no jti": "jti is required",
		"no sub": "no sub", "unverified email": "not verified", "service account domain": "reserved",
		"other resource": "another resource", "scope without mcp": "did not grant", "service account without its secret": "client authentication failed",
		"no client": "client_id is required", "no assertion": "assertion is required",
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			form := jwtBearer(tc.client, tc.assertion)
			if tc.client == "" {
				form.Del("client_id")
			}
			st, out := e.Token(r, form)
			desc, _ := out["error_description"].(string)
			if out["error"] != tc.code || st < 400 || !strings.Contains(desc, why[tc.name]) {
				t.Fatalf("got %d %v, want %s", st, out, tc.code)
			}
		})
	}
	if st, out := e.Token(r, jwtBearer(devidp.DefaultAssertionClientID, signJAG(t, e, TypeIDJAG, nil))); st != http.StatusOK {
		t.Fatalf("a genuine assertion after the refusals: %d %v", st, out)
	}
}

// TestIDJAGDisabledAtIdP: the IdP's token exchange refuses a disabled
// user, so a client it manages gets no new ID-JAG (and so no new access
// token) once the current one expires.
func TestIDJAGDisabledAtIdP(t *testing.T) {
	e, r, _ := enterpriseEnv(t)
	idt, _, _ := e.IdP.Mint("dave@example.com", nil, 0)
	if err := e.IdP.SetDisabled("dave@example.com", true); err != nil {
		t.Fatal(err)
	}
	st, out := exchangeAtIdP(t, e, r, idt)
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
}

// TestIDJAGAttackList runs testdata/id_jag.txt.
func TestIDJAGAttackList(t *testing.T) {
	e, r, secret := enterpriseEnv(t)
	good := signJAG(t, e, TypeIDJAG, nil)
	vars := strings.NewReplacer(
		"$JAG", url.QueryEscape(good), "$MCP", url.QueryEscape(r.URL+"/mcp"), "$SECRET", url.QueryEscape(secret),
		"$IDTOKEN", url.QueryEscape(func() string { s, _, _ := e.IdP.Mint("alice@example.com", nil, 0); return s }()),
		"$CLIENT", url.QueryEscape(devidp.DefaultAssertionClientID),
	)
	f, err := os.Open("testdata/id_jag.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, body, _ := strings.Cut(line, " ")
		body = vars.Replace(body)
		resp, err := http.Post(r.URL+PathToken, "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out["error"] != want || resp.StatusCode < 400 {
			t.Errorf("%s: got %d %v, want %s", line, resp.StatusCode, out, want)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d cases", n)
	}
	// The genuine assertion was never spent by the attacks.
	if st, out := e.Token(r, jwtBearer(devidp.DefaultAssertionClientID, good)); st != http.StatusOK {
		t.Fatalf("the genuine assertion after the attacks: %d %v", st, out)
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestEnterpriseConfig: Validate reports every problem of
// oauth.enterprise at once, each naming its key.
func TestEnterpriseConfig(t *testing.T) {
	cfg := Config{
		Enabled: true, SigningKeyFile: "k",
		Upstream: UpstreamConfig{Issuer: "https://idp", ClientID: "c", ClientSecret: "s"},
		Enterprise: EnterpriseConfig{IdPs: []EnterpriseIdP{
			{Issuer: "http://idp.example.com", Clients: []string{"a"}},
			{Issuer: "https://okta.example.com", Clients: []string{"a"}, Algorithms: []string{"HS256"}},
			{Issuer: "https://okta.example.com", Clients: []string{"a"}},
			{Issuer: "https://entra.example.com"},
			{Issuer: "https://ping.example.com", Clients: []string{" a", ""}},
		}},
	}
	err := cfg.Validate("https://brain.example.com")
	for _, want := range []string{
		"enterprise.idps[0]: sso: config: issuers[0].url", "enterprise.idps[1]: sso: config: issuers[0].algorithms[0]: \"HS256\"",
		"enterprise.idps[2].issuer: \"https://okta.example.com\" is also enterprise.idps[1]", "enterprise.idps[3].clients: required",
		"enterprise.idps[4].clients[0]", "enterprise.idps[4].clients[1]",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: missing %q in\n%v", want, err)
		}
	}
	if err := (Config{Enterprise: EnterpriseConfig{IdPs: []EnterpriseIdP{{Issuer: "https://x", Clients: []string{"a"}}}}}).Validate("https://b"); err == nil {
		t.Error("oauth.enterprise without oauth.enabled is accepted")
	}
}

// TestIDJAGFailureBudget: the jwt-bearer grant spends no budget of
// requests before it authenticates (the lockout of issue 34's defect 5,
// for identity assertions): after 125 refused assertions from one
// address, a genuine one from that address is exchanged; the refused
// ones past the address's budget of failures answer 429 with Retry-After.
func TestIDJAGFailureBudget(t *testing.T) {
	e, r, _ := enterpriseEnv(t)
	throttled := 0
	for i := range 125 {
		st, out := e.Token(r, jwtBearer(devidp.DefaultAssertionClientID, "not.an-assertion."+strconv.Itoa(i)))
		switch {
		case st == http.StatusTooManyRequests && out["error"] == "temporarily_unavailable":
			throttled++
		case st != http.StatusBadRequest || out["error"] != "invalid_grant":
			t.Fatalf("refused assertion %d: %d %v", i, st, out)
		}
	}
	if throttled < 125-machine.ClientFailuresPerMin-5 {
		t.Fatalf("only %d of 125 refused assertions were throttled", throttled)
	}
	jag := idjagOf(t, e, r, "alice@example.com")
	if st, out := e.Token(r, jwtBearer(devidp.DefaultAssertionClientID, jag)); st != http.StatusOK || out["access_token"] == nil {
		t.Fatalf("a genuine assertion after others' failures: %d %v", st, out)
	}
}
