// Package doctor walks the chain an MCP client walks to reach a Brainstem
// gateway — TLS, protected-resource metadata, authorization server
// metadata, dynamic registration, the authorization endpoint (which must
// reach the company IdP), the 401 challenge, then with a token tools/list
// and brain_wings, and the clock — and reports each step as passed or
// failed, with the fix in one sentence. `brainstem doctor URL` prints the
// report and exits non-zero when a step failed.
package doctor

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/loopback"
	"github.com/brainstem/brainstem/join"
	"github.com/brainstem/brainstem/signin"
)

// DefaultMaxSkew is the clock difference with the gateway past which the
// clock step fails.
const DefaultMaxSkew = time.Minute

// Status is a step's outcome.
type Status int

// The outcomes.
const (
	Pass Status = iota
	Fail
	Skip
)

// Mark is the symbol printed for the status.
func (s Status) Mark() string {
	switch s {
	case Pass:
		return "✓"
	case Fail:
		return "✗"
	}
	return "-"
}

// The steps, in the order they run.
const (
	StepTLS           = "TLS"
	StepResource      = "protected-resource metadata"
	StepServer        = "authorization-server metadata"
	StepRegistration  = "registration"
	StepAuthorization = "authorization endpoint"
	StepChallenge     = "401 challenge"
	StepToken         = "token"
	StepTools         = "tools/list"
	StepWings         = "brain_wings"
	StepClock         = "clock"
)

// Step is one checked link of the chain.
type Step struct {
	Name   string
	Status Status
	Detail string // what was found
	Fix    string // one sentence, when the step failed
}

// Report is the outcome of Run.
type Report struct {
	MCPURL string
	Steps  []Step
}

// Failed returns the failed steps.
func (r *Report) Failed() []Step {
	var out []Step
	for _, s := range r.Steps {
		if s.Status == Fail {
			out = append(out, s)
		}
	}
	return out
}

// Print writes the report for a person.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "Checking %s as an MCP client would:\n\n", r.MCPURL)
	for _, s := range r.Steps {
		fmt.Fprintf(w, "%s %-30s %s\n", s.Status.Mark(), s.Name, s.Detail)
		if s.Fix != "" {
			fmt.Fprintf(w, "  %-30s fix: %s\n", "", s.Fix)
		}
	}
	switch n := len(r.Failed()); n {
	case 0:
		fmt.Fprintln(w, "\nEvery step passed.")
	case 1:
		fmt.Fprintln(w, "\n1 step failed.")
	default:
		fmt.Fprintf(w, "\n%d steps failed.\n", n)
	}
}

// Config says what to check.
type Config struct {
	// URL is the gateway URL as the user typed it.
	URL string
	// Token, when set, is used for the token steps; otherwise the stored
	// sign-in of SignIn (refreshed as needed), if any.
	Token  string
	SignIn *signin.Client
	// HTTP calls the gateway; nil means a client with a 30 s timeout.
	HTTP *http.Client
	// Now is this computer's clock; nil means time.Now.
	Now func() time.Time
	// MaxSkew: see DefaultMaxSkew; 0 means the default.
	MaxSkew time.Duration
}

// run is the state of one doctor run.
type run struct {
	cfg     Config
	hc      *http.Client
	now     func() time.Time
	mcpURL  string
	u       *url.URL
	metaURL string
	rep     *Report

	server   *signin.ServerMetadata
	scope    string
	clientID string
	answer   *signin.ChallengeAnswer
	token    string
	probe    *join.Probe
}

// Run walks the chain. The error is only for a URL that cannot be a
// gateway's; every failure of the chain is a failed step of the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	u, err := join.ParseMCPURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, hc: cfg.HTTP, now: cfg.Now, u: u, mcpURL: u.String(), rep: &Report{MCPURL: u.String()}}
	r.hc = cmp.Or(r.hc, &http.Client{Timeout: 30 * time.Second})
	if r.now == nil {
		r.now = time.Now
	}
	if r.cfg.MaxSkew <= 0 {
		r.cfg.MaxSkew = DefaultMaxSkew
	}
	r.metaURL, _ = signin.ProtectedResourceMetadataURL(r.mcpURL)
	defer func() {
		if r.probe != nil {
			_ = r.probe.Close()
		}
	}()

	if !r.tls(ctx) {
		for _, n := range []string{StepResource, StepServer, StepRegistration, StepAuthorization, StepChallenge, StepToken, StepTools, StepWings, StepClock} {
			r.skip(n, "skipped: fix TLS first")
		}
		return r.rep, nil
	}
	switch {
	case !r.resource(ctx):
		for _, n := range []string{StepServer, StepRegistration, StepAuthorization} {
			r.skip(n, "skipped: needs the protected-resource metadata")
		}
	case !r.serverMetadata(ctx):
		for _, n := range []string{StepRegistration, StepAuthorization} {
			r.skip(n, "skipped: needs the authorization-server metadata")
		}
	case !r.registration(ctx):
		r.skip(StepAuthorization, "skipped: needs a registered client")
	default:
		r.authorization(ctx)
	}
	r.challenge(ctx)
	if r.tokenStep(ctx) {
		if r.tools(ctx) {
			r.wings(ctx)
		} else {
			r.skip(StepWings, "skipped: needs tools/list")
		}
	} else {
		r.skip(StepTools, "skipped: needs a token")
		r.skip(StepWings, "skipped: needs a token")
	}
	r.clock()
	return r.rep, nil
}

// pass, fail and skip record a step and return what a step function
// returns for it: true for pass, false for the others.
func (r *run) pass(name, format string, args ...any) bool {
	r.rep.Steps = append(r.rep.Steps, Step{Name: name, Status: Pass, Detail: fmt.Sprintf(format, args...)})
	return true
}

func (r *run) fail(name, detail, fix string) bool {
	r.rep.Steps = append(r.rep.Steps, Step{Name: name, Status: Fail, Detail: detail, Fix: fix})
	return false
}

func (r *run) skip(name, detail string) bool {
	r.rep.Steps = append(r.rep.Steps, Step{Name: name, Status: Skip, Detail: detail})
	return false
}

// base is the URL used without "/mcp": what public_url should be.
func (r *run) base() string { return strings.TrimSuffix(r.mcpURL, "/mcp") }

// reachFix is the fix of a failure to reach the gateway (ReachFix), or
// fixReach.
func (r *run) reachFix(err error) string {
	if fix, ok := ReachFix(err, r.u.Host); ok {
		return fix
	}
	return fixReach
}

// tls checks the transport: https with a certificate valid for the host,
// or plain http to this computer only.
func (r *run) tls(ctx context.Context) bool {
	host := r.u.Hostname()
	if r.u.Scheme == "http" {
		if loopback.Is(host) {
			return r.pass(StepTLS, "plain http to this computer (a local `brainstem dev`)")
		}
		return r.fail(StepTLS, fmt.Sprintf("plain http to %s would send tokens in the clear", host),
			fmt.Sprintf("Use the gateway's https URL (https://%s); plain http is only for `brainstem dev` on this computer.", r.u.Host))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metaURL, nil)
	if err != nil {
		return r.fail(StepTLS, err.Error(), fixReach)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		detail, fix := explainTLS(err, host)
		if f, ok := ReachFix(err, r.u.Host); ok {
			fix = f
		}
		return r.fail(StepTLS, detail, fix)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, signin.MaxMetadataBytes))
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return r.fail(StepTLS, "the answer came without TLS", "Serve the gateway over https (an Ingress or load balancer with a certificate for "+host+").")
	}
	c := resp.TLS.PeerCertificates[0]
	return r.pass(StepTLS, "certificate valid for %s until %s (issued by %s)", host, c.NotAfter.UTC().Format(time.DateOnly), c.Issuer.CommonName)
}

// explainTLS turns a connection error into what went wrong and its fix.
func explainTLS(err error, host string) (detail, fix string) {
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	var invErr x509.CertificateInvalidError
	var verErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &hostErr):
		names := hostErr.Certificate.DNSNames
		for _, ip := range hostErr.Certificate.IPAddresses {
			names = append(names, ip.String())
		}
		return fmt.Sprintf("the certificate is for %s, not %s", strings.Join(names, ", "), host),
			fmt.Sprintf("Install a certificate for %s on the gateway's Ingress or load balancer, or use a host name the certificate names.", host)
	case errors.As(err, &authErr):
		return "the certificate is signed by an authority this computer does not trust",
			"Use a publicly trusted certificate for the gateway, or install the company's CA certificate on this computer."
	case errors.As(err, &invErr) && invErr.Reason == x509.Expired:
		return "the certificate has expired (" + invErr.Detail + ")", "Renew the gateway's certificate."
	case errors.As(err, &invErr):
		return "the certificate is not valid: " + invErr.Error(), "Install a valid certificate for " + host + " on the gateway's Ingress or load balancer."
	case errors.As(err, &verErr):
		return "the certificate does not verify: " + verErr.Err.Error(), "Install a valid certificate for " + host + " on the gateway's Ingress or load balancer."
	case plainHTTP(err):
		return "the server answers plain http, not https (" + err.Error() + ")", fixReach
	}
	return "cannot connect: " + err.Error(), fixReach
}

// resource checks the protected-resource metadata: found, and describing
// exactly the URL used.
func (r *run) resource(ctx context.Context) bool {
	m, err := signin.FetchResourceMetadata(ctx, r.hc, r.metaURL, r.mcpURL)
	switch {
	case errors.Is(err, signin.ErrResourceMismatch):
		return r.fail(StepResource, fmt.Sprintf("the gateway says its MCP URL is %s, not %s (the URL used)", m.Resource, r.mcpURL),
			fmt.Sprintf("Set public_url in the gateway's configuration to %s, the URL clients use (or connect with %s if that is the right one).",
				r.base(), strings.TrimSuffix(m.Resource, "/mcp")))
	case errors.Is(err, signin.ErrNoMetadata):
		return r.fail(StepResource, err.Error(), fmt.Sprintf("Check the URL: it must be the gateway's public URL, which serves %s.", r.metaURL))
	case err != nil:
		return r.fail(StepResource, err.Error(), r.reachFix(err))
	}
	r.scope = strings.Join(m.ScopesSupported, " ")
	r.pass(StepResource, "resource %s; authorization server %s", m.Resource, strings.Join(m.AuthorizationServers, ", "))
	// The first server is the one clients use.
	r.server = &signin.ServerMetadata{Issuer: m.AuthorizationServers[0]}
	return true
}

// serverMetadata checks the authorization server: issuer exact, PKCE
// S256, a registration endpoint.
func (r *run) serverMetadata(ctx context.Context) bool {
	issuer := r.server.Issuer
	m, err := signin.FetchServerMetadata(ctx, r.hc, issuer)
	if err == nil {
		err = m.CheckClientSupport()
	}
	self := issuer == r.base() || strings.HasPrefix(r.mcpURL, issuer+"/")
	switch {
	case err == nil:
	case errors.Is(err, signin.ErrNoRegistration) && !self:
		return r.fail(StepServer, fmt.Sprintf("the authorization server %s is not the gateway and offers no dynamic registration", issuer),
			"Turn on the gateway's sign-in (oauth.enabled: true, see docs/sign-in.md), so MCP clients sign in through the gateway instead of registering at the company IdP.")
	case errors.Is(err, signin.ErrIssuerMismatch):
		return r.fail(StepServer, err.Error(), "Set public_url in the gateway's configuration to the URL clients use: the issuer is derived from it.")
	case errors.Is(err, signin.ErrServerMetadata) && self:
		return r.fail(StepServer, err.Error(), "Turn on the gateway's sign-in (oauth.enabled: true, see docs/sign-in.md); it serves this metadata.")
	default:
		return r.fail(StepServer, err.Error(), "The authorization server named by the gateway must publish RFC 8414 metadata with PKCE S256 and a registration endpoint: turn on the gateway's sign-in (oauth.enabled: true).")
	}
	r.server = m
	return r.pass(StepServer, "issuer %s; PKCE S256; registration at %s", m.Issuer, m.RegistrationEndpoint)
}

// registration registers a throwaway client, as an MCP client does.
func (r *run) registration(ctx context.Context) bool {
	reg, err := signin.Register(ctx, r.hc, r.server.RegistrationEndpoint, "brainstem doctor (a throwaway check)", []string{signin.RegisteredRedirectURI})
	if err != nil {
		fix := "The gateway's log says why it refused (oauth: registration); it must accept loopback redirect URIs."
		if oe, ok := errors.AsType[*signin.OAuthError](err); ok && oe.Status == http.StatusTooManyRequests {
			fix = "Wait a minute: this address registered too many clients."
		}
		return r.fail(StepRegistration, err.Error(), fix)
	}
	r.clientID = reg.ClientID
	return r.pass(StepRegistration, "a throwaway client registered with redirect URI %s", signin.RegisteredRedirectURI)
}

var (
	paragraphRE = regexp.MustCompile(`(?s)<p>(.*?)</p>`)
	tagRE       = regexp.MustCompile(`<[^>]*>`)
)

// authorization sends a synthetic authorization request: the gateway must
// answer its consent page or send the browser on to the IdP, which it can
// only do once it reached the IdP.
func (r *run) authorization(ctx context.Context) bool {
	redirect := "http://127.0.0.1:1" + signin.CallbackPath
	areq := signin.NewAuthorizationRequest(r.clientID, redirect, r.mcpURL, r.scope)
	target, err := areq.URL(r.server.AuthorizationEndpoint)
	if err != nil {
		return r.fail(StepAuthorization, err.Error(), "The authorization endpoint in the metadata must be a URL.")
	}
	noFollow := *r.hc
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return r.fail(StepAuthorization, err.Error(), fixReach)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := noFollow.Do(req)
	if err != nil {
		return r.fail(StepAuthorization, "cannot reach "+r.server.AuthorizationEndpoint+": "+err.Error(), r.reachFix(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := ""
	if m := paragraphRE.FindSubmatch(body); m != nil {
		msg = html.UnescapeString(strings.TrimSpace(tagRE.ReplaceAllString(string(m[1]), "")))
	}
	switch {
	case resp.StatusCode == http.StatusOK && strings.Contains(string(body), `name="decision"`):
		return r.pass(StepAuthorization, "the consent page is shown: the gateway reached the company's identity provider")
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		loc, err := resp.Location()
		if err != nil {
			return r.fail(StepAuthorization, "a redirect without a usable Location", "The gateway's log says what failed.")
		}
		if strings.HasPrefix(loc.String(), redirect) {
			q := loc.Query()
			fix := "The gateway's log says why it refused the request (oauth: authorize)."
			if q.Get("error") == "invalid_target" {
				fix = fmt.Sprintf("Set public_url in the gateway's configuration to %s, the URL clients use.", r.base())
			}
			return r.fail(StepAuthorization, fmt.Sprintf("the request was refused: %s: %s", q.Get("error"), q.Get("error_description")), fix)
		}
		return r.pass(StepAuthorization, "the browser is sent on to the identity provider at %s://%s", loc.Scheme, loc.Host)
	case resp.StatusCode == http.StatusServiceUnavailable:
		return r.fail(StepAuthorization, fmt.Sprintf("the gateway cannot reach the company's identity provider (503: %s)", msg),
			"Check oauth.upstream.issuer and that the gateway can reach the identity provider (DNS, egress proxy, firewall); the gateway's log has the error.")
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	return r.fail(StepAuthorization, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg), "The gateway's log says why it refused the request (oauth: authorize).")
}

// challenge checks the MCP endpoint's answer to a request without a token.
func (r *run) challenge(ctx context.Context) {
	a, err := signin.FetchChallenge(ctx, r.hc, r.mcpURL, r.now)
	r.answer = a
	switch {
	case err != nil && a == nil:
		r.fail(StepChallenge, err.Error(), r.reachFix(err))
		return
	case err != nil:
		r.fail(StepChallenge, err.Error(), "The WWW-Authenticate header must parse (RFC 9110); a proxy in front of the gateway may be rewriting it.")
		return
	case a.Status != http.StatusUnauthorized:
		r.fail(StepChallenge, fmt.Sprintf("a request without a token was answered %d, not 401", a.Status),
			fmt.Sprintf("Make %s reach the gateway's MCP endpoint: whatever answers there now is not it.", r.mcpURL))
		return
	case a.Bearer == nil || a.ResourceMetadata == "":
		r.fail(StepChallenge, "the 401 carries no Bearer challenge with resource_metadata",
			"Make the proxy in front of the gateway pass the WWW-Authenticate header through: clients find the sign-in with it.")
		return
	}
	if a.ResourceMetadata != r.metaURL {
		if mu, err := url.Parse(a.ResourceMetadata); err != nil || !strings.EqualFold(mu.Scheme+"://"+mu.Host, r.u.Scheme+"://"+r.u.Host) {
			r.fail(StepChallenge, fmt.Sprintf("the challenge sends clients to %s, not to %s", a.ResourceMetadata, r.u.Scheme+"://"+r.u.Host),
				fmt.Sprintf("Set public_url in the gateway's configuration to %s, the URL clients use.", r.base()))
			return
		}
		if _, err := signin.FetchResourceMetadata(ctx, r.hc, a.ResourceMetadata, r.mcpURL); err != nil {
			r.fail(StepChallenge, fmt.Sprintf("resource_metadata %s does not describe %s: %v", a.ResourceMetadata, r.mcpURL, err),
				fmt.Sprintf("Set public_url in the gateway's configuration to %s, the URL clients use.", r.base()))
			return
		}
	}
	detail := "401 with resource_metadata " + a.ResourceMetadata
	if a.Scope != "" {
		detail += ", scope " + a.Scope
	}
	r.pass(StepChallenge, "%s", detail)
}

// tokenStep finds the token: --token, else the stored sign-in.
func (r *run) tokenStep(ctx context.Context) bool {
	if r.cfg.Token != "" {
		r.token = r.cfg.Token
		return r.pass(StepToken, "given with --token")
	}
	if r.cfg.SignIn == nil {
		return r.skip(StepToken, "no token: pass --token to check tools/list and brain_wings")
	}
	rec, err := r.cfg.SignIn.Token(ctx, r.mcpURL)
	switch {
	case errors.Is(err, signin.ErrNotSignedIn):
		return r.skip(StepToken, fmt.Sprintf("not signed in: run `brainstem login %s` (or pass --token) to check tools/list and brain_wings", r.mcpURL))
	case errors.Is(err, signin.ErrInsecureFile):
		return r.fail(StepToken, err.Error(), "Make the sign-in file private (chmod 600) or delete it and sign in again.")
	case err != nil:
		return r.fail(StepToken, err.Error(), fmt.Sprintf("Run `brainstem login %s` to sign in again.", r.mcpURL))
	}
	r.token = rec.AccessToken
	who := cmp.Or(rec.Email, "a user")
	return r.pass(StepToken, "the stored sign-in of %s, valid until %s", who, rec.ExpiresAt.Local().Format(time.RFC3339))
}

func (r *run) tokenFix(err error) string {
	if _, ok := errors.AsType[*join.TokenRefusedError](err); ok {
		if r.cfg.Token != "" {
			return fmt.Sprintf("Get a new token (or run `brainstem login %s` and drop --token): the gateway refused this one.", r.mcpURL)
		}
		return fmt.Sprintf("Run `brainstem login %s` to sign in again: the gateway refused the stored token.", r.mcpURL)
	}
	return "The gateway's log has the error (search for the request id)."
}

// tools lists the tools with the token, as an agent does first.
func (r *run) tools(ctx context.Context) bool {
	p, err := join.OpenProbe(ctx, r.hc, r.mcpURL, r.token)
	if err != nil {
		return r.fail(StepTools, err.Error(), r.tokenFix(err))
	}
	r.probe = p
	names, err := p.Tools(ctx)
	if err != nil {
		return r.fail(StepTools, err.Error(), r.tokenFix(err))
	}
	if len(names) == 0 {
		return r.fail(StepTools, "no tools", "Check that the gateway reaches its shards (brainstem_gateway_* metrics, /readyz).")
	}
	return r.pass(StepTools, "%d tools: %s", len(names), strings.Join(names, ", "))
}

// wings calls brain_wings.
func (r *run) wings(ctx context.Context) {
	w, err := r.probe.Wings(ctx)
	if err != nil {
		r.fail(StepWings, err.Error(), r.tokenFix(err))
		return
	}
	if len(w.Wings) == 0 {
		detail := "you are signed in but reach no wing"
		if len(w.Unavailable) > 0 {
			detail += fmt.Sprintf(" (%d unavailable)", len(w.Unavailable))
		}
		r.fail(StepWings, detail, "Ask the curators of the wing you need to admit you in its policy (readers, writers or curators).")
		return
	}
	detail := fmt.Sprintf("%d wings: %s", len(w.Wings), w)
	if len(w.Wings) == 1 {
		detail = fmt.Sprintf("1 wing: %s", w)
	}
	if len(w.Unavailable) > 0 {
		var names []string
		for _, u := range w.Unavailable {
			names = append(names, u.Wing)
		}
		detail += "; unavailable now: " + strings.Join(names, ", ")
	}
	r.pass(StepWings, "%s", detail)
}

// clock compares the gateway's Date header with this computer's clock at
// the middle of the request.
func (r *run) clock() {
	a := r.answer
	switch {
	case a == nil:
		r.skip(StepClock, "skipped: the gateway did not answer (see the 401 challenge above)")
		return
	case a.Date.IsZero():
		r.skip(StepClock, "skipped: the gateway sent no Date header")
		return
	}
	local := a.Sent.Add(a.Received.Sub(a.Sent) / 2)
	// Date has whole seconds: allow for the truncation.
	skew := a.Date.Sub(local.Truncate(time.Second))
	abs := skew.Abs()
	if abs <= r.cfg.MaxSkew {
		r.pass(StepClock, "this computer's clock is within %s of the gateway's", max(abs.Round(time.Second), time.Second))
		return
	}
	dir := "behind"
	if skew < 0 {
		dir = "ahead of"
	}
	r.fail(StepClock, fmt.Sprintf("this computer's clock is %s %s the gateway's", abs.Round(time.Second), dir),
		"Set this computer's clock right (turn on automatic time / NTP), or the gateway's if this one is right: sign-in pages, certificates and token expiry depend on it.")
}

// Err is nil when no step failed, else an error counting the failed steps
// (the exit status of `brainstem doctor`).
func (r *Report) Err() error {
	switch n := len(r.Failed()); n {
	case 0:
	case 1:
		return errors.New("doctor: 1 step failed")
	default:
		return fmt.Errorf("doctor: %d steps failed", n)
	}
	return nil
}
