package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
	oauthcfg "github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/proto/pki"
)

// TestLoadConfigExample: the brief's example (what the Helm chart renders)
// loads to exactly these values and validates.
func TestLoadConfigExample(t *testing.T) {
	cfg, err := loadConfig("testdata/gateway.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.PublicURL = "https://brain.acme.com"
	want.TLS = TLSFiles{CertFile: "/etc/brainstem/tls/tls.crt", KeyFile: "/etc/brainstem/tls/tls.key"}
	want.AllowedOrigins = []string{}
	want.OIDC.Issuers = []sso.IssuerConfig{{URL: "https://login.acme.com", Audiences: []string{"brainstem"}, Algorithms: []string{"RS256"}}}
	want.OIDC.AllowedDomains = []string{"acme.com"}
	want.Shards.TLS = TLSFiles{CAFile: "/etc/brainstem/mtls/ca.crt", CertFile: "/etc/brainstem/mtls/tls.crt", KeyFile: "/etc/brainstem/mtls/tls.key"}
	want.Wings = []WingConfig{{Name: "payments", Address: "payments-0.payments.brainstem.svc:7443", ServerName: "payments.shard.brainstem"}}
	want.OAuth = oauthcfg.Config{
		Enabled: true, SigningKeyFile: "/etc/brainstem/oauth/signing.pem",
		Upstream:     oauthcfg.UpstreamConfig{Issuer: "https://login.acme.com", ClientID: "brainstem", ClientSecretFile: "/etc/brainstem/oauth/client-secret"},
		RedirectURIs: []string{"https://vscode.dev/redirect"}, RedirectSchemes: []string{"cursor"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckConfig("testdata/gateway.yaml", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if cfg.MCPURL() != "https://brain.acme.com/mcp" || cfg.Wings[0].TLSName() != "payments.shard.brainstem" {
		t.Fatal(cfg.MCPURL(), cfg.Wings[0].TLSName())
	}
}

// TestGrantsFormerKey: the grants section's former key, sessions, is still
// read for one release, over the defaults as grants is, and named as
// deprecated; giving both keys is an error.
func TestGrantsFormerKey(t *testing.T) {
	cfg, err := ParseConfig([]byte("sessions: {max_entries: 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig().Grants
	want.MaxEntries = 7
	if cfg.Grants != want || cfg.Sessions != nil {
		t.Fatalf("grants %+v (sessions %v), want %+v", cfg.Grants, cfg.Sessions, want)
	}
	if d := cfg.Deprecations(); len(d) != 1 || !strings.Contains(d[0], "sessions") || !strings.Contains(d[0], "grants") {
		t.Fatalf("deprecations %q", d)
	}
	cfg, err = ParseConfig([]byte("grants: {max_entries: 7}\n"))
	if err != nil || cfg.Grants.MaxEntries != 7 || len(cfg.Deprecations()) != 0 || cfg.Sessions != nil {
		t.Fatalf("grants: %+v, %q, %v", cfg.Grants, cfg.Deprecations(), err)
	}
	if _, err := ParseConfig([]byte("grants: {max_entries: 7}\nsessions: {max_entries: 8}\n")); !errors.Is(err, ErrConfig) {
		t.Fatalf("both keys: %v", err)
	}
}

// TestEnvOverrides: BRAINSTEM_* variables replace secrets and paths.
func TestEnvOverrides(t *testing.T) {
	env := map[string]string{
		"BRAINSTEM_TLS_CERT_FILE":            "/run/tls.crt",
		"BRAINSTEM_SHARDS_TLS_KEY_FILE":      "/run/mtls.key",
		"BRAINSTEM_PUBLIC_URL":               "https://other.acme.com",
		"BRAINSTEM_SHARDS_TLS_CA_FILE":       "",
		"BRAINSTEM_UNRELATED_IS_IGNORED":     "x",
		"BRAINSTEM_OAUTH_CLIENT_SECRET_FILE": "/run/oauth/secret",
	}
	cfg, err := loadConfig("testdata/gateway.yaml", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS.CertFile != "/run/tls.crt" || cfg.Shards.TLS.KeyFile != "/run/mtls.key" || cfg.PublicURL != "https://other.acme.com" ||
		cfg.Shards.TLS.CAFile != "/etc/brainstem/mtls/ca.crt" || cfg.OAuth.Upstream.ClientSecretFile != "/run/oauth/secret" {
		t.Fatalf("%+v", cfg)
	}
	want := []string{"BRAINSTEM_PUBLIC_URL", "BRAINSTEM_TLS_CERT_FILE", "BRAINSTEM_TLS_KEY_FILE", "BRAINSTEM_SHARDS_TLS_CA_FILE",
		"BRAINSTEM_SHARDS_TLS_CERT_FILE", "BRAINSTEM_SHARDS_TLS_KEY_FILE", "BRAINSTEM_OAUTH_SIGNING_KEY_FILE", "BRAINSTEM_OAUTH_CLIENT_SECRET_FILE"}
	if got := envOverrideNames(); !slices.Equal(got, want) {
		t.Fatalf("envOverrideNames() = %v, want %v", got, want)
	}
}

// envOverrideNames lists the environment variables LoadConfig applies
// over the file.
func envOverrideNames() []string {
	out := make([]string, len(envOverrides))
	for i, e := range envOverrides {
		out[i] = e.name
	}
	return out
}

// TestConfigRejects: unknown keys, several documents, empty and oversized
// files are refused with the key or reason named.
func TestConfigRejects(t *testing.T) {
	tests := []struct {
		name, yaml, has string
	}{
		{"unknown top key", "public_url: https://a\nlisten_addr: x\n", "listen_addr"},
		{"unknown nested key", "limits: {burst: 1, brust: 2}\n", "brust"},
		{"unknown oidc key", "oidc: {issuer: x}\n", "issuer"},
		{"wrong type", "limits: {burst: many}\n", "many"},
		{"bad duration", "shards: {call_timeout: soon}\n", "soon"},
		{"two documents", "listen: ':1'\n---\nlisten: ':2'\n", "more than one"},
		{"empty", "", "empty"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(p)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.has) {
				t.Fatalf("err %v, want ErrConfig naming %q", err, tc.has)
			}
		})
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxConfigBytes)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(big); !errors.Is(err, ErrConfig) {
		t.Fatalf("oversized config: %v", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil || !strings.HasPrefix(err.Error(), "gateway: config") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestValidateReportsEverything: one Validate call names every bad key.
func TestValidateReportsEverything(t *testing.T) {
	cfg, err := loadConfig("testdata/bad.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	msg := err.Error()
	for _, key := range []string{
		"public_url:", "listen:", "tls:", "oidc:", "shards.tls.ca_file", "shards.tls.cert_file", "shards.tls.key_file",
		"shards.call_timeout", "shards.max_in_flight", "wings[0].name", "wings[0].address", "wings[2].name", "duplicates wings[1]",
		`default_wing: "billing" is not one of wings`, "limits.max_body_bytes", "limits.calls_per_second", "limits.burst", "limits.failed_auth_per_minute",
		"limits.fanout_concurrency", "limits.resources_page_size", "shards.watch_interval", "grants.max_entries", "grants.idle_ttl", "log.format", "log.level",
	} {
		if !strings.Contains(msg, key) {
			t.Errorf("Validate does not mention %s:\n%s", key, msg)
		}
	}
	if !errors.Is(err, ErrConfig) {
		t.Fatal("not ErrConfig")
	}

	// Validate is pure and table-driven cases of single problems.
	good, err := loadConfig("testdata/gateway.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func(*Config)
		has  string // "" = valid
	}{
		{"valid", func(*Config) {}, ""},
		{"loopback http without tls", func(c *Config) {
			c.PublicURL, c.Listen, c.TLS = "http://127.0.0.1:8080", "127.0.0.1:8080", TLSFiles{}
		}, ""},
		{"http public url", func(c *Config) { c.PublicURL = "http://brain.acme.com" }, "must use https"},
		{"public url with /mcp", func(c *Config) { c.PublicURL = "https://brain.acme.com/mcp" }, "appends /mcp"},
		{"no tls on all interfaces", func(c *Config) { c.TLS = TLSFiles{} }, "required unless listen is a loopback"},
		{"half tls", func(c *Config) { c.TLS.KeyFile = "" }, "both be set"},
		{"bad origin", func(c *Config) { c.AllowedOrigins = []string{"https://x.example/path"} }, "allowed_origins[0]"},
		{"same admin", func(c *Config) { c.AdminListen = c.Listen }, "admin_listen"},
		{"no wings", func(c *Config) { c.Wings = nil }, "wings: at least one"},
		{"bad port", func(c *Config) { c.Wings[0].Address = "h:99999" }, "wings[0].address"},
		{"retry base", func(c *Config) { c.Shards.RetryBase = time.Minute }, "shards.retry_base"},
		{"deny ttl", func(c *Config) { c.Grants.DenyTTL = 0 }, "grants.deny_ttl"},
		{"drain", func(c *Config) { c.DrainTimeout = 0 }, "drain_timeout"},
		{"oauth off", func(c *Config) { c.OAuth = oauthcfg.Config{} }, ""},
		{"oauth upstream not trusted", func(c *Config) { c.OAuth.Upstream.Issuer = "https://other.example" }, "oauth.upstream.issuer"},
		{"oauth client not an audience", func(c *Config) { c.OAuth.Upstream.ClientID = "gw" }, "not among oidc.issuers[0].audiences"},
		{"oauth own issuer trusted", func(c *Config) {
			c.OIDC.Issuers = append(c.OIDC.Issuers, sso.IssuerConfig{URL: c.PublicURL, Audiences: []string{"x"}})
		}, "the gateway's own authorization server"},
		{"oauth no key", func(c *Config) { c.OAuth.SigningKeyFile = "" }, "oauth.signing_key_file"},
		{"oauth no secret", func(c *Config) { c.OAuth.Upstream.ClientSecretFile = "" }, "oauth.upstream.client_secret_file"},
		{"oauth long tokens", func(c *Config) { c.OAuth.AccessTokenTTL = 2 * time.Hour }, "oauth.access_token_ttl"},
		{"oauth long codes", func(c *Config) { c.OAuth.CodeTTL = 5 * time.Minute }, "oauth.code_ttl"},
		{"oauth reserved param", func(c *Config) { c.OAuth.Upstream.AuthParams = map[string]string{"nonce": "x"} }, "oauth.upstream.auth_params.nonce"},
		{"oauth http redirect", func(c *Config) { c.OAuth.RedirectURIs = []string{"http://vscode.dev/redirect"} }, "oauth.redirect_uris[0]"},
		{"oauth web scheme", func(c *Config) { c.OAuth.RedirectSchemes = []string{"javascript"} }, "oauth.redirect_schemes[0]"},
		{"oauth loopback documents in production", func(c *Config) { c.OAuth.ClientMetadata.AllowLoopback = true }, "client_metadata.allow_loopback"},
		{"peers by dns", func(c *Config) { c.Peers = PeersConfig{DNS: "brainstem-gateway-peers.brainstem.svc"} }, ""},
		{"peers by address", func(c *Config) {
			c.Peers = PeersConfig{Addresses: []string{"10.0.0.1:9090", "10.0.0.2:9090"}, Advertise: "10.0.0.1:9090"}
		}, ""},
		{"peers bad dns", func(c *Config) { c.Peers = PeersConfig{DNS: "http://peers"} }, "peers.dns"},
		{"peers bad address", func(c *Config) { c.Peers = PeersConfig{Addresses: []string{"10.0.0.1"}} }, "peers.addresses[0]"},
		{"peers bad port", func(c *Config) { c.Peers = PeersConfig{DNS: "peers", Port: 70000} }, "peers.port"},
		{"peers bad advertise", func(c *Config) { c.Peers = PeersConfig{DNS: "peers", Advertise: "10.0.0.1"} }, "peers.advertise"},
		{"peers advertise alone", func(c *Config) { c.Peers = PeersConfig{Advertise: "10.0.0.1:9090"} }, "need peers.dns or peers.addresses"},
		{"peers without oauth", func(c *Config) { c.OAuth, c.Peers = oauthcfg.Config{}, PeersConfig{DNS: "peers"} }, "enable oauth or remove peers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			c.Wings = append([]WingConfig(nil), good.Wings...)
			c.OIDC.Issuers = append([]sso.IssuerConfig(nil), good.OIDC.Issuers...)
			tc.mut(&c)
			err := c.Validate()
			switch {
			case tc.has == "" && err != nil:
				t.Fatalf("unexpected: %v", err)
			case tc.has != "" && (err == nil || !strings.Contains(err.Error(), tc.has)):
				t.Fatalf("err %v, want one naming %q", err, tc.has)
			}
		})
	}
	// Without file-based shard TLS (dev / tests pass Options.ShardTLS).
	c := good
	c.Shards.TLS = TLSFiles{}
	if err := c.ValidateWith(false); err != nil {
		t.Fatal(err)
	}
}

// TestConfigWingNames: the gateway accepts exactly the wing names the
// shards accept (brain.ValidWing): a configured wing its shard would refuse
// ("pay_ments") is a configuration error, reported with the rule.
func TestConfigWingNames(t *testing.T) {
	good, err := loadConfig("testdata/gateway.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"payments", "a", "9", "a-9", "a--b", "pay_ments", "_payments", "payments-", "-payments", "Payments",
		"paymënts", "pay.ments", "pay ments", "con", "com1", "console", strings.Repeat("w", 62), strings.Repeat("w", 63),
		strings.Repeat("w", 64), strings.Repeat("w", 65), ""} {
		c := good
		c.Wings = append([]WingConfig(nil), good.Wings...)
		c.Wings[0].Name = name
		err := c.Validate()
		gateway := err == nil || !strings.Contains(err.Error(), "wings[0].name")
		shard := brain.ValidWing(name)
		if gateway != (shard == nil) {
			t.Errorf("wing %q: the gateway accepts it: %v; brain.ValidWing: %v (%v)", name, gateway, shard == nil, err)
		}
		if shard != nil && !strings.Contains(err.Error(), shard.Error()) {
			t.Errorf("wing %q: %v does not state the rule's refusal %q", name, err, shard)
		}
	}
}

// FuzzParseConfig: arbitrary bytes never panic and a parsed config's
// Validate never panics either.
func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{"testdata/gateway.yaml", "testdata/bad.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("wings: [{name: a, address: 'h:1'}]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error not wrapping ErrConfig: %v", err)
			}
			return
		}
		_ = cfg.Validate()
	})
}

// TestCheckConfigFiles: --check-config judges the certificate files the
// config names as the shards will: a shard-role certificate in shards.tls
// is refused (every mint would be), so are a key that is not the
// certificate's and a public pair that does not match.
func TestCheckConfigFiles(t *testing.T) {
	const year = 365 * 24 * time.Hour
	dir := t.TempDir()
	ca, err := pki.NewCA("test CA", 10*year)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gc, gk, _ := ca.Issue(pki.RoleGateway, []string{"gateway"}, year)
	sc, sk, _ := ca.Issue(pki.RoleShard, []string{"localhost"}, year)
	pc, pk, _ := ca.Issue(pki.RoleShard, []string{"brain.acme.com"}, year) // a public certificate
	caFile := write("ca.crt", ca.CertPEM())
	gcF, gkF, scF, skF, pcF, pkF := write("gw.crt", gc), write("gw.key", gk), write("sh.crt", sc), write("sh.key", sk), write("pub.crt", pc), write("pub.key", pk)
	config := func(cert, key, pubCert, pubKey string) string {
		return write("gateway.yaml", []byte(fmt.Sprintf(`public_url: https://brain.acme.com
tls: {cert_file: %q, key_file: %q}
oidc: {issuers: [{url: https://login.acme.com, audiences: [brainstem]}]}
shards: {tls: {ca_file: %q, cert_file: %q, key_file: %q}}
wings: [{name: payments, address: "127.0.0.1:7443"}]
`, pubCert, pubKey, caFile, cert, key)))
	}
	tests := []struct {
		name                     string
		cert, key, pubCert, pubK string
		want                     []string
	}{
		{"valid", gcF, gkF, pcF, pkF, nil},
		{"shard certificate as the gateway's", scF, skF, pcF, pkF, []string{"shards.tls", "has role shard; a gateway needs a gateway-role certificate"}},
		{"key of another certificate", gcF, skF, pcF, pkF, []string{"the key does not belong to the certificate"}},
		{"public pair mismatch", gcF, gkF, pcF, gkF, []string{"tls: tls: private key does not match public key"}},
		{"missing file", filepath.Join(dir, "none.crt"), gkF, pcF, pkF, []string{"shards.tls.cert_file", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := config(tt.cert, tt.key, tt.pubCert, tt.pubK)
			_, err := CheckConfig(path, true, time.Now())
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q", err, w)
				}
			}
			// Without the files, only the YAML is judged.
			if _, err := CheckConfig(path, false, time.Now()); err != nil {
				t.Fatalf("--check-files=false: %v", err)
			}
		})
	}
}

// TestCheckConfigServiceAccounts: --check-config reads the service
// accounts' credential files: a missing file or one that holds neither a
// SHA-256 nor a public key is refused, naming its key.
func TestCheckConfigServiceAccounts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hash := write("ci.sha256", strings.Repeat("ab", 32)+"  -\n")
	bad := write("bad.sha256", "not a hash\n")
	config := func(file string) string {
		return write("gateway.yaml", fmt.Sprintf(`public_url: https://brain.acme.com
tls: {cert_file: /x/tls.crt, key_file: /x/tls.key}
oidc: {issuers: [{url: https://login.acme.com, audiences: [brainstem]}]}
oauth:
  enabled: true
  signing_key_file: /x/signing.pem
  upstream: {issuer: https://login.acme.com, client_id: brainstem, client_secret_file: /x/secret}
  service_accounts:
    - id: ci
      credentials:
        - secret_sha256_file: %q
          not_after: 2027-01-31T00:00:00Z
shards: {tls: {ca_file: /x/ca.crt, cert_file: /x/gw.crt, key_file: /x/gw.key}}
wings: [{name: payments, address: "127.0.0.1:7443"}]
`, file))
	}
	cfg, err := LoadConfig(config(hash))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.OAuth.ServiceAccounts[0].Credentials[0].NotAfter; !got.Equal(time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("not_after = %v", got)
	}
	if err := cfg.OAuth.CheckServiceAccounts(); err != nil {
		t.Fatalf("a good hash file: %v", err)
	}
	for file, want := range map[string]string{bad: "not a hex SHA-256", filepath.Join(dir, "none"): "no such file"} {
		_, err := CheckConfig(config(file), true, time.Now())
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "oauth.service_accounts[0].credentials[0]") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", file, err, want)
		}
	}
}
