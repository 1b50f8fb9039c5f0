// Package machine is the machine identities of the gateway's
// authorization server (gateway/oauth): service accounts (a CI job, a
// scheduled agent) that sign in with the client credentials grant
// (RFC 6749 §4.4), authenticating with a client secret or a private_key_jwt
// assertion (RFC 7523 §2.2), and get access tokens with no person behind
// them. The accounts are configured (oauth.ServiceAccount); the JWT bearer
// grant of gateway/oauth/idjag authenticates its confidential clients here.
package machine

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
)

// The client credentials grant (RFC 6749 §4.4) and client assertions
// (RFC 7523 §2.2).
const (
	// GrantTypeClientCredentials is the grant of service accounts.
	GrantTypeClientCredentials = "client_credentials"
	// ClientAssertionTypeJWT is the only client_assertion_type accepted.
	ClientAssertionTypeJWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// Bounds of client authentication.
const (
	// MinSecretBytes is the shortest client secret accepted: a secret is
	// stored as an unsalted SHA-256, which is safe only for secrets too
	// random to guess (32 random bytes are 43 or 44 characters in base64).
	MinSecretBytes = 32
	// MaxSecretBytes bounds a client secret.
	MaxSecretBytes = 512
	// MaxAssertionBytes bounds a client assertion (an RS256 JWT with an
	// 8192-bit key is under 2 KiB).
	MaxAssertionBytes = 8 << 10
	// MaxAssertionLifetime is how far in the future an assertion's exp may
	// be: it bounds how long the replay cache must remember its jti.
	MaxAssertionLifetime = 5 * time.Minute
	// MaxJTIBytes bounds an assertion's jti.
	MaxJTIBytes = 256
	// maxAssertionsRemembered bounds the replay cache of one replica.
	maxAssertionsRemembered = 100000
	// failureAddresses bounds the addresses whose failures are counted.
	failureAddresses = 10000
	// ClientFailuresPerMin is the budget of failed client authentications
	// of each address and of each account (clientAuthFailed). A request
	// that authenticates spends nothing and is never refused by it.
	ClientFailuresPerMin = 30
	// assertionClockSkew is the leeway on an assertion's exp, nbf and iat:
	// the machine's clock signs them.
	assertionClockSkew = 30 * time.Second
)

// errClientAuth is the one answer to a failed client authentication: it
// does not say whether the account, the secret or the key was wrong.
func errClientAuth() *oauth.TokenError {
	return oauth.NewTokenError(http.StatusUnauthorized, "invalid_client", "client authentication failed", 0)
}

// Grant is the client credentials grant of the configured service
// accounts, and their client authentication (which the JWT bearer grant
// of gateway/oauth/idjag uses too).
type Grant struct {
	srv      *oauth.Server
	accounts map[string]*account // service accounts by client id
	// assertions are the jti of client assertions accepted here.
	assertions *Replays
	// authFailures are the failed client authentications by address;
	// each account holds its own.
	authFailures *lru.Cache[string, *failureBudget]
}

// New loads the service accounts of srv's configuration (their
// config.LoadedCredential files too) and makes their grant.
func New(srv *oauth.Server) (*Grant, error) {
	accounts, err := loadServiceAccounts(srv.Config().ServiceAccounts, srv.Log())
	if err != nil {
		return nil, err
	}
	g := &Grant{srv: srv, accounts: accounts, assertions: NewReplays(maxAssertionsRemembered)}
	if g.authFailures, err = lru.New[string, *failureBudget](failureAddresses); err != nil {
		return nil, fmt.Errorf("oauth: service accounts: %w", err)
	}
	return g, nil
}

// GrantType is the client credentials grant type.
func (s *Grant) GrantType() string { return GrantTypeClientCredentials }

// Advertise lists the grant and the client authentication methods when
// service accounts are configured.
func (s *Grant) Advertise(m map[string]any) bool {
	if len(s.accounts) == 0 {
		return false
	}
	m["token_endpoint_auth_methods_supported"] = []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"}
	m["token_endpoint_auth_signing_alg_values_supported"] = []string{"EdDSA", "ES256", "RS256"}
	return true
}

// Register adds nothing: the grant is the token endpoint's.
func (s *Grant) Register(*http.ServeMux) {}

// Redeem is the token endpoint's client credentials grant: a service
// account authenticates itself; it is no registered client.
func (s *Grant) Redeem(_ http.ResponseWriter, r *http.Request, form url.Values) ([]byte, string, *oauth.TokenError) {
	body, terr := s.redeemClientCredentials(r, form)
	return body, "token_client_credentials", terr
}

// redeemClientCredentials authenticates a service account (a client
// secret, or a private_key_jwt assertion) and issues its access token.
// There is no budget of requests: only failed authentications are
// counted (authenticateClient), so a genuine config.LoadedCredential is answered
// whatever others sent from its address or in its name.
func (s *Grant) redeemClientCredentials(r *http.Request, form url.Values) ([]byte, *oauth.TokenError) {
	if len(s.accounts) == 0 {
		return nil, oauth.NewTokenError(http.StatusBadRequest, "unsupported_grant_type", "this gateway has no service accounts (oauth.service_accounts)", 0)
	}
	// The request is checked before the client authenticates, so that a
	// wrong resource or scope does not spend a single-use assertion.
	if terr := s.srv.CheckTarget(form); terr != nil {
		return nil, terr
	}
	acc, cred, method, terr := s.authenticateClient(r, form)
	if terr != nil {
		return nil, terr
	}
	return s.issueServiceToken(r, acc, cred, method)
}

// authFailure is why a client failed to authenticate: the client id it
// claimed, its method and the reason (for the log, never for the client).
type authFailure struct{ id, method, reason string }

// refuse records the failure and returns the one answer to it.
func (f *authFailure) refuse(id, method, reason string) *oauth.TokenError {
	*f = authFailure{id: id, method: method, reason: reason}
	return errClientAuth()
}

// authenticateClient finds the account and the config.LoadedCredential that
// authenticate the request (checkClient). The config.LoadedCredential is checked
// first: a request that authenticates is never refused for others'
// failures. A failure is counted against the address and the account it
// names (clientAuthFailed).
func (s *Grant) authenticateClient(r *http.Request, form url.Values) (*account, config.LoadedCredential, string, *oauth.TokenError) {
	var f authFailure
	acc, cred, method, terr := s.checkClient(r, form, &f)
	if terr != nil && f.reason != "" {
		return nil, config.LoadedCredential{}, "", s.clientAuthFailed(r, f)
	}
	return acc, cred, method, terr
}

// checkClient authenticates the request with client_secret_basic,
// client_secret_post or private_key_jwt, exactly one of them. A failed
// authentication is recorded in f (a malformed request is not one).
func (s *Grant) checkClient(r *http.Request, form url.Values, f *authFailure) (*account, config.LoadedCredential, string, *oauth.TokenError) {
	user, pass, basic := r.BasicAuth()
	_, post := form["client_secret"]
	_, jwtAuth := form["client_assertion"]
	n := 0
	for _, b := range []bool{basic, post, jwtAuth} {
		if b {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, config.LoadedCredential{}, "", f.refuse(form.Get("client_id"), "none", "no client credential")
	case n > 1:
		return nil, config.LoadedCredential{}, "", oauth.InvalidRequest("use one client authentication method (RFC 6749 §2.3): Basic, client_secret or client_assertion")
	case jwtAuth:
		return s.authenticateAssertion(r, form, f)
	}
	id, secret, method := form.Get("client_id"), form.Get("client_secret"), "client_secret_post"
	if basic {
		var err1, err2 error
		user, err1 = url.QueryUnescape(user) // RFC 6749 §2.3.1
		pass, err2 = url.QueryUnescape(pass)
		if err1 != nil || err2 != nil || id != "" && id != user {
			return nil, config.LoadedCredential{}, "", oauth.InvalidRequest("the Basic credentials are not form-encoded, or client_id differs from them")
		}
		id, secret, method = user, pass, "client_secret_basic"
	}
	if len(secret) < MinSecretBytes || len(secret) > MaxSecretBytes {
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, fmt.Sprintf("a secret of %d bytes (%d to %d)", len(secret), MinSecretBytes, MaxSecretBytes))
	}
	sum := sha256.Sum256([]byte(secret))
	acc := s.accounts[id]
	var match config.LoadedCredential
	found := 0
	if acc != nil {
		// Every config.LoadedCredential is compared, in constant time.
		for _, c := range acc.creds {
			if c.Hash != nil && subtle.ConstantTimeCompare(sum[:], c.Hash) == 1 {
				match, found = c, 1
			}
		}
	} else {
		// As much work for an unknown account as for one credential.
		var none [sha256.Size]byte
		subtle.ConstantTimeCompare(sum[:], none[:])
	}
	switch {
	case acc == nil:
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "no such service account")
	case found == 0:
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "the secret matches none of the account's secrets")
	case !match.Usable(s.srv.Now()):
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "config.LoadedCredential "+match.ID+" passed its not_after")
	}
	return acc, match, method, nil
}

// clientAuthFailed counts a failed client authentication against the
// budgets of the client's address and of the account it named, if it
// named one (ClientFailuresPerMin each). Within both, the answer is the
// truthful invalid_client (401), logged. Over either, it is
// temporarily_unavailable (429) with Retry-After, not logged but for one
// line a minute per budget saying it ran out: a flood writes a bounded
// number of lines. A budget refills with time alone; a request that
// authenticates never reaches here.
func (s *Grant) clientAuthFailed(r *http.Request, f authFailure) *oauth.TokenError {
	now, ip := s.srv.Now(), s.srv.ClientIP(r)
	budgets := []*failureBudget{s.addressFailures(ip)}
	if acc := s.accounts[f.id]; acc != nil {
		budgets = append(budgets, acc.failures)
	}
	var wait time.Duration
	tell := false
	for _, b := range budgets { // every budget pays for the failure
		if w, t := b.spend(now); w > 0 {
			wait, tell = max(wait, w), tell || t
		}
	}
	if wait == 0 {
		s.refuseClient(r, f.id, f.method, f.reason)
		return errClientAuth()
	}
	if tell {
		s.srv.Log().Warn("oauth: too many failed service account authentications; failures over the budget are answered 429 and not logged (this line at most once a minute)",
			"client", s.accountLabel(f.id), "client_ip", ip, "per_minute", ClientFailuresPerMin, "reason", f.reason)
	}
	return oauth.NewTokenError(http.StatusTooManyRequests, "temporarily_unavailable",
		"too many failed client authentications from your address or for this client; try again in "+oauth.RetryAfterSeconds(wait)+" s (a genuine config.LoadedCredential is never refused for this)", wait)
}

// AuthenticateClient authenticates the service account of a token
// request of another grant (the JWT bearer grant of a confidential
// client) and returns its id.
func (s *Grant) AuthenticateClient(r *http.Request, form url.Values) (string, *oauth.TokenError) {
	if len(s.accounts) == 0 {
		return "", errClientAuth()
	}
	acc, _, _, terr := s.authenticateClient(r, form)
	if terr != nil {
		return "", terr
	}
	return acc.id, nil
}

// RefuseUnauthenticated refuses a request of another grant that names a
// service account without its credential, when id is one; nil otherwise.
func (s *Grant) RefuseUnauthenticated(r *http.Request, id string) *oauth.TokenError {
	if s.accounts[id] == nil {
		return nil
	}
	s.refuseClient(r, id, "none", "a service account must authenticate with its credential")
	return errClientAuth()
}

// SpendFailure spends one failed authentication from the budget of an
// address, for another grant's refusals: over budget it returns how long
// until one fits again, and whether to log that (once a minute).
func (s *Grant) SpendFailure(ip string) (wait time.Duration, tell bool) {
	return s.addressFailures(ip).spend(s.srv.Now())
}

// addressFailures is the failure budget of an address.
func (s *Grant) addressFailures(ip string) *failureBudget {
	if b, ok := s.authFailures.Get(ip); ok {
		return b
	}
	b := newFailureBudget(ClientFailuresPerMin)
	if prev, found, _ := s.authFailures.PeekOrAdd(ip, b); found {
		return prev
	}
	return b
}

// failureBudget is a budget of failed authentications: perMinute of them
// at once, refilled continuously (a token bucket). Only failures spend it.
type failureBudget struct {
	lim    *rate.Limiter
	toldAt atomic.Int64 // when the log last said the budget ran out (Unix ns)
}

func newFailureBudget(perMinute int) *failureBudget {
	return &failureBudget{lim: rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)}
}

// spend takes one failure from the budget. Over budget it takes nothing
// and returns how long until a failure fits again (at least a second),
// and whether the log should say so (at most once a minute).
func (b *failureBudget) spend(now time.Time) (wait time.Duration, tell bool) {
	if b.lim.AllowN(now, 1) {
		return 0, false
	}
	missing := 1 - b.lim.TokensAt(now)
	wait = time.Duration(missing / float64(b.lim.Limit()) * float64(time.Second))
	last := b.toldAt.Load()
	tell = now.UnixNano()-last >= int64(time.Minute) && b.toldAt.CompareAndSwap(last, now.UnixNano())
	return max(wait, time.Second), tell
}

// assertionClaims are the claims of a client assertion (RFC 7523 §3).
type assertionClaims struct {
	Issuer    string          `json:"iss"`
	Subject   string          `json:"sub"`
	Audience  json.RawMessage `json:"aud"`
	Expiry    *int64          `json:"exp"`
	NotBefore *int64          `json:"nbf"`
	IssuedAt  *int64          `json:"iat"`
	ID        string          `json:"jti"`
}

// authenticateAssertion checks a private_key_jwt client assertion: its
// signature by one of the account's keys with that key's algorithm, iss
// and sub the client id, aud the token endpoint or the issuer, exp within
// MaxAssertionLifetime, and a jti not seen before on this replica.
func (s *Grant) authenticateAssertion(r *http.Request, form url.Values, f *authFailure) (*account, config.LoadedCredential, string, *oauth.TokenError) {
	const method = "private_key_jwt"
	if form.Get("client_assertion_type") != ClientAssertionTypeJWT {
		return nil, config.LoadedCredential{}, "", oauth.InvalidRequest("client_assertion_type must be %s", ClientAssertionTypeJWT)
	}
	raw := form.Get("client_assertion")
	if len(raw) > MaxAssertionBytes {
		return nil, config.LoadedCredential{}, "", oauth.InvalidRequest("client_assertion is over %d bytes", MaxAssertionBytes)
	}
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256, jose.RS256})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, config.LoadedCredential{}, "", f.refuse(form.Get("client_id"), method, "the assertion is not a compact JWS with one signature of EdDSA, ES256 or RS256")
	}
	// The claims name the account; they are trusted only once a key of
	// that account verifies them.
	var unverified assertionClaims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified); err != nil {
		return nil, config.LoadedCredential{}, "", f.refuse(form.Get("client_id"), method, "the assertion's claims do not decode")
	}
	id := unverified.Issuer
	if cid, ok := form["client_id"]; ok && cid[0] != id {
		return nil, config.LoadedCredential{}, "", f.refuse(cid[0], method, "client_id differs from the assertion's iss")
	}
	acc := s.accounts[id]
	if acc == nil {
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "no such service account")
	}
	alg := jose.SignatureAlgorithm(jws.Signatures[0].Protected.Algorithm)
	now := s.srv.Now()
	var (
		cred    config.LoadedCredential
		payload []byte
	)
	for _, c := range acc.creds {
		if c.Key == nil || c.Alg != alg {
			continue
		}
		if p, err := jws.Verify(c.Key); err == nil {
			cred, payload = c, p
			break
		}
	}
	if payload == nil {
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "no key of the account verifies the assertion ("+string(alg)+")")
	}
	if !cred.Usable(now) {
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "config.LoadedCredential "+cred.ID+" passed its not_after")
	}
	var c assertionClaims
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&c); err != nil {
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "the assertion's claims do not decode")
	}
	if reason := s.checkAssertion(c, id, now); reason != "" {
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, reason)
	}
	switch s.assertions.Remember(id+"\x00"+c.ID, time.Unix(*c.Expiry, 0).Add(assertionClockSkew), now) {
	case RememberReplay:
		return nil, config.LoadedCredential{}, "", f.refuse(id, method, "the assertion's jti was already used")
	case RememberFull:
		s.srv.Log().Warn("oauth: the client assertion replay cache is full; refusing assertions until some expire", "client", id)
		return nil, config.LoadedCredential{}, "", oauth.NewTokenError(http.StatusServiceUnavailable, "temporarily_unavailable", "too many client assertions; try again shortly", 10*time.Second)
	}
	return acc, cred, method, nil
}

// checkAssertion returns why verified claims are refused, or "".
func (s *Grant) checkAssertion(c assertionClaims, id string, now time.Time) string {
	switch {
	case c.Issuer != id || c.Subject != id:
		return "iss and sub must both be the client id"
	// aud: one string or an array holding the token endpoint or the issuer (RFC 7523 §3 item 3)
	case !slices.ContainsFunc(oauth.Strings(c.Audience), func(a string) bool { return a == s.srv.Issuer()+oauth.PathToken || a == s.srv.Issuer() }):
		return "aud must be the token endpoint " + s.srv.Issuer() + oauth.PathToken + " or the issuer"
	case c.Expiry == nil:
		return "no exp"
	case !now.Before(time.Unix(*c.Expiry, 0).Add(assertionClockSkew)):
		return "the assertion expired"
	case time.Unix(*c.Expiry, 0).After(now.Add(MaxAssertionLifetime + assertionClockSkew)):
		return fmt.Sprintf("exp is more than %s ahead", MaxAssertionLifetime)
	case c.NotBefore != nil && time.Unix(*c.NotBefore, 0).After(now.Add(assertionClockSkew)):
		return "nbf is in the future"
	case c.IssuedAt != nil && time.Unix(*c.IssuedAt, 0).After(now.Add(assertionClockSkew)):
		return "iat is in the future"
	case c.ID == "" || len(c.ID) > MaxJTIBytes || auth.HasControlChar(c.ID):
		return fmt.Sprintf("jti is required: 1 to %d printable bytes", MaxJTIBytes)
	}
	return ""
}

// refuseClient logs a refused client authentication: never the secret or
// the assertion, and the client id as clientLabel gives it.
func (s *Grant) refuseClient(r *http.Request, id, method, reason string) {
	s.srv.Log().Warn("oauth: service account authentication refused", "client", s.accountLabel(id),
		"method", method, "reason", reason, "client_ip", s.srv.ClientIP(r))
}

// clientLabel is a client id as logs name it: itself when it names a
// configured account, else a digest (so that a secret pasted into the
// client_id field stays out of the logs).
func (s *Grant) accountLabel(id string) string {
	if s.accounts[id] == nil {
		return "unknown:" + keyring.Digest(id)
	}
	return id
}

// issueServiceToken signs a service account's access token: no refresh
// token, config.DefaultServiceAccountTokenTTL (or the configured) lifetime, sub
// client:<id> and the account's email.
func (s *Grant) issueServiceToken(r *http.Request, acc *account, cred config.LoadedCredential, method string) ([]byte, *oauth.TokenError) {
	now := s.srv.Now()
	ttl := s.srv.Config().ServiceAccountTokenTTL
	claims := oauth.AccessClaims{
		Issuer: s.srv.Issuer(), Subject: "client:" + acc.id, Audience: s.srv.Resource(), ClientID: acc.id, Email: acc.email,
		Scope: oauth.Scope, Family: "sa:" + acc.id, IssuedAt: now.Unix(), Expiry: now.Add(ttl).Unix(), ID: oauth.RandomString(16),
	}
	at, terr := s.srv.SignAccess(claims)
	if terr != nil {
		return nil, terr
	}
	body, err := json.Marshal(oauth.TokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(ttl / time.Second), Scope: oauth.Scope})
	if err != nil {
		return nil, oauth.ErrInternal()
	}
	s.srv.Log().Info("oauth: tokens issued", "grant", GrantTypeClientCredentials, "email", acc.email, "client", acc.id,
		"method", method, "credential", cred.ID, "jti", claims.ID, "expires", time.Unix(claims.Expiry, 0).UTC().Format(time.RFC3339),
		"client_ip", s.srv.ClientIP(r))
	return body, nil
}

// VerifyService is Verify's extra rule for a service account's token
// (oauth.ServiceVerifier): its subject is client:<id> and the account is
// still configured, so removing an account ends its tokens at the
// gateway's restart.
func (s *Grant) VerifyService(c oauth.AccessClaims) error {
	id, ok := auth.ServiceAccountID(c.Email)
	if !ok || c.Subject != "client:"+id || c.ClientID != id {
		return sso.NewError(sso.MalformedToken, "the access token's service account identity is inconsistent", nil)
	}
	if s.accounts[id] == nil {
		return sso.NewError(sso.Expired, "the service account "+id+" no longer exists on this gateway", nil)
	}
	if c.Expiry-c.IssuedAt > int64((config.MaxServiceAccountTokenTTL+oauth.AccessClockSkew)/time.Second) {
		return sso.NewError(sso.MalformedToken, "the access token lives longer than any this gateway issues to a service account", nil)
	}
	return nil
}

// The results of Replays.remember.
const (
	RememberNew = iota
	RememberReplay
	RememberFull
)

// Replays remembers the jti of each accepted client assertion
// until the assertion expires. It never forgets an unexpired one: when
// full of unexpired entries it refuses new ones instead (an LRU would
// evict a live jti and allow its replay).
type Replays struct {
	mu      sync.Mutex
	until   map[string]time.Time
	max     int
	swept   time.Time
	sweepGP time.Duration
}

func NewReplays(max int) *Replays {
	return &Replays{until: map[string]time.Time{}, max: max, sweepGP: time.Minute}
}

// remember records key until t, reporting a replay if it is remembered
// already, or a full store.
func (a *Replays) Remember(key string, t, now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u, ok := a.until[key]; ok && now.Before(u) {
		return RememberReplay
	}
	if len(a.until) >= a.max || now.Sub(a.swept) >= a.sweepGP {
		a.swept = now
		for k, u := range a.until {
			if !now.Before(u) {
				delete(a.until, k)
			}
		}
	}
	if len(a.until) >= a.max {
		return RememberFull
	}
	a.until[key] = t
	return RememberNew
}
