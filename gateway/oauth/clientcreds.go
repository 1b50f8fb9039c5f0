package oauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/time/rate"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
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
	// clientFailuresPerMin is the budget of failed client authentications
	// of each address and of each account (clientAuthFailed). A request
	// that authenticates spends nothing and is never refused by it.
	clientFailuresPerMin = 30
	// assertionClockSkew is the leeway on an assertion's exp, nbf and iat:
	// the machine's clock signs them.
	assertionClockSkew = 30 * time.Second
)

// errClientAuth is the one answer to a failed client authentication: it
// does not say whether the account, the secret or the key was wrong.
func errClientAuth() *tokenError {
	return &tokenError{http.StatusUnauthorized, "invalid_client", "client authentication failed", 0}
}

// checkTarget refuses a token request whose resource is not the MCP
// endpoint or whose scope names anything but Scope (the grants without a
// user's consent check them before any credential is spent).
func (s *Server) checkTarget(form url.Values) *tokenError {
	if res, ok := form["resource"]; ok && !s.isResource(res[0]) {
		return &tokenError{http.StatusBadRequest, "invalid_target", "resource must be the MCP endpoint " + s.resource, 0}
	}
	if sc, ok := form["scope"]; ok {
		for _, v := range strings.Fields(sc[0]) {
			if v != Scope {
				return &tokenError{http.StatusBadRequest, "invalid_scope", "the only scope is " + Scope, 0}
			}
		}
	}
	return nil
}

// redeemClientCredentials authenticates a service account (a client
// secret, or a private_key_jwt assertion) and issues its access token.
// There is no budget of requests: only failed authentications are
// counted (authenticateClient), so a genuine credential is answered
// whatever others sent from its address or in its name.
func (s *Server) redeemClientCredentials(r *http.Request, form url.Values) ([]byte, *tokenError) {
	if len(s.accounts) == 0 {
		return nil, &tokenError{http.StatusBadRequest, "unsupported_grant_type", "this gateway has no service accounts (oauth.service_accounts)", 0}
	}
	// The request is checked before the client authenticates, so that a
	// wrong resource or scope does not spend a single-use assertion.
	if terr := s.checkTarget(form); terr != nil {
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
func (f *authFailure) refuse(id, method, reason string) *tokenError {
	*f = authFailure{id: id, method: method, reason: reason}
	return errClientAuth()
}

// authenticateClient finds the account and the credential that
// authenticate the request (checkClient). The credential is checked
// first: a request that authenticates is never refused for others'
// failures. A failure is counted against the address and the account it
// names (clientAuthFailed).
func (s *Server) authenticateClient(r *http.Request, form url.Values) (*account, credential, string, *tokenError) {
	var f authFailure
	acc, cred, method, terr := s.checkClient(r, form, &f)
	if terr != nil && f.reason != "" {
		return nil, credential{}, "", s.clientAuthFailed(r, f)
	}
	return acc, cred, method, terr
}

// checkClient authenticates the request with client_secret_basic,
// client_secret_post or private_key_jwt, exactly one of them. A failed
// authentication is recorded in f (a malformed request is not one).
func (s *Server) checkClient(r *http.Request, form url.Values, f *authFailure) (*account, credential, string, *tokenError) {
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
		return nil, credential{}, "", f.refuse(form.Get("client_id"), "none", "no client credential")
	case n > 1:
		return nil, credential{}, "", invalidRequest("use one client authentication method (RFC 6749 §2.3): Basic, client_secret or client_assertion")
	case jwtAuth:
		return s.authenticateAssertion(r, form, f)
	}
	id, secret, method := form.Get("client_id"), form.Get("client_secret"), "client_secret_post"
	if basic {
		var err1, err2 error
		user, err1 = url.QueryUnescape(user) // RFC 6749 §2.3.1
		pass, err2 = url.QueryUnescape(pass)
		if err1 != nil || err2 != nil || id != "" && id != user {
			return nil, credential{}, "", invalidRequest("the Basic credentials are not form-encoded, or client_id differs from them")
		}
		id, secret, method = user, pass, "client_secret_basic"
	}
	if len(secret) < MinSecretBytes || len(secret) > MaxSecretBytes {
		return nil, credential{}, "", f.refuse(id, method, fmt.Sprintf("a secret of %d bytes (%d to %d)", len(secret), MinSecretBytes, MaxSecretBytes))
	}
	sum := sha256.Sum256([]byte(secret))
	acc := s.accounts[id]
	var match credential
	found := 0
	if acc != nil {
		// Every credential is compared, in constant time.
		for _, c := range acc.creds {
			if c.hash != nil && subtle.ConstantTimeCompare(sum[:], c.hash) == 1 {
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
		return nil, credential{}, "", f.refuse(id, method, "no such service account")
	case found == 0:
		return nil, credential{}, "", f.refuse(id, method, "the secret matches none of the account's secrets")
	case !match.usable(s.now()):
		return nil, credential{}, "", f.refuse(id, method, "credential "+match.id+" passed its not_after")
	}
	return acc, match, method, nil
}

// clientAuthFailed counts a failed client authentication against the
// budgets of the client's address and of the account it named, if it
// named one (clientFailuresPerMin each). Within both, the answer is the
// truthful invalid_client (401), logged. Over either, it is
// temporarily_unavailable (429) with Retry-After, not logged but for one
// line a minute per budget saying it ran out: a flood writes a bounded
// number of lines. A budget refills with time alone; a request that
// authenticates never reaches here.
func (s *Server) clientAuthFailed(r *http.Request, f authFailure) *tokenError {
	now, ip := s.now(), s.clientIP(r)
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
		s.log.Warn("oauth: too many failed service account authentications; failures over the budget are answered 429 and not logged (this line at most once a minute)",
			"client", s.clientLabel(f.id), "client_ip", ip, "per_minute", clientFailuresPerMin, "reason", f.reason)
	}
	return &tokenError{http.StatusTooManyRequests, "temporarily_unavailable",
		"too many failed client authentications from your address or for this client; try again in " + retryAfterSeconds(wait) + " s (a genuine credential is never refused for this)", wait}
}

// addressFailures is the failure budget of an address.
func (s *Server) addressFailures(ip string) *failureBudget {
	if b, ok := s.authFailures.Get(ip); ok {
		return b
	}
	b := newFailureBudget(clientFailuresPerMin)
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
func (s *Server) authenticateAssertion(r *http.Request, form url.Values, f *authFailure) (*account, credential, string, *tokenError) {
	const method = "private_key_jwt"
	if form.Get("client_assertion_type") != ClientAssertionTypeJWT {
		return nil, credential{}, "", invalidRequest("client_assertion_type must be %s", ClientAssertionTypeJWT)
	}
	raw := form.Get("client_assertion")
	if len(raw) > MaxAssertionBytes {
		return nil, credential{}, "", invalidRequest("client_assertion is over %d bytes", MaxAssertionBytes)
	}
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256, jose.RS256})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, credential{}, "", f.refuse(form.Get("client_id"), method, "the assertion is not a compact JWS with one signature of EdDSA, ES256 or RS256")
	}
	// The claims name the account; they are trusted only once a key of
	// that account verifies them.
	var unverified assertionClaims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified); err != nil {
		return nil, credential{}, "", f.refuse(form.Get("client_id"), method, "the assertion's claims do not decode")
	}
	id := unverified.Issuer
	if cid, ok := form["client_id"]; ok && cid[0] != id {
		return nil, credential{}, "", f.refuse(cid[0], method, "client_id differs from the assertion's iss")
	}
	acc := s.accounts[id]
	if acc == nil {
		return nil, credential{}, "", f.refuse(id, method, "no such service account")
	}
	alg := jose.SignatureAlgorithm(jws.Signatures[0].Protected.Algorithm)
	now := s.now()
	var (
		cred    credential
		payload []byte
	)
	for _, c := range acc.creds {
		if c.key == nil || c.alg != alg {
			continue
		}
		if p, err := jws.Verify(c.key); err == nil {
			cred, payload = c, p
			break
		}
	}
	if payload == nil {
		return nil, credential{}, "", f.refuse(id, method, "no key of the account verifies the assertion ("+string(alg)+")")
	}
	if !cred.usable(now) {
		return nil, credential{}, "", f.refuse(id, method, "credential "+cred.id+" passed its not_after")
	}
	var c assertionClaims
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&c); err != nil {
		return nil, credential{}, "", f.refuse(id, method, "the assertion's claims do not decode")
	}
	if reason := s.checkAssertion(c, id, now); reason != "" {
		return nil, credential{}, "", f.refuse(id, method, reason)
	}
	switch s.assertions.remember(id+"\x00"+c.ID, time.Unix(*c.Expiry, 0).Add(assertionClockSkew), now) {
	case rememberReplay:
		return nil, credential{}, "", f.refuse(id, method, "the assertion's jti was already used")
	case rememberFull:
		s.log.Warn("oauth: the client assertion replay cache is full; refusing assertions until some expire", "client", id)
		return nil, credential{}, "", &tokenError{http.StatusServiceUnavailable, "temporarily_unavailable", "too many client assertions; try again shortly", 10 * time.Second}
	}
	return acc, cred, method, nil
}

// checkAssertion returns why verified claims are refused, or "".
func (s *Server) checkAssertion(c assertionClaims, id string, now time.Time) string {
	switch {
	case c.Issuer != id || c.Subject != id:
		return "iss and sub must both be the client id"
	case !s.assertionAudience(c.Audience):
		return "aud must be the token endpoint " + s.issuer + PathToken + " or the issuer"
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
	case c.ID == "" || len(c.ID) > MaxJTIBytes || hasControlChar(c.ID):
		return fmt.Sprintf("jti is required: 1 to %d printable bytes", MaxJTIBytes)
	}
	return ""
}

// assertionAudience accepts aud as one string or an array holding the
// token endpoint or the issuer (RFC 7523 §3 item 3).
func (s *Server) assertionAudience(raw json.RawMessage) bool {
	var aud []string
	if json.Unmarshal(raw, &aud) != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return false
		}
		aud = []string{one}
	}
	for _, a := range aud {
		if a == s.issuer+PathToken || a == s.issuer {
			return true
		}
	}
	return false
}

// refuseClient logs a refused client authentication: never the secret or
// the assertion, and the client id as clientLabel gives it.
func (s *Server) refuseClient(r *http.Request, id, method, reason string) {
	s.log.Warn("oauth: service account authentication refused", "client", s.clientLabel(id),
		"method", method, "reason", reason, "client_ip", s.clientIP(r))
}

// clientLabel is a client id as logs name it: itself when it names a
// configured account, else a digest (so that a secret pasted into the
// client_id field stays out of the logs).
func (s *Server) clientLabel(id string) string {
	if s.accounts[id] == nil {
		return "unknown:" + digest(id)
	}
	return id
}

// issueServiceToken signs a service account's access token: no refresh
// token, DefaultServiceAccountTokenTTL (or the configured) lifetime, sub
// client:<id> and the account's email.
func (s *Server) issueServiceToken(r *http.Request, acc *account, cred credential, method string) ([]byte, *tokenError) {
	now := s.now()
	ttl := s.cfg.ServiceAccountTokenTTL
	claims := accessClaims{
		Issuer: s.issuer, Subject: "client:" + acc.id, Audience: s.resource, ClientID: acc.id, Email: acc.email,
		Scope: Scope, Family: "sa:" + acc.id, IssuedAt: now.Unix(), Expiry: now.Add(ttl).Unix(), ID: randomString(16),
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return nil, &tokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return nil, &tokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
	}
	at, err := jws.CompactSerialize()
	if err != nil {
		return nil, &tokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
	}
	body, err := json.Marshal(tokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(ttl / time.Second), Scope: Scope})
	if err != nil {
		return nil, &tokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
	}
	s.log.Info("oauth: tokens issued", "grant", GrantTypeClientCredentials, "email", acc.email, "client", acc.id,
		"method", method, "credential", cred.id, "jti", claims.ID, "expires", time.Unix(claims.Expiry, 0).UTC().Format(time.RFC3339),
		"client_ip", s.clientIP(r))
	return body, nil
}

// checkServiceIdentity is Verify's extra rule for a service account's
// token: its subject is client:<id> and the account is still configured,
// so removing an account ends its tokens at the gateway's restart.
func (s *Server) checkServiceIdentity(c accessClaims) error {
	id, ok := auth.ServiceAccountID(c.Email)
	if !ok || c.Subject != "client:"+id || c.ClientID != id {
		return sso.NewError(sso.MalformedToken, "the access token's service account identity is inconsistent", nil)
	}
	if s.accounts[id] == nil {
		return sso.NewError(sso.Expired, "the service account "+id+" no longer exists on this gateway", nil)
	}
	if c.Expiry-c.IssuedAt > int64((MaxServiceAccountTokenTTL+accessClockSkew)/time.Second) {
		return sso.NewError(sso.MalformedToken, "the access token lives longer than any this gateway issues to a service account", nil)
	}
	return nil
}

// The results of assertionStore.remember.
const (
	rememberNew = iota
	rememberReplay
	rememberFull
)

// assertionStore remembers the jti of each accepted client assertion
// until the assertion expires. It never forgets an unexpired one: when
// full of unexpired entries it refuses new ones instead (an LRU would
// evict a live jti and allow its replay).
type assertionStore struct {
	mu      sync.Mutex
	until   map[string]time.Time
	max     int
	swept   time.Time
	sweepGP time.Duration
}

func newAssertionStore(max int) *assertionStore {
	return &assertionStore{until: map[string]time.Time{}, max: max, sweepGP: time.Minute}
}

// remember records key until t, reporting a replay if it is remembered
// already, or a full store.
func (a *assertionStore) remember(key string, t, now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u, ok := a.until[key]; ok && now.Before(u) {
		return rememberReplay
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
		return rememberFull
	}
	a.until[key] = t
	return rememberNew
}
