// Package config is the `oauth` section of the gateway's configuration:
// the authorization server's (gateway/oauth) and its grants' (service
// accounts, enterprise IdPs), with the checks the gateway runs on it
// before building anything (Validate, CheckServiceAccounts).
package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/internal/loopback"
)

// Defaults and bounds of the configuration.
const (
	// DefaultAccessTokenTTL is the lifetime of an access token; it is also
	// the most Validate accepts.
	DefaultAccessTokenTTL = time.Hour
	// DefaultRefreshTokenTTL bounds a sign-in: refresh tokens of one sign-in
	// stop working this long after it, however often they rotate.
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	// MaxRefreshTokenTTL is the most Validate accepts for RefreshTokenTTL.
	MaxRefreshTokenTTL = 90 * 24 * time.Hour
	// DefaultRefreshReuseGrace is how long a replica answers a refresh token
	// presented again with the answer it gave the first time (a client that
	// lost the answer to a network error retries); after it, reuse is refused.
	DefaultRefreshReuseGrace = 30 * time.Second
	// DefaultCodeTTL is the lifetime of an authorization code, and the most
	// Validate accepts.
	DefaultCodeTTL = 60 * time.Second
	// DefaultConsentTTL is how long a browser remembers a consent.
	DefaultConsentTTL = 30 * 24 * time.Hour
	// LoginTTL bounds the time between the consent and the IdP's callback.
	LoginTTL = 10 * time.Minute
	// MaxPeers bounds the gateway's replicas a device sign-in's typed code
	// is asked of (and so the gateway's peers.addresses).
	MaxPeers = 64
)

// DefaultUpstreamScopes are requested from the IdP when Scopes is empty.
var DefaultUpstreamScopes = []string{"openid", "email", "profile", "offline_access"}

// Config configures the authorization server. It is the `oauth` section of
// the gateway's configuration; the gateway checks it against its own `oidc`
// section (the upstream issuer must be one of the trusted issuers, with
// ClientID among its audiences).
type Config struct {
	// Enabled turns the authorization server on. The protected-resource
	// metadata then names the gateway itself as the authorization server.
	Enabled bool `yaml:"enabled"`
	// SigningKeyFile is a PEM PKCS#8 Ed25519 private key ("openssl genpkey
	// -algorithm ed25519"). It signs access tokens, and the keys that seal
	// codes, refresh tokens and cookies are derived from it. Every replica
	// must hold the same file (a Kubernetes Secret).
	SigningKeyFile string `yaml:"signing_key_file"`
	// PreviousSigningKeyFiles are keys being rotated out: tokens, codes and
	// client ids made with them are still accepted, nothing new is made.
	PreviousSigningKeyFiles []string `yaml:"previous_signing_key_files"`
	// Upstream is the company IdP the facade signs users in with.
	Upstream UpstreamConfig `yaml:"upstream"`
	// AccessTokenTTL is the lifetime of access tokens; default and maximum 1h.
	AccessTokenTTL time.Duration `yaml:"access_token_ttl"`
	// RefreshTokenTTL bounds a sign-in (see DefaultRefreshTokenTTL); 0 means
	// the default, at most 90 days.
	RefreshTokenTTL time.Duration `yaml:"refresh_token_ttl"`
	// RefreshReuseGrace: see DefaultRefreshReuseGrace; at most 1 minute.
	RefreshReuseGrace time.Duration `yaml:"refresh_reuse_grace"`
	// CodeTTL is the lifetime of authorization codes; default and maximum 60s.
	CodeTTL time.Duration `yaml:"code_ttl"`
	// ConsentTTL is how long a browser remembers that its user approved a
	// client; default 30 days.
	ConsentTTL time.Duration `yaml:"consent_ttl"`
	// RedirectURIs are redirect URIs clients may register besides loopback
	// http ones, compared exactly, e.g. https://vscode.dev/redirect.
	RedirectURIs []string `yaml:"redirect_uris"`
	// RedirectSchemes are private-use URI schemes clients may register
	// redirect URIs with (RFC 8252 §7.1), e.g. "cursor" or "vscode".
	RedirectSchemes []string `yaml:"redirect_schemes"`
	// ClientMetadata configures client ID metadata documents (https client ids).
	ClientMetadata ClientMetadataConfig `yaml:"client_metadata"`
	// ServiceAccounts are machine identities that sign in with the client
	// credentials grant (see ServiceAccount). The gateway reads them at
	// start: a changed list takes effect when it restarts.
	ServiceAccounts []ServiceAccount `yaml:"service_accounts"`
	// ServiceAccountTokenTTL is the lifetime of a service account's access
	// token: default DefaultServiceAccountTokenTTL, at most
	// MaxServiceAccountTokenTTL.
	ServiceAccountTokenTTL time.Duration `yaml:"service_account_token_ttl"`
	// Enterprise configures enterprise-managed authorization: the company
	// IdPs whose identity assertions (ID-JAG) the token endpoint exchanges
	// for access tokens without consent (see EnterpriseConfig). Read at
	// start, like ServiceAccounts.
	Enterprise EnterpriseConfig `yaml:"enterprise"`
}

// UpstreamConfig names the IdP and the facade's client there.
type UpstreamConfig struct {
	// Issuer is the IdP's issuer URL; it must be one of oidc.issuers.
	Issuer string `yaml:"issuer"`
	// ClientID is the facade's client at the IdP (a confidential web
	// client whose redirect URI is public_url + "/oauth/callback").
	ClientID string `yaml:"client_id"`
	// ClientSecretFile holds the client secret (a mounted Secret); the
	// environment variable BRAINSTEM_OAUTH_CLIENT_SECRET_FILE overrides it.
	ClientSecretFile string `yaml:"client_secret_file"`
	// ClientSecret is set by code (the development environment); a
	// configuration file names a file instead.
	ClientSecret string `yaml:"-"`
	// Scopes requested from the IdP; default DefaultUpstreamScopes.
	Scopes []string `yaml:"scopes"`
	// AuthParams are extra parameters of the IdP authorization request,
	// e.g. {access_type: offline, prompt: consent} for Google, which issues
	// refresh tokens only so. Parameters the facade sets itself (state,
	// nonce, PKCE, client_id, redirect_uri, scope, response_type) are refused.
	AuthParams map[string]string `yaml:"auth_params"`
}

// ClientMetadataConfig configures client ID metadata documents.
type ClientMetadataConfig struct {
	// Disabled turns client ID metadata documents off (only dynamic
	// registration remains).
	Disabled bool `yaml:"disabled"`
	// AllowedHosts, when set, admits only documents on these hosts (exact,
	// case-insensitive). Empty: any public https host.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowLoopback admits documents on loopback addresses, over http too.
	// For `brainstem dev` and tests on one machine; refused unless the
	// gateway's public URL is itself on loopback.
	AllowLoopback bool `yaml:"allow_loopback"`
}

// reservedAuthParams are set by the facade on the upstream request.
var reservedAuthParams = map[string]bool{
	"state": true, "nonce": true, "code_challenge": true, "code_challenge_method": true,
	"client_id": true, "redirect_uri": true, "scope": true, "response_type": true,
}

// WithDefaults fills zero values.
func (c Config) WithDefaults() Config {
	c.AccessTokenTTL = cmp.Or(c.AccessTokenTTL, DefaultAccessTokenTTL)
	c.RefreshTokenTTL = cmp.Or(c.RefreshTokenTTL, DefaultRefreshTokenTTL)
	c.RefreshReuseGrace = cmp.Or(c.RefreshReuseGrace, DefaultRefreshReuseGrace)
	c.CodeTTL = cmp.Or(c.CodeTTL, DefaultCodeTTL)
	c.ConsentTTL = cmp.Or(c.ConsentTTL, DefaultConsentTTL)
	c.ServiceAccountTokenTTL = cmp.Or(c.ServiceAccountTokenTTL, DefaultServiceAccountTokenTTL)
	if len(c.Upstream.Scopes) == 0 {
		c.Upstream.Scopes = DefaultUpstreamScopes
	}
	return c
}

// Validate reports every problem of an enabled configuration, each naming
// its key below "oauth.". publicURL is the gateway's public URL (loopback
// hosts relax the https rules, as for `brainstem dev`).
func (c Config) Validate(publicURL string) error {
	if !c.Enabled {
		if len(c.ServiceAccounts) > 0 {
			return errors.New("oauth.service_accounts: the gateway's authorization server issues their tokens; set oauth.enabled")
		}
		if len(c.Enterprise.IdPs) > 0 {
			return errors.New("oauth.enterprise: the gateway's authorization server accepts the identity assertions; set oauth.enabled")
		}
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("oauth.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	loopbackGateway := false
	if u, err := url.Parse(publicURL); err == nil {
		loopbackGateway = loopback.Is(u.Hostname())
	}
	if c.SigningKeyFile == "" {
		bad("signing_key_file", "required: a PEM Ed25519 key shared by every replica (openssl genpkey -algorithm ed25519)")
	}
	for i, f := range c.PreviousSigningKeyFiles {
		if f == "" || f == c.SigningKeyFile {
			bad(fmt.Sprintf("previous_signing_key_files[%d]", i), "empty or the same as signing_key_file")
		}
	}
	if c.Upstream.Issuer == "" {
		bad("upstream.issuer", "required: the IdP's issuer URL (one of oidc.issuers)")
	}
	if c.Upstream.ClientID == "" {
		bad("upstream.client_id", "required: the gateway's client id at the IdP")
	}
	if c.Upstream.ClientSecret == "" && c.Upstream.ClientSecretFile == "" {
		bad("upstream.client_secret_file", "required: a file holding the client secret (or BRAINSTEM_OAUTH_CLIENT_SECRET_FILE)")
	}
	for k := range c.Upstream.AuthParams {
		if reservedAuthParams[k] {
			bad("upstream.auth_params."+k, "is set by the gateway itself; remove it")
		}
	}
	for i, s := range c.Upstream.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			bad(fmt.Sprintf("upstream.scopes[%d]", i), "%q is not a scope token", s)
		}
	}
	check := func(key string, d, lo, hi time.Duration) {
		if d != 0 && (d < lo || d > hi) {
			bad(key, "%s is outside [%s, %s]", d, lo, hi)
		}
	}
	check("access_token_ttl", c.AccessTokenTTL, time.Minute, DefaultAccessTokenTTL)
	check("refresh_token_ttl", c.RefreshTokenTTL, time.Hour, MaxRefreshTokenTTL)
	check("refresh_reuse_grace", c.RefreshReuseGrace, time.Second, time.Minute)
	check("code_ttl", c.CodeTTL, 10*time.Second, DefaultCodeTTL)
	check("consent_ttl", c.ConsentTTL, time.Minute, 365*24*time.Hour)
	check("service_account_token_ttl", c.ServiceAccountTokenTTL, time.Minute, MaxServiceAccountTokenTTL)
	validateServiceAccounts(c.ServiceAccounts, bad)
	validateEnterprise(c.Enterprise, bad)
	for i, r := range c.RedirectURIs {
		if err := checkAllowlistedRedirect(r); err != nil {
			bad(fmt.Sprintf("redirect_uris[%d]", i), "%v", err)
		}
	}
	for i, s := range c.RedirectSchemes {
		if err := checkPrivateScheme(s); err != nil {
			bad(fmt.Sprintf("redirect_schemes[%d]", i), "%v", err)
		}
	}
	for i, h := range c.ClientMetadata.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			bad(fmt.Sprintf("client_metadata.allowed_hosts[%d]", i), "%q is not a host name", h)
		}
	}
	if c.ClientMetadata.AllowLoopback && !loopbackGateway {
		bad("client_metadata.allow_loopback", "only for a gateway on loopback (brainstem dev); public_url is %q", publicURL)
	}
	return errors.Join(errs...)
}

// checkAllowlistedRedirect accepts an absolute https URI without fragment
// or user info, or a loopback http one.
func checkAllowlistedRedirect(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URI", s)
	}
	if u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q must not carry a fragment or user info", s)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback.Is(u.Hostname())) {
		return fmt.Errorf("%q must use https (loopback http URIs are always allowed and need no entry)", s)
	}
	return nil
}

// checkPrivateScheme accepts a URI scheme (RFC 3986 §3.1) that is not one of
// the web's own.
func checkPrivateScheme(s string) error {
	if s == "" {
		return errors.New("empty scheme")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alpha := c >= 'a' && c <= 'z'
		if !(alpha || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return fmt.Errorf("%q is not a lower-case URI scheme", s)
		}
	}
	switch s {
	case "http", "https", "javascript", "data", "file", "blob", "about", "ftp", "ws", "wss":
		return fmt.Errorf("%q is not a private-use scheme", s)
	}
	return nil
}

// Bounds of oauth.enterprise.
const (
	// MaxEnterpriseIdPs bounds oauth.enterprise.idps.
	MaxEnterpriseIdPs = 20
	// MaxEnterpriseClients bounds the clients of one IdP.
	MaxEnterpriseClients = 1000
)

// EnterpriseConfig is the `oauth.enterprise` section: the company IdPs
// whose ID-JAGs the token endpoint accepts. Empty: the grant is off and
// not advertised.
type EnterpriseConfig struct {
	// IdPs are the trusted IdPs, each with the clients it may vouch for.
	IdPs []EnterpriseIdP `yaml:"idps"`
}

// EnterpriseIdP is one company IdP that issues ID-JAGs for the gateway.
// Its keys are found by OpenID discovery (issuer +
// /.well-known/openid-configuration, then jwks_uri), cached and refreshed
// as the oidc section's are. Its ID-JAGs' emails pass the oidc section's
// rules: a verified email (or TrustEmail), oidc.allowed_domains, never the
// service account domain; groups come from oidc.groups_claim.
type EnterpriseIdP struct {
	// Issuer is the IdP's issuer, exactly as in the ID-JAG's iss: https,
	// or http on a loopback host (the development IdP).
	Issuer string `yaml:"issuer"`
	// Algorithms pins the accepted signature algorithms; default
	// ["RS256"]. Symmetric algorithms and "none" are refused.
	Algorithms []string `yaml:"algorithms"`
	// TrustEmail accepts an email without email_verified, as
	// oidc.issuers[].trust_email does; only for IdPs whose users cannot
	// set their own address.
	TrustEmail bool `yaml:"trust_email"`
	// Clients are the client ids the IdP may name in an ID-JAG's
	// client_id (what the IdP's administrator configured as the client's
	// id at this gateway), compared exactly. A client that is also one of
	// oauth.service_accounts must authenticate with that account's
	// credential (a confidential client); any other is a public client
	// that only names itself (client_id in the form).
	Clients []string `yaml:"clients"`
}

// validateEnterprise reports every problem of oauth.enterprise.
func validateEnterprise(c EnterpriseConfig, bad func(key, format string, args ...any)) {
	if len(c.IdPs) > MaxEnterpriseIdPs {
		bad("enterprise.idps", "%d identity providers, the limit is %d", len(c.IdPs), MaxEnterpriseIdPs)
		return
	}
	seen := map[string]int{}
	for i, idp := range c.IdPs {
		key := fmt.Sprintf("enterprise.idps[%d]", i)
		ic := sso.IssuerConfig{URL: idp.Issuer, Audiences: []string{"gateway"}, Algorithms: idp.Algorithms}
		if err := (sso.Config{Issuers: []sso.IssuerConfig{ic}}).Validate(); err != nil {
			bad(key, "%v", err)
		}
		if j, dup := seen[idp.Issuer]; dup {
			bad(key+".issuer", "%q is also enterprise.idps[%d]", idp.Issuer, j)
		}
		seen[idp.Issuer] = i
		switch n := len(idp.Clients); {
		case n == 0:
			bad(key+".clients", "required: the client ids this IdP may vouch for")
		case n > MaxEnterpriseClients:
			bad(key+".clients", "%d clients, the limit is %d", n, MaxEnterpriseClients)
		}
		for j, cl := range idp.Clients {
			if cl == "" || len(cl) > maxClientIDBytes || auth.HasControlChar(cl) || strings.TrimSpace(cl) != cl {
				bad(fmt.Sprintf("%s.clients[%d]", key, j), "%q is empty, over %d bytes, unprintable or has surrounding spaces", cl, maxClientIDBytes)
			}
		}
	}
}

// maxClientIDBytes bounds a client id named in configuration.
const maxClientIDBytes = 2048
