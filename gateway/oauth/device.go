package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/auth"
)

// The device authorization grant (RFC 8628), for clients on a computer
// without a browser (an SSH host, a dev container): the client asks for a
// device code and a short user code; the user types the user code into
// the verification page in any browser, sees which client on which
// computer asks, approves, and signs in at the IdP as in the code flow;
// the client polls the token endpoint until the approval arrives.
//
// The device code is sealed, so any replica recognises a genuine one and
// its client; the pairing of the user code with the device code, and the
// approval, are held in the memory of the replica that issued the codes
// (docs/decisions.md, "Device flow"): the verification page and the
// client's polls must reach that replica.

// GrantTypeDevice is the device authorization grant type.
const GrantTypeDevice = "urn:ietf:params:oauth:grant-type:device_code"

// Defaults and limits of the device flow.
const (
	// DeviceCodeTTL is the lifetime of a device code and its user code.
	DeviceCodeTTL = 10 * time.Minute
	// DevicePollInterval is the polling interval a client starts with; each
	// poll too soon adds deviceSlowDown to it (RFC 8628 §3.5).
	DevicePollInterval = 5 * time.Second
	deviceSlowDown     = 5 * time.Second
	// MaxDeviceGrants bounds the device requests one replica holds at once;
	// beyond it new requests are refused (never an older one forgotten).
	MaxDeviceGrants = 10000
	// UserCodeLength is the number of characters of a user code, shown as
	// two groups of four (BCDF-GHJK).
	UserCodeLength = 8
	// userCodeAlphabet has no vowels (no words) and no look-alikes
	// (RFC 8628 §6.1): 20^8 ≈ 2^34.6 codes.
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	// MaxComputerBytes bounds the client's description of its computer.
	MaxComputerBytes = 120
	// Per-address budgets, per minute: device requests, user codes tried
	// on the verification page, and polls.
	deviceAuthPerMin   = 20
	deviceVerifyPerMin = 10
	devicePollPerMin   = 120
	// devicePrefix starts every device code.
	devicePrefix       = "bsd1."
	maxDeviceCodeBytes = 1 << 10
)

// Sealing purposes of the device flow.
const (
	purposeDeviceCode    = "device code"
	purposeDeviceForm    = "device form"
	purposeDeviceApprove = "device approval"
)

// cookieDeviceCSRF is the CSRF cookie of the verification page's forms.
const cookieDeviceCSRF = "brainstem-device-csrf"

// Named errors of the device flow, as the token endpoint and the
// verification page report them.
var (
	// ErrUserCodeFormat: the typed code is not eight letters of the code
	// alphabet (dashes and spaces aside).
	ErrUserCodeFormat = errors.New("oauth: the code must be 8 letters, like BCDF-GHJK")
	// ErrUserCodeUnknown: no pending request has this code on this replica.
	ErrUserCodeUnknown = errors.New("oauth: no sign-in request has this code")
	// ErrUserCodeUsed: the request of this code was already approved or denied.
	ErrUserCodeUsed = errors.New("oauth: this code was already used")
	// ErrDeviceExpired: the request expired (DeviceCodeTTL).
	ErrDeviceExpired = errors.New("oauth: the sign-in request expired")
	// ErrDeviceRate: too many attempts from one address.
	ErrDeviceRate = errors.New("oauth: too many attempts from your address")
	// ErrDeviceFull: the replica holds MaxDeviceGrants requests.
	ErrDeviceFull = errors.New("oauth: too many sign-in requests are pending")
)

// deviceStatus is where a device request stands.
type deviceStatus int

const (
	devicePending   deviceStatus = iota // waiting for the user
	deviceApproving                     // the user allowed; the IdP login is under way
	deviceApproved                      // signed in; the next poll gets the tokens
	deviceDenied                        // the user (or the IdP) refused
	deviceRedeemed                      // the tokens were issued
)

// deviceGrant is one device request, held by the replica that issued it.
type deviceGrant struct {
	id       string
	userCode string // normalised: 8 letters, no dash
	clientID string
	client   Client
	ip       string // the requesting address
	computer string // the client's description of itself (User-Agent)
	created  time.Time
	exp      time.Time

	// guarded by deviceStore.mu
	status   deviceStatus
	interval time.Duration
	lastPoll time.Time
	sid      string // the login that is approving it
	identity auth.Identity
	email    string // who approved, for the page
	upRefr   string // the IdP's refresh token, until redeemed
	reason   string // why it was denied
}

// deviceStore holds a replica's device requests by id and by user code.
type deviceStore struct {
	mu        sync.Mutex
	byID      map[string]*deviceGrant
	byCode    map[string]*deviceGrant // digest of the user code → request
	lastPurge time.Time
}

func newDeviceStore() *deviceStore {
	return &deviceStore{byID: map[string]*deviceGrant{}, byCode: map[string]*deviceGrant{}}
}

// add stores g, dropping expired requests first at most once a minute
// (and whenever the store is full); ErrDeviceFull when it is full of live
// ones.
func (d *deviceStore) add(g *deviceGrant, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byID) >= MaxDeviceGrants || now.Sub(d.lastPurge) >= time.Minute {
		d.lastPurge = now
		for id, old := range d.byID {
			if now.After(old.exp) {
				delete(d.byID, id)
				delete(d.byCode, userCodeKey(old.userCode))
			}
		}
	}
	if len(d.byID) >= MaxDeviceGrants {
		return ErrDeviceFull
	}
	if _, taken := d.byCode[userCodeKey(g.userCode)]; taken {
		return errUserCodeTaken
	}
	d.byID[g.id] = g
	d.byCode[userCodeKey(g.userCode)] = g
	return nil
}

var errUserCodeTaken = errors.New("oauth: user code collision")

// byUserCode finds a request by its (normalised) user code: the map is
// keyed by a digest, and the code itself is compared in constant time.
func (d *deviceStore) byUserCode(code string) *deviceGrant {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.byCode[userCodeKey(code)]
	if g == nil || subtle.ConstantTimeCompare([]byte(g.userCode), []byte(code)) != 1 {
		return nil
	}
	return g
}

func (d *deviceStore) get(id string) *deviceGrant {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byID[id]
}

// update runs f on the request under the store's lock.
func (d *deviceStore) update(g *deviceGrant, f func(*deviceGrant)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(g)
	if g.status != devicePending {
		// Single use: once answered, the user code finds nothing.
		delete(d.byCode, userCodeKey(g.userCode))
	}
}

func userCodeKey(code string) string { return digest("user code", code) }

// newUserCode draws a user code uniformly from the alphabet.
func newUserCode() string {
	b := make([]byte, UserCodeLength)
	for i := range b {
		// 256 is not a multiple of 20: redraw the top 16 values.
		for {
			var c [1]byte
			_, _ = rand.Read(c[:])
			if c[0] < 240 {
				b[i] = userCodeAlphabet[int(c[0])%len(userCodeAlphabet)]
				break
			}
		}
	}
	return string(b)
}

// normalizeUserCode reads a typed user code: case, dashes and spaces do
// not matter; anything else must be one of the alphabet's letters.
func normalizeUserCode(s string) (string, error) {
	if len(s) > 32 {
		return "", ErrUserCodeFormat
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '-' || r == ' ':
			continue
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		}
		if r > 0x7f || !strings.ContainsRune(userCodeAlphabet, r) {
			return "", ErrUserCodeFormat
		}
		b.WriteRune(r)
	}
	if b.Len() != UserCodeLength {
		return "", ErrUserCodeFormat
	}
	return b.String(), nil
}

// formatUserCode shows a code as XXXX-XXXX.
func formatUserCode(c string) string {
	if len(c) != UserCodeLength {
		return c
	}
	return c[:4] + "-" + c[4:]
}

// deviceCodeState is a device code: which request, for which client.
type deviceCodeState struct {
	ID     string `json:"i"`
	Client string `json:"c"` // digest of the client id
	Exp    int64  `json:"e"`
	Holder string `json:"h,omitempty"` // the issuing replica's peer address (peers.go)
}

// deviceResponse is RFC 8628 §3.2.
type deviceResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// serveDeviceAuthorization is POST /device_authorization (RFC 8628 §3.1).
func (s *Server) serveDeviceAuthorization(w http.ResponseWriter, r *http.Request) {
	body, terr := s.deviceAuthorization(w, r)
	if terr != nil {
		s.count("device_authorization", "refused")
		s.writeTokenError(w, terr)
		return
	}
	s.count("device_authorization", "ok")
	writeJSONValue(w, http.StatusOK, body)
}

func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request) (*deviceResponse, *tokenError) {
	if !s.allow(r, "device_authorization", deviceAuthPerMin) {
		return nil, &tokenError{http.StatusTooManyRequests, "temporarily_unavailable", ErrDeviceRate.Error() + "; try again in a minute", time.Minute}
	}
	form, clientID, terr := s.tokenForm(w, r)
	if terr != nil {
		return nil, terr
	}
	if sc, ok := form["scope"]; ok && sc[0] != Scope {
		return nil, &tokenError{http.StatusBadRequest, "invalid_scope", "the only scope is " + Scope, 0}
	}
	if res, ok := form["resource"]; ok && !s.isResource(res[0]) {
		return nil, &tokenError{http.StatusBadRequest, "invalid_target", "resource must be the MCP endpoint " + s.resource, 0}
	}
	client, err := s.deviceClient(r.Context(), r, clientID)
	if err != nil {
		return nil, &tokenError{http.StatusBadRequest, "unauthorized_client", err.Error(), 0}
	}
	now := s.now()
	g := &deviceGrant{
		id: randomString(16), clientID: clientID, client: *client, ip: s.clientIP(r),
		computer: describeComputer(r.UserAgent()), created: now, exp: now.Add(DeviceCodeTTL),
		interval: DevicePollInterval,
	}
	for range 3 {
		g.userCode = newUserCode()
		if err = s.devices.add(g, now); !errors.Is(err, errUserCodeTaken) {
			break
		}
	}
	if err != nil {
		s.log.Warn("oauth: device request refused", "err", err)
		return nil, &tokenError{http.StatusServiceUnavailable, "temporarily_unavailable", ErrDeviceFull.Error() + "; try again shortly", 30 * time.Second}
	}
	sealed, err := s.keys.seal(purposeDeviceCode, deviceCodeState{ID: g.id, Client: digest(clientID), Exp: g.exp.Unix(), Holder: s.holder()})
	if err != nil {
		return nil, &tokenError{http.StatusInternalServerError, "server_error", "internal error", 0}
	}
	s.log.Info("oauth: device sign-in requested", "client", clientLabel(clientID), "client_ip", g.ip, "computer", g.computer)
	verify := s.issuer + PathDevice
	return &deviceResponse{
		DeviceCode: devicePrefix + sealed, UserCode: formatUserCode(g.userCode),
		VerificationURI: verify, VerificationURIComplete: verify + "?user_code=" + formatUserCode(g.userCode),
		ExpiresIn: int64(DeviceCodeTTL / time.Second), Interval: int64(DevicePollInterval / time.Second),
	}, nil
}

// deviceClient resolves a client that may use the device grant.
func (s *Server) deviceClient(ctx context.Context, r *http.Request, clientID string) (*Client, error) {
	var client *Client
	var err error
	switch {
	case isMetadataURL(clientID) && s.meta == nil:
		return nil, errors.New("this gateway does not accept client metadata documents")
	case isMetadataURL(clientID):
		client, err = s.meta.client(ctx, s, clientID, func() bool { return s.allow(r, "metadata", metadataPerMin) })
	default:
		client, err = s.parseRegisteredClient(clientID)
	}
	if err != nil {
		return nil, fmt.Errorf("the client cannot be used: %w", err)
	}
	if !client.Device {
		return nil, fmt.Errorf("the client did not register the grant type %s", GrantTypeDevice)
	}
	return client, nil
}

// describeComputer is what the approval page says of the requesting
// program: its User-Agent, printable ASCII, clipped. The client chose it,
// so the page presents it as the program's claim.
func describeComputer(ua string) string {
	ua = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, ua)
	ua = strings.TrimSpace(ua)
	if len(ua) > MaxComputerBytes {
		ua = ua[:MaxComputerBytes] + "…"
	}
	return ua
}

// openDeviceCode opens a device code (without its prefix check failing,
// ok is false).
func (s *Server) openDeviceCode(form url.Values) (dc deviceCodeState, ok bool) {
	raw, ok := strings.CutPrefix(form.Get("device_code"), devicePrefix)
	return dc, ok && s.keys.open(purposeDeviceCode, raw, maxDeviceCodeBytes, &dc) == nil
}

// passDevicePoll passes a poll of a device request another replica holds
// to that replica, and reports whether it answered.
func (s *Server) passDevicePoll(w http.ResponseWriter, r *http.Request, form url.Values) bool {
	dc, ok := s.openDeviceCode(form)
	if !ok || !s.elsewhere(r, dc.Holder) || s.devices.get(dc.ID) != nil {
		return false
	}
	return s.forward(w, r, dc.Holder, []byte(form.Encode()))
}

// redeemDevice is the token endpoint's device_code grant (RFC 8628 §3.4).
func (s *Server) redeemDevice(r *http.Request, form url.Values, clientID string) ([]byte, *tokenError) {
	dc, ok := s.openDeviceCode(form)
	if !ok {
		return nil, invalidGrant("the device code is not valid")
	}
	now := s.now()
	switch {
	case subtle.ConstantTimeCompare([]byte(dc.Client), []byte(digest(clientID))) != 1:
		return nil, invalidGrant("the device code was issued to another client")
	case now.Unix() > dc.Exp:
		return nil, &tokenError{http.StatusBadRequest, "expired_token", "the device code expired; start the sign-in again", 0}
	}
	if !s.allow(r, "device_poll", devicePollPerMin) {
		return nil, &tokenError{http.StatusBadRequest, "slow_down", ErrDeviceRate.Error() + " (polling)", 0}
	}
	g := s.devices.get(dc.ID)
	switch {
	case g == nil && s.elsewhere(r, dc.Holder):
		return nil, invalidGrant("%s; start the sign-in again", ErrPeerUnreachable.Error())
	case g == nil:
		return nil, invalidGrant("this gateway replica holds no such device request (made at another replica, or before a restart); start the sign-in again")
	}
	var (
		terr *tokenError
		id   auth.Identity
		upRT string
	)
	s.devices.update(g, func(g *deviceGrant) {
		if !g.lastPoll.IsZero() && now.Sub(g.lastPoll) < g.interval {
			g.interval += deviceSlowDown
			g.lastPoll = now
			terr = &tokenError{http.StatusBadRequest, "slow_down", fmt.Sprintf("polling too fast; wait %d seconds between polls", int(g.interval/time.Second)), 0}
			return
		}
		g.lastPoll = now
		switch g.status {
		case devicePending, deviceApproving:
			terr = &tokenError{http.StatusBadRequest, "authorization_pending", "the user has not approved the request yet", 0}
		case deviceDenied:
			terr = &tokenError{http.StatusBadRequest, "access_denied", "the request was denied" + g.reason, 0}
		case deviceRedeemed:
			terr = invalidGrant("the device code was already used")
		case deviceApproved:
			g.status = deviceRedeemed
			id, upRT = g.identity, g.upRefr
			g.upRefr = ""
		}
	})
	if terr != nil {
		return nil, terr
	}
	return s.issue(id, clientID, upRT, randomString(16), now.Add(s.cfg.RefreshTokenTTL).Unix(), "device_code")
}

// deviceForm is the sealed token of the code entry form.
type deviceForm struct {
	CSRF string `json:"x"`
	Exp  int64  `json:"e"`
}

// deviceApproval is the sealed token of the approval form.
type deviceApproval struct {
	ID     string `json:"i"`
	CSRF   string `json:"x"`
	Exp    int64  `json:"e"`
	Holder string `json:"h,omitempty"` // the replica holding the request (peers.go)
}

// serveDevicePage is GET /device: the form to type the user code in,
// filled in from ?user_code= (verification_uri_complete); the user still
// submits it and then sees the approval page.
func (s *Server) serveDevicePage(w http.ResponseWriter, r *http.Request) {
	prefill := ""
	if q := r.URL.Query()["user_code"]; len(q) == 1 {
		if c, err := normalizeUserCode(q[0]); err == nil {
			prefill = formatUserCode(c)
		}
	}
	s.count("device_page", "ok")
	s.renderCodeForm(w, http.StatusOK, prefill, "")
}

// renderCodeForm shows the code entry form with a fresh CSRF token.
func (s *Server) renderCodeForm(w http.ResponseWriter, status int, prefill, problem string) {
	f := deviceForm{CSRF: randomString(16), Exp: s.now().Add(LoginTTL).Unix()}
	sealed, err := s.keys.seal(purposeDeviceForm, f)
	if err != nil {
		s.serverError(w, err)
		return
	}
	s.setCookie(w, cookieDeviceCSRF, f.CSRF, LoginTTL, http.SameSiteStrictMode)
	s.renderPage(w, status, deviceCodePage, deviceCodeData{
		Gateway: s.issuer, Action: s.issuer + PathDevice, Token: sealed, Code: prefill, Problem: problem,
	})
}

// serveDeviceForm is POST /device: a typed code (step=code) or the
// approval page's answer (step=approve).
func (s *Server) serveDeviceForm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "Invalid answer", "The form could not be read.")
		return
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			s.count("device_page", "refused")
			s.errorPageFor(w, http.StatusBadRequest, "Invalid answer", fmt.Sprintf("The field %q appears more than once.", k))
			return
		}
	}
	if !s.sameOrigin(r) {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusForbidden, "Invalid answer", "The form was not submitted from this gateway's own page.")
		return
	}
	switch r.PostForm.Get("step") {
	case "code":
		s.deviceCodeStep(w, r)
	case "approve":
		s.deviceApproveStep(w, r)
	default:
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "Invalid answer", "The form's step is neither code nor approve.")
	}
}

// csrfMatches compares the form's CSRF value with the page's cookie.
func (s *Server) csrfMatches(r *http.Request, cookie, want string) bool {
	got := s.cookie(r, cookie)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *Server) deviceCodeStep(w http.ResponseWriter, r *http.Request) {
	var f deviceForm
	if err := s.keys.open(purposeDeviceForm, r.PostForm.Get("token"), 4<<10, &f); err != nil || s.now().Unix() > f.Exp {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "This page has expired", "The page is older than "+human(LoginTTL)+" or was altered. Load it again.")
		return
	}
	if !s.csrfMatches(r, cookieDeviceCSRF, f.CSRF) {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusForbidden, "Invalid answer", "The form does not belong to this browser. Load the page again.")
		return
	}
	if !s.allow(r, "device_verify", deviceVerifyPerMin) {
		s.count("device_page", "refused")
		w.Header().Set("Retry-After", "60")
		s.errorPageFor(w, http.StatusTooManyRequests, "Too many codes tried", "Too many codes were tried from your address. Wait a minute and try again.")
		return
	}
	g, err := s.lookupUserCode(r.PostForm.Get("user_code"), s.now())
	if errors.Is(err, ErrUserCodeUnknown) && s.mayPass(r) {
		// Perhaps another replica issued it.
		code, _ := normalizeUserCode(r.PostForm.Get("user_code"))
		if peer := s.findHolder(r.Context(), code); peer != "" && s.forward(w, r, peer, []byte(r.PostForm.Encode())) {
			return
		}
	}
	if err != nil {
		s.count("device_page", "refused")
		s.renderCodeForm(w, http.StatusBadRequest, "", userCodeProblem(err))
		return
	}
	now := s.now()
	a := deviceApproval{ID: g.id, CSRF: randomString(16), Exp: s.now().Add(LoginTTL).Unix(), Holder: s.holder()}
	sealed, err := s.keys.seal(purposeDeviceApprove, a)
	if err != nil {
		s.serverError(w, err)
		return
	}
	// The IdP is discovered before the page, whose CSP must name its origin.
	if _, err := s.up.discovered(r.Context()); err != nil {
		s.count("device_page", "unavailable")
		s.unavailablePage(w, err)
		return
	}
	s.setCookie(w, cookieDeviceCSRF, a.CSRF, LoginTTL, http.SameSiteStrictMode)
	name := g.client.Name
	if name == "" {
		name = "An unnamed application"
	}
	computer := g.computer
	if computer == "" {
		computer = "(it gave no description)"
	}
	s.count("device_page", "approve")
	s.renderPage(w, http.StatusOK, deviceApprovePage, deviceApproveData{
		Name: name, ClientID: clientLabelLong(g.clientID), Gateway: s.issuer, Dynamic: g.client.Dynamic,
		MetadataHost: g.client.MetadataHost, IP: g.ip, YourIP: s.clientIP(r), Computer: computer,
		Age: human(max(now.Sub(g.created).Truncate(time.Second), time.Second)), Code: formatUserCode(g.userCode),
		TokenTTL: human(s.cfg.AccessTokenTTL), RefreshTTL: human(s.cfg.RefreshTokenTTL),
		Action: s.issuer + PathDevice, Token: sealed,
	}, s.up.origin())
}

// lookupUserCode finds the pending request of a typed code:
// ErrUserCodeFormat, ErrUserCodeUnknown (also once used: a used code finds
// nothing) or ErrDeviceExpired otherwise.
func (s *Server) lookupUserCode(typed string, now time.Time) (*deviceGrant, error) {
	code, err := normalizeUserCode(typed)
	if err != nil {
		return nil, err
	}
	g := s.devices.byUserCode(code)
	switch {
	case g == nil:
		return nil, ErrUserCodeUnknown
	case now.After(g.exp):
		return nil, ErrDeviceExpired
	}
	return g, nil
}

// userCodeProblem is what the code entry page says of a refused code.
func userCodeProblem(err error) string {
	switch {
	case errors.Is(err, ErrUserCodeFormat):
		return "That is not a code: a code is 8 letters, like BCDF-GHJK."
	case errors.Is(err, ErrDeviceExpired):
		return "This code has expired. Start the sign-in again on your device."
	}
	return "No sign-in request has this code. Check the code your device shows, or start again there (codes work once, for " + human(DeviceCodeTTL) + ")."
}

// clientLabelLong names a client on the approval page: a metadata
// document's URL, or the start of a registered id.
func clientLabelLong(id string) string {
	if isMetadataURL(id) || len(id) <= 24 {
		return id
	}
	return id[:24] + "…"
}

func (s *Server) deviceApproveStep(w http.ResponseWriter, r *http.Request) {
	var a deviceApproval
	if err := s.keys.open(purposeDeviceApprove, r.PostForm.Get("token"), 4<<10, &a); err != nil || s.now().Unix() > a.Exp {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "This page has expired", "The approval page is older than "+human(LoginTTL)+" or was altered.")
		return
	}
	if !s.csrfMatches(r, cookieDeviceCSRF, a.CSRF) {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusForbidden, "Invalid answer", "The approval does not belong to this browser. Type the code again.")
		return
	}
	if s.elsewhere(r, a.Holder) && s.devices.get(a.ID) == nil && s.forward(w, r, a.Holder, []byte(r.PostForm.Encode())) {
		return
	}
	decision := r.PostForm.Get("decision")
	if decision != "allow" && decision != "deny" {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "Invalid answer", "The answer is neither allow nor deny.")
		return
	}
	s.setCookie(w, cookieDeviceCSRF, "", -1, http.SameSiteStrictMode)
	g := s.devices.get(a.ID)
	now := s.now()
	sid := randomString(16)
	var problem string
	if g == nil {
		problem = "The sign-in request is gone. Start again on your device."
	} else {
		s.devices.update(g, func(g *deviceGrant) {
			switch {
			case now.After(g.exp):
				problem = userCodeProblem(ErrDeviceExpired)
			case g.status != devicePending:
				problem = "This code was already used (" + ErrUserCodeUsed.Error() + ")."
			case decision == "deny":
				g.status, g.reason = deviceDenied, " by the user"
			default:
				g.status, g.sid = deviceApproving, sid
			}
		})
	}
	if problem != "" {
		s.count("device_page", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "This code cannot be used", problem)
		return
	}
	if decision == "deny" {
		s.count("device_page", "denied")
		s.log.Info("oauth: device sign-in denied", "client", clientLabel(g.clientID), "client_ip", g.ip)
		s.renderPage(w, http.StatusOK, deviceDonePage, deviceDoneData{Title: "Denied",
			Message: "The device gets nothing. If you did not start this sign-in yourself, someone may be trying to get you to approve theirs: tell your security team."})
		return
	}
	s.count("device_page", "ok")
	s.sendToIdP(w, r, loginState{SID: sid, Device: g.id, Holder: s.holder(), Verifier: randomString(32), Nonce: randomString(16),
		Exp: now.Add(LoginTTL).Unix()})
}

// finishDevice completes a device approval at the IdP's callback: the
// IdP's code is redeemed here, the identity verified, and the request
// marked approved for the client's next poll.
func (s *Server) finishDevice(w http.ResponseWriter, r *http.Request, ls loginState) {
	g := s.devices.get(ls.Device)
	mine := false
	if g != nil {
		s.devices.update(g, func(g *deviceGrant) { mine = g.sid == ls.SID })
	}
	if !mine {
		s.count("callback", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "This sign-in request is gone", "Start the sign-in again on your device.")
		return
	}
	deny := func(status int, title, msg, reason string) {
		s.devices.update(g, func(g *deviceGrant) {
			if g.status == deviceApproving && g.sid == ls.SID {
				g.status, g.reason = deviceDenied, reason
			}
		})
		s.count("callback", "refused")
		s.errorPageFor(w, status, title, msg)
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		deny(http.StatusForbidden, "Your company sign-in refused", "The identity provider refused the sign-in ("+clipText(e, 60)+"). The device gets nothing.", " by the identity provider")
		return
	}
	upCode := q.Get("code")
	if upCode == "" || len(upCode) > 4096 {
		deny(http.StatusBadRequest, "Invalid sign-in answer", "The identity provider's answer carries no usable code.", ": the identity provider's answer was unusable")
		return
	}
	tok, err := s.up.exchange(r.Context(), upCode, ls.Verifier)
	if err != nil {
		terr := s.upstreamFailure(err)
		if errors.Is(err, ErrUpstreamRefused) {
			terr = invalidGrant("the identity provider refused its code")
		}
		deny(terr.status, "Your company sign-in failed", "The gateway could not complete the sign-in: "+terr.description+".", ": "+terr.description)
		return
	}
	id, terr := s.identify(r.Context(), tok, ls.Nonce)
	if terr != nil {
		deny(http.StatusForbidden, "You cannot sign in", terr.description, ": "+terr.description)
		return
	}
	ok := false
	s.devices.update(g, func(g *deviceGrant) {
		if g.status == deviceApproving && g.sid == ls.SID && !s.now().After(g.exp) {
			g.status, g.identity, g.upRefr, g.email, ok = deviceApproved, id, tok.RefreshToken, id.Email, true
		}
	})
	if !ok {
		s.count("callback", "refused")
		s.errorPageFor(w, http.StatusBadRequest, "This sign-in request expired", "Start the sign-in again on your device.")
		return
	}
	s.count("callback", "ok")
	s.log.Info("oauth: device sign-in approved", "email", id.Email, "client", clientLabel(g.clientID), "client_ip", g.ip)
	s.renderPage(w, http.StatusOK, deviceDonePage, deviceDoneData{Title: "Approved",
		Message: "You are signed in as " + id.Email + ". Return to your device: it continues within a few seconds. You can close this window."})
}

// clipText shortens s for a page and drops control characters.
func clipText(s string, n int) string {
	s = describeComputer(s)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
