package helmtest

import (
	"bytes"
	"testing"

	"gopkg.in/yaml.v3"
)

// gatewayConfig mirrors the gateway config format of the design
// (/work/briefs/gateway.md "Config", docs/operating.md), plus the optional keys
// the gateway also reads (drain_timeout, drain_grace, shards.retry_base,
// shards.keep_alive, shards.idle_timeout, limits.fanout_timeout, the
// limits' HTTP timeouts, limits.max_unauthenticated_conns,
// limits.client_ip_header, grants.deny_ttl, oauth, peers, oidc.issuers[].trust_email,
// signins). Decoding the rendered file with
// KnownFields proves the chart emits no other key.
type gatewayConfig struct {
	PublicURL      string    `yaml:"public_url"`
	Listen         string    `yaml:"listen"`
	AdminListen    string    `yaml:"admin_listen"`
	TLS            tlsFiles  `yaml:"tls"`
	AllowedOrigins []string  `yaml:"allowed_origins"`
	DrainTimeout   string    `yaml:"drain_timeout"`
	DrainGrace     string    `yaml:"drain_grace"`
	DefaultWing    string    `yaml:"default_wing"`
	OIDC           oidcConf  `yaml:"oidc"`
	OAuth          oauthConf `yaml:"oauth"`
	Peers          struct {
		DNS string `yaml:"dns"`
	} `yaml:"peers"`
	Shards shardsCfg `yaml:"shards"`
	Wings  []wingCfg `yaml:"wings"`
	Limits struct {
		MaxBodyBytes        int64   `yaml:"max_body_bytes"`
		CallsPerSecond      float64 `yaml:"calls_per_second"`
		Burst               int     `yaml:"burst"`
		FailedAuthPerMinute int     `yaml:"failed_auth_per_minute"`
		FanoutConcurrency   int     `yaml:"fanout_concurrency"`
		FanoutTimeout       string  `yaml:"fanout_timeout"`
		HeaderTimeout       string  `yaml:"header_timeout"`
		BodyTimeout         string  `yaml:"body_timeout"`
		IdleConnTimeout     string  `yaml:"idle_conn_timeout"`
		MaxUnauthConns      int     `yaml:"max_unauthenticated_conns"`
		ClientIPHeader      string  `yaml:"client_ip_header"`
	} `yaml:"limits"`
	Grants struct {
		MaxEntries int    `yaml:"max_entries"`
		IdleTTL    string `yaml:"idle_ttl"`
		DenyTTL    string `yaml:"deny_ttl"`
	} `yaml:"grants"`
	Signins struct {
		EndedFile      string `yaml:"ended_file"`
		AdminTokenFile string `yaml:"admin_token_file"`
	} `yaml:"signins"`
	Log struct {
		Format string `yaml:"format"`
		Level  string `yaml:"level"`
	} `yaml:"log"`
	Audit struct {
		LogArguments bool `yaml:"log_arguments"`
	} `yaml:"audit"`
}

type tlsFiles struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

type oidcConf struct {
	Issuers []struct {
		URL        string   `yaml:"url"`
		Audiences  []string `yaml:"audiences"`
		Algorithms []string `yaml:"algorithms"`
		TrustEmail bool     `yaml:"trust_email"`
	} `yaml:"issuers"`
	GroupsClaim    string   `yaml:"groups_claim"`
	AllowedDomains []string `yaml:"allowed_domains"`
	ClockSkew      string   `yaml:"clock_skew"`
}

// oauthConf is the gateway's `oauth:` section (gateway/oauth.Config).
type oauthConf struct {
	Enabled                 bool     `yaml:"enabled"`
	SigningKeyFile          string   `yaml:"signing_key_file"`
	PreviousSigningKeyFiles []string `yaml:"previous_signing_key_files"`
	Upstream                struct {
		Issuer           string            `yaml:"issuer"`
		ClientID         string            `yaml:"client_id"`
		ClientSecretFile string            `yaml:"client_secret_file"`
		Scopes           []string          `yaml:"scopes"`
		AuthParams       map[string]string `yaml:"auth_params"`
	} `yaml:"upstream"`
	AccessTokenTTL    string   `yaml:"access_token_ttl"`
	RefreshTokenTTL   string   `yaml:"refresh_token_ttl"`
	RefreshReuseGrace string   `yaml:"refresh_reuse_grace"`
	CodeTTL           string   `yaml:"code_ttl"`
	ConsentTTL        string   `yaml:"consent_ttl"`
	RedirectURIs      []string `yaml:"redirect_uris"`
	RedirectSchemes   []string `yaml:"redirect_schemes"`
	ClientMetadata    struct {
		Disabled     bool     `yaml:"disabled"`
		AllowedHosts []string `yaml:"allowed_hosts"`
	} `yaml:"client_metadata"`
	ServiceAccountTokenTTL string           `yaml:"service_account_token_ttl"`
	ServiceAccounts        []serviceAccount `yaml:"service_accounts"`
	Enterprise             struct {
		IdPs []struct {
			Issuer     string   `yaml:"issuer"`
			Clients    []string `yaml:"clients"`
			Algorithms []string `yaml:"algorithms"`
			TrustEmail bool     `yaml:"trust_email"`
		} `yaml:"idps"`
	} `yaml:"enterprise"`
}

// serviceAccount is one entry of oauth.service_accounts.
type serviceAccount struct {
	ID          string `yaml:"id"`
	Name        string `yaml:"name"`
	Credentials []struct {
		SecretSHA256File string `yaml:"secret_sha256_file"`
		PublicKeyFile    string `yaml:"public_key_file"`
		NotAfter         string `yaml:"not_after"`
	} `yaml:"credentials"`
}

type shardsCfg struct {
	TLS             tlsFiles `yaml:"tls"`
	CallTimeout     string   `yaml:"call_timeout"`
	MaxInFlight     int      `yaml:"max_in_flight"`
	RefreshInterval string   `yaml:"refresh_interval"`
	RetryBase       string   `yaml:"retry_base"`
	KeepAlive       string   `yaml:"keep_alive"`
	IdleTimeout     string   `yaml:"idle_timeout"`
}

type wingCfg struct {
	Name       string `yaml:"name"`
	Address    string `yaml:"address"`
	ServerName string `yaml:"server_name"`
}

// gatewayYAML returns the gateway.yaml text of the rendered gateway ConfigMap.
func gatewayYAML(t *testing.T, r release) string {
	t.Helper()
	var found []string
	for _, cm := range r.all("ConfigMap") {
		if s, ok := dig(cm, "data", "gateway.yaml").(string); ok {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one ConfigMap holding gateway.yaml, got %d", len(found))
	}
	return found[0]
}

// parseGatewayConfig decodes gateway.yaml strictly.
func parseGatewayConfig(t *testing.T, text string) gatewayConfig {
	t.Helper()
	var c gatewayConfig
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("gateway.yaml does not match the gateway config format: %v\n%s", err, text)
	}
	return c
}

// policy is a wing policy file.
type policy struct {
	Readers  []string `yaml:"readers"`
	Writers  []string `yaml:"writers"`
	Curators []string `yaml:"curators"`
}
