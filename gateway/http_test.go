package gateway

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/proto/pki"
)

// rawIssuer is a minimal OIDC issuer (discovery + JWKS) on loopback whose
// tokens are hand-made with arbitrary claims, for the cases the development
// IdP never produces (unverified email, wrong audience).
type rawIssuer struct {
	url    string
	signer jose.Signer
}

func startRawIssuer(t testing.TB) *rawIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ri := &rawIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": ri.url, "jwks_uri": ri.url + "/jwks",
			"authorization_endpoint": ri.url + "/authorize", "token_endpoint": ri.url + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "raw1", Algorithm: "RS256", Use: "sig"}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ri.url = srv.URL
	ri.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "raw1"))
	if err != nil {
		t.Fatal(err)
	}
	return ri
}

func (ri *rawIssuer) token(t testing.TB, claims map[string]any) string {
	t.Helper()
	now := time.Now()
	base := map[string]any{"iss": ri.url, "aud": "brainstem", "sub": "s1", "email": "ursula@acme.com",
		"email_verified": true, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range claims {
		if v == nil {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	payload, _ := json.Marshal(base)
	jws, err := ri.signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withIssuers adds issuers to the gateway's OIDC config.
func withIssuers(urls ...string) envOpt {
	return func(c *config.Config, _ *Options) {
		for _, u := range urls {
			c.OIDC.Issuers = append(c.OIDC.Issuers, sso.IssuerConfig{URL: u, Audiences: []string{"brainstem"}})
		}
	}
}

// TestAuthChallenges: every refusal before mcp-go, with its status and
// challenge.
func TestAuthChallenges(t *testing.T) {
	raw := startRawIssuer(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close() // nothing listens there: the issuer is unreachable
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen},
		withIssuers(raw.url, deadURL),
		func(c *config.Config, _ *Options) { c.OIDC.AllowedDomains = []string{"acme.com"} })
	meta := e.base + "/.well-known/oauth-protected-resource/mcp"

	e.idp.offset.Store(int64(-3 * time.Hour))
	expired := e.idp.token(t, "alice@acme.com")
	e.idp.offset.Store(0)
	deadTok := raw.token(t, map[string]any{"iss": deadURL})

	tests := []struct {
		name      string
		authz     string
		status    int
		challenge string // exact WWW-Authenticate, or prefix when it ends with "*"
	}{
		{"no token", "", 401, `Bearer resource_metadata="` + meta + `"`},
		{"basic scheme", "Basic dXNlcjpwYXNz", 400, `Bearer error="invalid_request", error_description=*`},
		{"garbage", "Bearer abc.def.ghi", 401, `Bearer error="invalid_token", error_description=*`},
		{"expired", "Bearer " + expired, 401, `Bearer error="invalid_token", error_description=*`},
		{"wrong audience", "Bearer " + raw.token(t, map[string]any{"aud": "someone-else"}), 401, `Bearer error="invalid_token", error_description=*`},
		{"unverified email", "Bearer " + raw.token(t, map[string]any{"email_verified": false}), 403, `Bearer error="insufficient_scope", error_description=*`},
		{"unverified string", "Bearer " + raw.token(t, map[string]any{"email_verified": "false"}), 403, `Bearer error="insufficient_scope", error_description=*`},
		{"no email", "Bearer " + raw.token(t, map[string]any{"email": nil}), 401, `Bearer error="invalid_token", error_description=*`},
		{"domain not allowed", "Bearer " + e.idp.token(t, "mallory@evil.org"), 403, `Bearer error="insufficient_scope", error_description=*`},
		{"issuer unreachable", "Bearer " + deadTok, 503, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.authz != "" {
				hdr["Authorization"] = tc.authz
			}
			resp, body := rawPost(t, e.url, initBody, hdr)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			got := resp.Header.Get("WWW-Authenticate")
			switch {
			case tc.challenge == "":
				if got != "" {
					t.Fatalf("unexpected challenge %q", got)
				}
				if resp.Header.Get("Retry-After") == "" {
					t.Fatal("503 without Retry-After")
				}
			case strings.HasSuffix(tc.challenge, "*"):
				if !strings.HasPrefix(got, strings.TrimSuffix(tc.challenge, "*")) || !strings.HasSuffix(got, `resource_metadata="`+meta+`"`) {
					t.Fatalf("challenge %q, want %s…resource_metadata", got, tc.challenge)
				}
				if strings.Count(got, "error=") != 1 || strings.Count(got, "error_description=") != 1 {
					t.Fatalf("challenge repeats a parameter: %q", got)
				}
			default:
				if got != tc.challenge {
					t.Fatalf("challenge %q, want %q", got, tc.challenge)
				}
			}
			var doc struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			if err := json.Unmarshal(body, &doc); err != nil || doc.Description == "" {
				t.Fatalf("body %q is not an actionable JSON error", body)
			}
		})
	}
	// A good token passes, and the expired one said so.
	resp, body := rawPost(t, e.url, initBody, map[string]string{"Authorization": "Bearer " + e.idp.token(t, "alice@acme.com")})
	if resp.StatusCode != 200 {
		t.Fatalf("valid token: %d %s", resp.StatusCode, body)
	}
	resp, _ = rawPost(t, e.url, initBody, map[string]string{"Authorization": "Bearer " + expired})
	if d := resp.Header.Get("WWW-Authenticate"); !strings.Contains(strings.ToLower(d), "expired") {
		t.Fatalf("expired token challenge does not say so: %q", d)
	}
}

// TestProtectedResourceMetadata checks the RFC 9728 document field by field
// at both well-known locations.
func TestProtectedResourceMetadata(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(e.base + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %v %s", path, resp.StatusCode, err, resp.Header.Get("Content-Type"))
		}
		keys := make([]string, 0, len(doc))
		for k := range doc {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"authorization_servers", "bearer_methods_supported", "resource", "resource_name"}; !slices.Equal(keys, want) {
			t.Fatalf("%s: keys %v, want %v", path, keys, want)
		}
		checks := map[string]string{
			"resource":                 `"` + e.base + `/mcp"`,
			"authorization_servers":    `["` + e.idp.p.Issuer() + `"]`,
			"bearer_methods_supported": `["header"]`,
			"resource_name":            `"Brainstem"`,
		}
		for k, want := range checks {
			if string(doc[k]) != want {
				t.Errorf("%s: %s = %s, want %s", path, k, doc[k], want)
			}
		}
	}
}

// TestRequestGuards: Origin, protocol version and body limit, each refused
// with its status before the request reaches mcp-go.
func TestRequestGuards(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen},
		func(c *config.Config, _ *Options) {
			c.AllowedOrigins = []string{"https://inspector.example:6274"}
			c.Limits.MaxBodyBytes = 4096
		})
	tok := "Bearer " + e.idp.token(t, "alice@acme.com")
	big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"brain_write","arguments":{"wing":"payments","body":"` + strings.Repeat("x", 5000) + `"}}}`
	tests := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		has    string
	}{
		{"foreign origin, even unauthenticated", initBody, map[string]string{"Origin": "https://evil.example"}, 403, "not allowed"},
		{"foreign origin", initBody, map[string]string{"Origin": "https://evil.example", "Authorization": tok}, 403, "allowed_origins"},
		{"own origin", initBody, map[string]string{"Origin": e.base, "Authorization": tok}, 200, `"result"`},
		{"allowed origin", initBody, map[string]string{"Origin": "https://inspector.example:6274", "Authorization": tok}, 200, `"result"`},
		{"unknown version", initBody, map[string]string{"Mcp-Protocol-Version": "1999-01-01", "Authorization": tok}, 400, "unsupported"},
		{"2024-11-05 without a version header", strings.Replace(initBody, "2025-06-18", "2024-11-05", 1), map[string]string{"Authorization": tok}, 200, `"protocolVersion":"2024-11-05"`},
		{"2025-03-26 without a version header", strings.Replace(initBody, "2025-06-18", "2025-03-26", 1), map[string]string{"Authorization": tok}, 200, `"protocolVersion":"2025-03-26"`},
		{"2025-11-25", strings.Replace(initBody, "2025-06-18", "2025-11-25", 1), map[string]string{"Authorization": tok, "Mcp-Protocol-Version": "2025-11-25"}, 200, `"protocolVersion":"2025-11-25"`},
		{"body too large", big, map[string]string{"Authorization": tok}, 413, `"too_large"`},
		{"body at the limit is fine", initBody, map[string]string{"Authorization": tok}, 200, `"result"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawPost(t, e.url, tc.body, tc.hdr)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.has) {
				t.Fatalf("status %d body %s; want %d containing %s", resp.StatusCode, body, tc.status, tc.has)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
		})
	}
	// CORS preflight from an allowed origin is answered without a token.
	req, _ := http.NewRequest(http.MethodOptions, e.url, nil)
	req.Header.Set("Origin", "https://inspector.example:6274")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://inspector.example:6274" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	// A sane X-Request-Id is kept; an insane one replaced.
	resp, _ = rawPost(t, e.url, initBody, map[string]string{"Authorization": tok, "X-Request-Id": "req-42.a:b"})
	if resp.Header.Get("X-Request-Id") != "req-42.a:b" {
		t.Fatalf("request id not kept: %q", resp.Header.Get("X-Request-Id"))
	}
	resp, _ = rawPost(t, e.url, initBody, map[string]string{"Authorization": tok, "X-Request-Id": "bad id;" + strings.Repeat("z", 200)})
	if got := resp.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Fatalf("insane request id kept: %q", got)
	}
}

// TestRateLimits: the per-email token bucket and the per-IP failed-auth
// limit answer 429 with Retry-After. The clock is frozen, so no token ever
// refills during the test.
func TestRateLimits(t *testing.T) {
	frozen := time.Now()
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen},
		func(c *config.Config, o *Options) {
			c.Limits.CallsPerSecond = 1
			c.Limits.Burst = 2
			c.Limits.FailedAuthPerMinute = 2
			o.Now = func() time.Time { return frozen }
		})
	tok := map[string]string{"Authorization": "Bearer " + e.idp.token(t, "alice@acme.com")}
	other := map[string]string{"Authorization": "Bearer " + e.idp.token(t, "bob@acme.com")}
	for i := range 2 {
		if resp, body := rawPost(t, e.url, initBody, tok); resp.StatusCode != 200 {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := rawPost(t, e.url, `{"jsonrpc":"2.0","id":77,"method":"tools/list"}`, tok)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"id":77`) || !strings.Contains(string(body), string(brain.CodeRateLimited)) {
		t.Fatalf("over the email limit: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Another email has its own bucket.
	if resp, body := rawPost(t, e.url, initBody, other); resp.StatusCode != 200 {
		t.Fatalf("other email: %d %s", resp.StatusCode, body)
	}
	// Two refused tokens exhaust the address's failed-authentication
	// budget. A valid token from that address is never refused by it; the
	// same refused token sent again is 429; a new bad token still gets its
	// truthful 401 (a client behind the same NAT learns to sign in again).
	bad := map[string]string{"Authorization": "Bearer x.y.z"}
	for i := range 2 {
		if resp, _ := rawPost(t, e.url, initBody, bad); resp.StatusCode != 401 {
			t.Fatalf("bad token %d: %d", i, resp.StatusCode)
		}
	}
	if resp, body := rawPost(t, e.url, initBody, other); resp.StatusCode != 200 {
		t.Fatalf("a valid token after failed auths from its address: %d %s", resp.StatusCode, body)
	}
	resp, body = rawPost(t, e.url, initBody, bad)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || ra < 1 || ra > 60 || !strings.Contains(string(body), "keeps sending it") {
		t.Fatalf("the refused token again, over budget: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := rawPost(t, e.url, initBody, map[string]string{"Authorization": "Bearer a.b.c"}); resp.StatusCode != 401 {
		t.Fatalf("a new bad token over budget: %d, want its 401", resp.StatusCode)
	}
	logs := e.logs.String()
	if n := strings.Count(logs, `"msg":"token refused"`); n != 1 || !strings.Contains(logs, `"kind":"malformed_token"`) || !strings.Contains(logs, `"client_ip":"127.0.0.1"`) {
		t.Fatalf("%d 'token refused' lines (want 1: one per refused token, repeats and over-budget ones not logged):\n%s", n, logs)
	}
	if n := strings.Count(logs, "over its failed-authentication budget"); n != 1 {
		t.Fatalf("%d over-budget lines, want 1", n)
	}
	if strings.Contains(logs, "x.y.z") || strings.Contains(logs, "a.b.c") || strings.Contains(logs, e.idp.token(t, "bob@acme.com")[:40]) {
		t.Fatal("a token reached the log")
	}
	// Missing tokens are not failures (every client's first request has none).
	e2 := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen},
		func(c *config.Config, o *Options) {
			c.Limits.FailedAuthPerMinute = 1
			o.Now = func() time.Time { return frozen }
		})
	for range 3 {
		if resp, _ := rawPost(t, e2.url, initBody, nil); resp.StatusCode != 401 {
			t.Fatalf("no token: %d", resp.StatusCode)
		}
	}
}

// TestServeTLS: with tls.cert_file/key_file the public listener speaks
// HTTPS with that certificate.
func TestServeTLS(t *testing.T) {
	e := &testEnv{t: t, pki: newTestPKI(t), idp: startIdP(t), wings: map[string]*testWing{}, shards: map[string]*shardServer{}, audit: &syncBuffer{}, logs: &syncBuffer{}}
	w := newTestWing(t, "payments", policyOpen)
	sh := startShard(t, e.pki, w, "")
	cert, key, err := e.pki.ca.Issue(pki.RoleShard, []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := pki.WriteFiles(dir, map[string][]byte{"tls.crt": cert, "tls.key": key}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + ln.Addr().String()
	cfg := e.config([]config.WingConfig{{Name: "payments", Address: sh.addr, ServerName: "localhost"}}, base)
	cfg.TLS = config.TLSFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	e.startGatewayOn(ln, cfg, Options{})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.pki.ca.CertPEM())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var doc protectedResourceMetadata
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Resource != base+"/mcp" || resp.TLS == nil {
		t.Fatalf("%v %+v", err, doc)
	}
	c := newMCPClient(t, base+"/mcp", e.idp.token(t, "alice@acme.com"), false, transport.WithHTTPBasicClient(hc))
	if text, isErr := call(t, c, "brain_wings", `{}`); isErr || !strings.Contains(text, "payments") {
		t.Fatalf("over TLS: %s", text)
	}
}
