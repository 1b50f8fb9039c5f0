package machine

import (
	"bufio"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/logcheck"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// machine is a service account's client side: its id and its secret or
// private key.
type machine struct {
	id     string
	secret string
	key    crypto.Signer
	alg    jose.SignatureAlgorithm
}

func publicPEM(t testing.TB, k crypto.Signer) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func newEd25519(t testing.TB) crypto.Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newP256(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// secretForm is a client_secret_post request.
func (m machine) secretForm() url.Values {
	return url.Values{"grant_type": {GrantTypeClientCredentials}, "client_id": {m.id}, "client_secret": {m.secret}}
}

// assertion signs a client assertion with claims over the defaults (iss =
// sub = id, aud = the token endpoint, exp in a minute, a fresh jti); a nil
// value removes a claim.
func (m machine) assertion(t testing.TB, r *replica, now time.Time, over map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": m.id, "sub": m.id, "aud": r.URL + PathToken, "exp": now.Add(time.Minute).Unix(),
		"iat": now.Unix(), "jti": oauth.RandomString(12)}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: m.alg, Key: m.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(c)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertionForm(a string) url.Values {
	return url.Values{"grant_type": {GrantTypeClientCredentials}, "client_assertion_type": {ClientAssertionTypeJWT}, "client_assertion": {a}}
}

// machines is a test's service accounts: ci (two secrets, the second
// expiring), bot (an Ed25519 key from a file), es (a P-256 key inline),
// and their configuration.
type machines struct {
	ci, ciNext, bot, es machine
	accounts            []ServiceAccount
	logs                *logcheck.Buffer
}

func newMachines(t *testing.T, now time.Time) *machines {
	t.Helper()
	m := &machines{
		ci:     machine{id: "ci", secret: oauthtest.NewSecret(t)},
		ciNext: machine{id: "ci", secret: oauthtest.NewSecret(t)},
		bot:    machine{id: "bot", key: newEd25519(t), alg: jose.EdDSA},
		es:     machine{id: "es", key: newP256(t), alg: jose.ES256},
		logs:   &logcheck.Buffer{},
	}
	keyFile := filepath.Join(t.TempDir(), "bot.pem")
	if err := os.WriteFile(keyFile, []byte(publicPEM(t, m.bot.key)), 0o600); err != nil {
		t.Fatal(err)
	}
	m.accounts = []ServiceAccount{
		{ID: "ci", Name: "CI", Credentials: []Credential{
			{SecretSHA256: oauthtest.SecretHash(m.ci.secret), NotAfter: now.Add(time.Hour)},
			{SecretSHA256: oauthtest.SecretHash(m.ciNext.secret)},
		}},
		{ID: "bot", Name: "release bot", Credentials: []Credential{{PublicKeyFile: keyFile}}},
		{ID: "es", Credentials: []Credential{{PublicKey: publicPEM(t, m.es.key)}}},
	}
	return m
}

// newMachineEnv is one replica with the machines configured, logging to
// m.logs; opts adjust its options.
func newMachineEnv(t *testing.T, opts ...func(*Options)) (*testEnv, *replica, *machines) {
	t.Helper()
	now := time.Now().Truncate(time.Second)
	m := newMachines(t, now)
	e := newEnv(t, 0, nil)
	e.Clock.Set(now)
	r := e.AddReplicaWith(func(c *Config) { c.ServiceAccounts = m.accounts },
		func(o *Options) {
			o.Logger = slog.New(slog.NewJSONHandler(m.logs, nil))
			for _, opt := range opts {
				opt(o)
			}
		})
	return e, r, m
}

// mustToken posts a token request that must succeed and returns the
// access token.
func mustToken(t *testing.T, e *testEnv, r *replica, form url.Values) string {
	t.Helper()
	return tokenOK(t, func() (int, map[string]any) { return e.Token(r, form) })
}

// tokenOK checks a service account's token answer.
func tokenOK(t *testing.T, answer func() (int, map[string]any)) string {
	t.Helper()
	status, out := answer()
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, out)
	}
	at, _ := out["access_token"].(string)
	if at == "" || out["token_type"] != "Bearer" || out["refresh_token"] != nil ||
		out["expires_in"] != float64(DefaultServiceAccountTokenTTL/time.Second) || out["scope"] != Scope {
		t.Fatalf("token answer %v", out)
	}
	return at
}

// TestClientCredentialsSecret: a service account's secret, sent as
// client_secret_post or client_secret_basic, gets a 10-minute access token
// (no refresh token) whose identity is the account.
func TestClientCredentialsSecret(t *testing.T) {
	e, r, m := newMachineEnv(t)
	at := mustToken(t, e, r, m.ci.secretForm())
	id, err := oauthtest.IdentityOf(t, r, at)
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "ci@"+auth.ServiceAccountDomain || id.Subject != "client:ci" || len(id.Groups) != 0 ||
		!id.Expiry.Equal(e.Clock.Now().Add(DefaultServiceAccountTokenTTL)) {
		t.Fatalf("identity %+v", id)
	}

	req, _ := http.NewRequest(http.MethodPost, r.URL+PathToken, strings.NewReader(url.Values{
		"grant_type": {GrantTypeClientCredentials}, "resource": {r.URL + "/mcp"}, "scope": {"mcp"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(m.ciNext.id), url.QueryEscape(m.ciNext.secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	at2 := tokenOK(t, func() (int, map[string]any) { return resp.StatusCode, out })
	if id2, err := oauthtest.IdentityOf(t, r, at2); err != nil || id2.Email != id.Email {
		t.Fatalf("basic: %+v %v", id2, err)
	}

	// The token expires with its 10 minutes.
	e.Clock.Advance(DefaultServiceAccountTokenTTL + AccessClockSkew)
	if _, err := r.Srv.Verify(context.Background(), at2); !isKind(err, sso.Expired) {
		t.Fatalf("after 10 minutes: %v", err)
	}
	wantNoSecrets(t, m)
	if !strings.Contains(m.logs.String(), `"grant":"client_credentials","email":"ci@clients.brainstem.invalid","client":"ci","method":"client_secret_basic"`) {
		t.Errorf("no audit line of the issuance:\n%s", m.logs)
	}
}

func isKind(err error, k sso.Kind) bool {
	var se *sso.Error
	return errors.As(err, &se) && se.Kind == k
}

// wantNoSecrets: no secret, private key or assertion of the test's
// machines is in the logs.
func wantNoSecrets(t *testing.T, m *machines) {
	t.Helper()
	logs := m.logs.String()
	for _, s := range []string{m.ci.secret, m.ciNext.secret, url.QueryEscape(m.ci.secret), oauthtest.SecretHash(m.ci.secret), oauthtest.SecretHash(m.ciNext.secret)} {
		if strings.Contains(logs, s) {
			t.Fatalf("the logs hold a secret or its hash %q", s)
		}
	}
	if jwtShape.MatchString(logs) {
		t.Fatalf("the logs hold a JWT:\n%s", logs)
	}
}

// jwtShape is a compact JWS or JWT: a header that starts as every JSON
// object encodes ("eyJ"), then the payload and the signature, base64url
// with dots between. "eyJ" alone also turns up inside random token ids.
var jwtShape = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)

// TestClientCredentialsRotation: both credentials of an account work
// during a rotation; the old one stops at its not_after, or when it is
// removed from the configuration (a new server: the gateway restarted),
// while the new one keeps working.
func TestClientCredentialsRotation(t *testing.T) {
	e, r, m := newMachineEnv(t)
	mustToken(t, e, r, m.ci.secretForm())
	mustToken(t, e, r, m.ciNext.secretForm())
	e.Clock.Advance(time.Hour)
	st, out := e.Token(r, m.ci.secretForm())
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	mustToken(t, e, r, m.ciNext.secretForm())

	// Retired by removal: the restarted gateway knows only the new secret.
	accts := append([]ServiceAccount(nil), m.accounts...)
	accts[0].Credentials = accts[0].Credentials[1:]
	r2 := e.AddReplicaWith(func(c *Config) { c.ServiceAccounts = accts }, nil)
	old := machine{id: "ci", secret: m.ci.secret}
	st, out = e.Token(r2, old.secretForm())
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	mustToken(t, e, r2, m.ciNext.secretForm())
	if !strings.Contains(m.logs.String(), "passed its not_after") {
		t.Errorf("the refusal is not logged:\n%s", m.logs)
	}
	wantNoSecrets(t, m)
}

// TestClientCredentialsRemovedAccount: a token of an account that is no
// longer configured is refused by the restarted gateway.
func TestClientCredentialsRemovedAccount(t *testing.T) {
	e, r, m := newMachineEnv(t)
	at := mustToken(t, e, r, m.ci.secretForm())
	sameIssuer := func(o *Options) { o.Issuer, o.Resource = r.URL, r.URL+"/mcp" }
	r2 := e.AddReplicaWith(func(c *Config) { c.ServiceAccounts = m.accounts[1:] }, sameIssuer)
	if _, err := r2.Srv.Verify(context.Background(), at); err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("a removed account's token: %v", err)
	}
	r3 := e.AddReplicaWith(func(c *Config) { c.ServiceAccounts = m.accounts }, sameIssuer)
	if _, err := r3.Srv.Verify(context.Background(), at); err != nil {
		t.Fatalf("a replica with the account: %v", err)
	}
}

// TestClientAssertion: private_key_jwt with an Ed25519 and a P-256 key;
// aud may be the token endpoint or the issuer, as a string or an array.
func TestClientAssertion(t *testing.T) {
	e, r, m := newMachineEnv(t)
	now := e.Clock.Now()
	for _, c := range []struct {
		m   machine
		aud any
	}{{m.bot, r.URL + PathToken}, {m.bot, r.URL}, {m.es, []string{"x", r.URL + PathToken}}} {
		f := assertionForm(c.m.assertion(t, r, now, map[string]any{"aud": c.aud}))
		f.Set("client_id", c.m.id)
		at := mustToken(t, e, r, f)
		id, err := oauthtest.IdentityOf(t, r, at)
		if err != nil || id.Email != c.m.id+"@"+auth.ServiceAccountDomain {
			t.Fatalf("%s: %+v %v", c.m.id, id, err)
		}
	}
	if !strings.Contains(m.logs.String(), `"method":"private_key_jwt","credential":"key:`) {
		t.Errorf("no audit line of the issuance:\n%s", m.logs)
	}
	wantNoSecrets(t, m)
}

// TestClientAssertionRefusals: each way an assertion is wrong is refused,
// and a refused assertion does not spend its jti.
func TestClientAssertionRefusals(t *testing.T) {
	e, r, m := newMachineEnv(t)
	now := e.Clock.Now()
	used := m.bot.assertion(t, r, now, nil)
	mustToken(t, e, r, assertionForm(used))
	wrongKey := machine{id: "bot", key: newEd25519(t), alg: jose.EdDSA}
	wrongAlg := machine{id: "es", key: newEd25519(t), alg: jose.EdDSA}
	otherAccount := machine{id: "es", key: m.bot.key, alg: jose.EdDSA}
	for _, tt := range []struct {
		name string
		form url.Values
		code string
	}{
		{"replayed", assertionForm(used), "invalid_client"},
		{"signed by another key", assertionForm(wrongKey.assertion(t, r, now, nil)), "invalid_client"},
		{"another account's key", assertionForm(otherAccount.assertion(t, r, now, nil)), "invalid_client"},
		{"the account's key pins ES256", assertionForm(wrongAlg.assertion(t, r, now, nil)), "invalid_client"},
		{"unknown account", assertionForm(m.bot.assertion(t, r, now, map[string]any{"iss": "nobody", "sub": "nobody"})), "invalid_client"},
		{"sub is not iss", assertionForm(m.bot.assertion(t, r, now, map[string]any{"sub": "ci"})), "invalid_client"},
		{"no sub", assertionForm(m.bot.assertion(t, r, now, map[string]any{"sub": nil})), "invalid_client"},
		{"aud another server", assertionForm(m.bot.assertion(t, r, now, map[string]any{"aud": "https://evil.example/token"})), "invalid_client"},
		{"aud the MCP URL", assertionForm(m.bot.assertion(t, r, now, map[string]any{"aud": r.URL + "/mcp"})), "invalid_client"},
		{"no aud", assertionForm(m.bot.assertion(t, r, now, map[string]any{"aud": nil})), "invalid_client"},
		{"expired", assertionForm(m.bot.assertion(t, r, now, map[string]any{"exp": now.Add(-time.Minute).Unix()})), "invalid_client"},
		{"exp too far ahead", assertionForm(m.bot.assertion(t, r, now, map[string]any{"exp": now.Add(10 * time.Minute).Unix()})), "invalid_client"},
		{"no exp", assertionForm(m.bot.assertion(t, r, now, map[string]any{"exp": nil})), "invalid_client"},
		{"exp a string", assertionForm(m.bot.assertion(t, r, now, map[string]any{"exp": "soon"})), "invalid_client"},
		{"nbf in the future", assertionForm(m.bot.assertion(t, r, now, map[string]any{"nbf": now.Add(time.Minute).Unix()})), "invalid_client"},
		{"iat in the future", assertionForm(m.bot.assertion(t, r, now, map[string]any{"iat": now.Add(time.Minute).Unix()})), "invalid_client"},
		{"no jti", assertionForm(m.bot.assertion(t, r, now, map[string]any{"jti": nil})), "invalid_client"},
		{"jti too long", assertionForm(m.bot.assertion(t, r, now, map[string]any{"jti": strings.Repeat("j", MaxJTIBytes+1)})), "invalid_client"},
		{"client_id differs from iss", func() url.Values {
			f := assertionForm(m.bot.assertion(t, r, now, nil))
			f.Set("client_id", "es")
			return f
		}(), "invalid_client"},
		{"wrong assertion type", func() url.Values {
			f := assertionForm(m.bot.assertion(t, r, now, nil))
			f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer")
			return f
		}(), "invalid_request"},
		{"assertion and secret", func() url.Values {
			f := assertionForm(m.bot.assertion(t, r, now, nil))
			f.Set("client_secret", m.ci.secret)
			return f
		}(), "invalid_request"},
		{"resource not the MCP URL", func() url.Values {
			f := assertionForm(m.bot.assertion(t, r, now, nil))
			f.Set("resource", "https://evil.example/mcp")
			return f
		}(), "invalid_target"},
		{"scope other than mcp", func() url.Values {
			f := assertionForm(m.bot.assertion(t, r, now, nil))
			f.Set("scope", "mcp admin")
			return f
		}(), "invalid_scope"},
		{"too large", assertionForm(strings.Repeat("a", MaxAssertionBytes+1)), "invalid_request"},
		{"alg none", assertionForm(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." +
			base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"bot","sub":"bot"}`)) + "."), "invalid_client"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, out := e.Token(r, tt.form)
			want := http.StatusBadRequest
			if tt.code == "invalid_client" {
				want = http.StatusUnauthorized
			}
			oauthtest.WantTokenError(t, st, out, want, tt.code)
		})
	}
	// A request refused for its resource does not spend the assertion's
	// jti (the request is checked first); a redeemed one is spent.
	a := m.bot.assertion(t, r, now, nil)
	f := assertionForm(a)
	f.Set("resource", "https://evil.example/mcp")
	st, out := e.Token(r, f)
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_target")
	mustToken(t, e, r, assertionForm(a))
	st, out = e.Token(r, assertionForm(a))
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	// A forged assertion with a live jti does not spend it for the
	// genuine one.
	jti := "genuine-jti"
	st, out = e.Token(r, assertionForm(wrongKey.assertion(t, r, now, map[string]any{"jti": jti})))
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	mustToken(t, e, r, assertionForm(m.bot.assertion(t, r, now, map[string]any{"jti": jti})))
	wantNoSecrets(t, m)
}

// TestClientSecretRefusals: each way a secret request is wrong is refused
// with the same invalid_client, whatever was wrong.
func TestClientSecretRefusals(t *testing.T) {
	e, r, m := newMachineEnv(t)
	for _, tt := range []struct {
		name string
		form url.Values
		code string
	}{
		{"wrong secret", machine{id: "ci", secret: oauthtest.NewSecret(t)}.secretForm(), "invalid_client"},
		{"another account's secret", machine{id: "bot", secret: m.ci.secret}.secretForm(), "invalid_client"},
		{"unknown account", machine{id: "nobody", secret: m.ci.secret}.secretForm(), "invalid_client"},
		{"short secret", machine{id: "ci", secret: "short"}.secretForm(), "invalid_client"},
		{"long secret", machine{id: "ci", secret: strings.Repeat("s", MaxSecretBytes+1)}.secretForm(), "invalid_client"},
		{"the hash as the secret", machine{id: "ci", secret: oauthtest.SecretHash(m.ci.secret)}.secretForm(), "invalid_client"},
		{"no credential", url.Values{"grant_type": {GrantTypeClientCredentials}, "client_id": {"ci"}}, "invalid_client"},
		{"no client id", url.Values{"grant_type": {GrantTypeClientCredentials}, "client_secret": {m.ci.secret}}, "invalid_client"},
		{"resource not the MCP URL", func() url.Values {
			f := m.ci.secretForm()
			f.Set("resource", r.URL+"/other")
			return f
		}(), "invalid_target"},
		{"scope other than mcp", func() url.Values {
			f := m.ci.secretForm()
			f.Set("scope", "openid")
			return f
		}(), "invalid_scope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, out := e.Token(r, tt.form)
			want := http.StatusBadRequest
			if tt.code == "invalid_client" {
				want = http.StatusUnauthorized
			}
			oauthtest.WantTokenError(t, st, out, want, tt.code)
			if tt.code == "invalid_client" && out["error_description"] != "client authentication failed" {
				t.Errorf("the refusal says more than it should: %v", out)
			}
		})
	}
	// Basic and the form at once is two methods.
	req, _ := http.NewRequest(http.MethodPost, r.URL+PathToken, strings.NewReader(m.ci.secretForm().Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ci", m.ci.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("basic and post: %d", resp.StatusCode)
	}
	// A wrong Basic secret is challenged.
	req, _ = http.NewRequest(http.MethodPost, r.URL+PathToken, strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ci", oauthtest.NewSecret(t))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("wrong basic secret: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// A service account cannot use the other grants, nor a registered
	// client this one.
	st, out := e.Token(r, url.Values{"grant_type": {"refresh_token"}, "client_id": {"ci"}, "refresh_token": {"x"}})
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	app := e.RegisteredApp(r)
	st, out = e.Token(r, machine{id: app.ID, secret: m.ci.secret}.secretForm())
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	wantNoSecrets(t, m)
}

// TestClientCredentialsWithoutAccounts: a gateway without service
// accounts does not offer the grant.
func TestClientCredentialsWithoutAccounts(t *testing.T) {
	e := newEnv(t, 1, nil)
	st, out := e.Token(e.Replicas[0], machine{id: "ci", secret: oauthtest.NewSecret(t)}.secretForm())
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "unsupported_grant_type")
}

// TestClientCredentialsMetadata: the metadata lists the grant and its
// client authentication methods when accounts are configured.
func TestClientCredentialsMetadata(t *testing.T) {
	_, r, _ := newMachineEnv(t)
	resp, err := http.Get(r.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	for k, want := range map[string]string{
		"grant_types_supported":                            "[authorization_code refresh_token " + GrantTypeDevice + " client_credentials]",
		"token_endpoint_auth_methods_supported":            "[none client_secret_basic client_secret_post private_key_jwt]",
		"token_endpoint_auth_signing_alg_values_supported": "[EdDSA ES256 RS256]",
	} {
		if got := fmt.Sprint(m[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
}

// TestAssertionStore: a remembered jti is refused until it expires; a
// full store refuses rather than forget a live one.
func TestAssertionStore(t *testing.T) {
	now := time.Now()
	a := NewReplays(2)
	if a.Remember("a", now.Add(time.Minute), now) != RememberNew || a.Remember("a", now.Add(time.Minute), now) != RememberReplay {
		t.Fatal("replay not caught")
	}
	if a.Remember("b", now.Add(2*time.Minute), now) != RememberNew || a.Remember("c", now.Add(time.Minute), now) != RememberFull {
		t.Fatal("a full store accepted")
	}
	later := now.Add(time.Minute)
	if a.Remember("a", later.Add(time.Minute), later) != RememberNew {
		t.Fatal("an expired jti is still remembered")
	}
	if a.Remember("b", later, later) != RememberReplay {
		t.Fatal("a live jti was forgotten")
	}
}

// TestServiceAccountConfig: Validate reports every problem of the
// service accounts at once; New reads the files.
func TestServiceAccountConfig(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	good := oauthtest.SecretHash("x")
	cfg := Config{
		Enabled: true, SigningKeyFile: "k",
		Upstream: UpstreamConfig{Issuer: "https://idp", ClientID: "c", ClientSecret: "s"},
		ServiceAccounts: []ServiceAccount{
			{ID: "Bad.Id", Credentials: []Credential{{SecretSHA256: good}}},
			{ID: "ci", Credentials: []Credential{{SecretSHA256: good}}},
			{ID: "ci", Credentials: []Credential{{SecretSHA256: good}}},
			{ID: "none"},
			{ID: "three", Credentials: []Credential{{SecretSHA256: good}, {SecretSHA256: good}, {SecretSHA256: good}}},
			{ID: "both", Credentials: []Credential{{SecretSHA256: good, PublicKey: publicPEM(t, newEd25519(t))}}},
			{ID: "empty", Credentials: []Credential{{}}},
			{ID: "hash", Credentials: []Credential{{SecretSHA256: "not-hex"}}},
			{ID: "short-hash", Credentials: []Credential{{SecretSHA256: good[:62]}}},
			{ID: "rsa", Credentials: []Credential{{PublicKey: publicPEM(t, rsaKey)}}},
			{ID: "p384", Credentials: []Credential{{PublicKey: publicPEM(t, p384)}}},
			{ID: "pem", Credentials: []Credential{{PublicKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}}},
			{ID: "name", Name: "a\nb", Credentials: []Credential{{SecretSHA256: good}}},
		},
		ServiceAccountTokenTTL: time.Hour,
	}
	err = cfg.Validate("https://brain.example.com")
	for _, want := range []string{
		"service_accounts[0].id", "service_accounts[2].id: \"ci\" is also service_accounts[1]", "service_accounts[3].credentials: required",
		"service_accounts[4].credentials: 3 credentials", "service_accounts[5].credentials[0]: set only one",
		"service_accounts[6].credentials[0]: set one of", "service_accounts[7].credentials[0].secret_sha256",
		"service_accounts[8].credentials[0].secret_sha256", "service_accounts[9].credentials[0].public_key: an RSA key of 1024 bits",
		"service_accounts[10].credentials[0].public_key: an ECDSA key must be on P-256", "service_accounts[11].credentials[0].public_key: not a PEM",
		"service_accounts[12].name", "service_account_token_ttl",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: missing %q in\n%v", want, err)
		}
	}
	if err := (Config{ServiceAccounts: []ServiceAccount{{ID: "ci"}}}).Validate("https://b"); err == nil {
		t.Error("service accounts without oauth.enabled are accepted")
	}

	// Files: a sha256sum line and a PEM key are read; a missing file is
	// an error of New naming the key.
	dir := t.TempDir()
	hashFile, keyFile := filepath.Join(dir, "hash"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(hashFile, []byte(good+"  -\n"), 0o600)
	_ = os.WriteFile(keyFile, []byte(publicPEM(t, newP256(t))), 0o600)
	accts, err := loadServiceAccounts([]ServiceAccount{{ID: "a", Credentials: []Credential{{SecretSHA256File: hashFile}, {PublicKeyFile: keyFile}}}}, slog.New(slog.DiscardHandler))
	if err != nil || len(accts["a"].creds) != 2 || accts["a"].creds[1].Alg != jose.ES256 {
		t.Fatalf("load: %v %+v", err, accts)
	}
	_, err = loadServiceAccounts([]ServiceAccount{{ID: "a", Credentials: []Credential{{SecretSHA256File: filepath.Join(dir, "missing")}}}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "oauth.service_accounts[0].credentials[0]: secret_sha256_file") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestClientCredentialsAttackList runs testdata/client_credentials.txt:
// token requests of the client credentials grant that must each be
// refused with the named error; afterwards the genuine credentials still
// work.
func TestClientCredentialsAttackList(t *testing.T) {
	e, r, m := newMachineEnv(t)
	now := e.Clock.Now()
	used := m.bot.assertion(t, r, now, nil)
	mustToken(t, e, r, assertionForm(used))
	expand := strings.NewReplacer(
		"$SECRET", url.QueryEscape(m.ci.secret),
		"$HASH", oauthtest.SecretHash(m.ci.secret),
		"$MCP", url.QueryEscape(r.URL+"/mcp"),
		"$USED_ASSERTION", used,
		"$FORGED_ASSERTION", machine{id: "bot", key: newEd25519(t), alg: jose.EdDSA}.assertion(t, r, now, nil),
		"$WRONG_AUD_ASSERTION", m.bot.assertion(t, r, now, map[string]any{"aud": r.URL + "/mcp"}),
		"$LONG_ASSERTION", m.bot.assertion(t, r, now, map[string]any{"exp": now.Add(time.Hour).Unix()}),
		"$EXPIRED_ASSERTION", m.bot.assertion(t, r, now, map[string]any{"exp": now.Add(-time.Hour).Unix()}),
		"$ES_AS_BOT_ASSERTION", machine{id: "bot", key: m.es.key, alg: jose.ES256}.assertion(t, r, now, nil),
	)
	f, err := os.Open("testdata/client_credentials.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		want, input, _ := strings.Cut(line, " ")
		t.Run(fmt.Sprintf("%d %s", n, line), func(t *testing.T) {
			resetFailureBudgets(machOf(r)) // the failure budgets are not under test (TestClientCredentialsFloods)
			req, err := http.NewRequest(http.MethodPost, r.URL+PathToken, strings.NewReader(expand.Replace(input)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode < 400 || out["error"] != want {
				t.Fatalf("got %d %v, want %s", resp.StatusCode, out, want)
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d attack lines read", n)
	}
	mustToken(t, e, r, m.ci.secretForm())
	mustToken(t, e, r, assertionForm(m.bot.assertion(t, r, now, nil)))
	wantNoSecrets(t, m)
}

// TestClientCredentialsLimits: a full replay memory refuses new assertions
// with 503 rather than forget one.
func TestClientCredentialsLimits(t *testing.T) {
	e, r, m := newMachineEnv(t)
	machOf(r).assertions = NewReplays(1)
	now := e.Clock.Now()
	mustToken(t, e, r, assertionForm(m.bot.assertion(t, r, now, nil)))
	st, out := e.Token(r, assertionForm(m.bot.assertion(t, r, now, nil)))
	oauthtest.WantTokenError(t, st, out, http.StatusServiceUnavailable, "temporarily_unavailable")
	e.Clock.Advance(2 * time.Minute) // the first assertion expired: room again
	mustToken(t, e, r, assertionForm(m.bot.assertion(t, r, e.Clock.Now(), nil)))
}

// resetFailureBudgets forgets every failed client authentication of s.
func resetFailureBudgets(s *Grant) {
	s.authFailures.Purge()
	for _, a := range s.accounts {
		a.failures = newFailureBudget(ClientFailuresPerMin)
	}
}

// testAddrHeader names the address a test request comes from, for a
// replica whose ClientIP is testClientIP.
const testAddrHeader = "X-Test-Client-Addr"

// testClientIP is the address of testAddrHeader, else the TCP peer's.
func testClientIP(r *http.Request) string {
	if a := r.Header.Get(testAddrHeader); a != "" {
		return a
	}
	return oauth.RemoteIP(r)
}

// tokenFrom posts a token request as if from addr ("" for the TCP
// peer), with Basic credentials when basic is set; it returns the status,
// the answer and its Retry-After.
func tokenFrom(t *testing.T, r *replica, addr, body string, basic *machine) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.URL+PathToken, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if addr != "" {
		req.Header.Set(testAddrHeader, addr)
	}
	if basic != nil {
		req.SetBasicAuth(url.QueryEscape(basic.id), url.QueryEscape(basic.secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header.Get("Retry-After")
}

// wantThrottled checks a 429 temporarily_unavailable with a Retry-After of
// a second or more, and returns the Retry-After.
func wantThrottled(t *testing.T, st int, out map[string]any, retry string) time.Duration {
	t.Helper()
	oauthtest.WantTokenError(t, st, out, http.StatusTooManyRequests, "temporarily_unavailable")
	n, err := strconv.Atoi(retry)
	if err != nil || n < 1 {
		t.Fatalf("429 with Retry-After %q", retry)
	}
	return time.Duration(n) * time.Second
}

// TestClientCredentialsFailureBudget is issue 34's reproduction: 125 wrong
// secrets from one address (a NAT, or every client behind an Ingress
// without limits.client_ip_header) made the genuine secret from that
// address get 429 for a minute. Now only failures are counted: the first
// ClientFailuresPerMin wrong secrets get the truthful 401, later ones 429
// with Retry-After, while every genuine credential from the same address
// and for the same account is answered with its token. Success resets
// nothing: the guesser stays throttled. The log holds a bounded number of
// lines.
func TestClientCredentialsFailureBudget(t *testing.T) {
	e, r, m := newMachineEnv(t)
	wrong := machine{id: "ci", secret: oauthtest.NewSecret(t)}.secretForm().Encode()
	var retry time.Duration
	for i := range 125 {
		st, out, ra := tokenFrom(t, r, "", wrong, nil)
		if i < ClientFailuresPerMin {
			oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
			continue
		}
		retry = wantThrottled(t, st, out, ra)
	}
	mustToken(t, e, r, m.ci.secretForm())
	tokenOK(t, func() (int, map[string]any) {
		st, out, _ := tokenFrom(t, r, "", "grant_type=client_credentials", &m.ciNext)
		return st, out
	})
	mustToken(t, e, r, assertionForm(m.bot.assertion(t, r, e.Clock.Now(), nil)))
	st, out, ra := tokenFrom(t, r, "", wrong, nil)
	wantThrottled(t, st, out, ra)

	// The budget refills with time: a failure fits again after
	// Retry-After, and the next one is throttled again.
	e.Clock.Advance(retry)
	st, out, _ = tokenFrom(t, r, "", wrong, nil)
	oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
	st, out, ra = tokenFrom(t, r, "", wrong, nil)
	wantThrottled(t, st, out, ra)
	e.Clock.Advance(time.Minute)
	mustToken(t, e, r, m.ci.secretForm())

	logs := m.logs.String()
	if n := strings.Count(logs, "service account authentication refused"); n != ClientFailuresPerMin+1 {
		t.Errorf("%d refusals logged, want %d: one per failure within the budget", n, ClientFailuresPerMin+1)
	}
	if n := strings.Count(logs, "too many failed service account authentications"); n != 1 {
		t.Errorf("%d lines say the budget is spent, want 1 (at most one a minute)", n)
	}
	wantNoSecrets(t, m)
}

// TestClientCredentialsFloods runs testdata/client_credentials_floods.txt:
// each line is a flood of 125 requests, from one address or each from its
// own, that must be answered as the line says (401 within the budgets
// they spend, then 429 with Retry-After; or 401 or 400 throughout). After
// each flood every genuine credential, from the flood's address and from
// another, still gets its token, and a throttled flood stays throttled.
func TestClientCredentialsFloods(t *testing.T) {
	f, err := os.Open("testdata/client_credentials_floods.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		from, rest, _ := strings.Cut(line, " ")
		want, body, _ := strings.Cut(rest, " ")
		t.Run(fmt.Sprintf("%d %s", n, line), func(t *testing.T) { runFlood(t, from, want, body) })
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("only %d floods read", n)
	}
}

// runFlood is one line of client_credentials_floods.txt.
func runFlood(t *testing.T, from, want, body string) {
	e, r, m := newMachineEnv(t, func(o *Options) { o.ClientIP = testClientIP })
	now := e.Clock.Now()
	used := m.bot.assertion(t, r, now, nil)
	mustToken(t, e, r, assertionForm(used))
	body = strings.NewReplacer(
		"$SECRET", url.QueryEscape(m.ci.secret),
		"$WRONG", url.QueryEscape(oauthtest.NewSecret(t)),
		"$USED_ASSERTION", used,
		"$FORGED_ASSERTION", machine{id: "bot", key: newEd25519(t), alg: jose.EdDSA}.assertion(t, r, now, nil),
		"$ES_AS_BOT_ASSERTION", machine{id: "bot", key: m.es.key, alg: jose.ES256}.assertion(t, r, now, nil),
	).Replace(body)
	const home = "198.51.100.7" // the genuine clients' address
	addr := func(i int) string {
		if from == "one" {
			return home
		}
		return fmt.Sprintf("203.0.113.%d", i+1) // an address of its own
	}
	flood := func(i int) {
		t.Helper()
		st, out, ra := tokenFrom(t, r, addr(i), body, nil)
		switch {
		case want == "400":
			oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_request")
		case want == "401" || i < ClientFailuresPerMin:
			oauthtest.WantTokenError(t, st, out, http.StatusUnauthorized, "invalid_client")
		case want == "throttled":
			wantThrottled(t, st, out, ra)
		default:
			t.Fatalf("client_credentials_floods.txt: outcome %q", want)
		}
	}
	for i := range 125 {
		flood(i)
	}
	for _, a := range []string{home, addr(0), "192.0.2.99"} {
		tokenOK(t, func() (int, map[string]any) {
			st, out, _ := tokenFrom(t, r, a, m.ci.secretForm().Encode(), nil)
			return st, out
		})
		tokenOK(t, func() (int, map[string]any) {
			st, out, _ := tokenFrom(t, r, a, "grant_type=client_credentials", &m.ciNext)
			return st, out
		})
		tokenOK(t, func() (int, map[string]any) {
			st, out, _ := tokenFrom(t, r, a, assertionForm(m.bot.assertion(t, r, now, nil)).Encode(), nil)
			return st, out
		})
	}
	flood(125) // the flood's next request: as the line says, still
	wantNoSecrets(t, m)
}
