package device

import (
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/clients"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
	"github.com/brainstem/brainstem/gateway/oauth/pages"
	"github.com/brainstem/brainstem/gateway/oauth/upstream"
	"github.com/brainstem/brainstem/signin"
)

// Paths below the issuer's path.
const (
	// PathAuthorization is the RFC 8628 device authorization endpoint.
	PathAuthorization = "/device_authorization"
	// PathPage is the device flow's verification page.
	PathPage = "/device"
)

// Grant is the device authorization grant of one replica: the requests
// it issued, and its channel to the other replicas (peers.go).
type Grant struct {
	srv        *oauth.Server
	devices    *deviceStore
	peers      *Peers                        // the other replicas; nil without
	peerNonces *lru.Cache[string, time.Time] // peer requests seen → until they expire
}

// New makes the device grant of srv. peers, when set, lets a device
// sign-in started at one replica complete through any other (peers.go);
// nil keeps each one on the replica that issued it.
func New(srv *oauth.Server, peers *Peers) (*Grant, error) {
	g := &Grant{srv: srv, devices: newDeviceStore()}
	if peers != nil {
		if peers.Self == "" || peers.List == nil {
			return nil, errors.New("oauth: peers need this replica's address and a way to list the others")
		}
		pc := *peers
		pc.Client = cmp.Or(pc.Client, &http.Client{Timeout: peerTimeout})
		g.peers = &pc
	}
	var err error
	if g.peerNonces, err = lru.New[string, time.Time](peerNoncesRemembered); err != nil {
		return nil, fmt.Errorf("oauth: device: %w", err)
	}
	return g, nil
}

// GrantType is the device code grant type.
func (s *Grant) GrantType() string { return oauth.GrantTypeDevice }

// Advertise names the device authorization endpoint.
func (s *Grant) Advertise(m map[string]any) bool {
	m["device_authorization_endpoint"] = s.srv.Issuer() + PathAuthorization
	return true
}

// Register adds the device authorization endpoint and the verification
// page.
func (s *Grant) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+s.srv.Base()+PathPage, s.serveDevicePage)
	mux.HandleFunc("POST "+s.srv.Base()+PathPage, s.serveDeviceForm)
	oauth.HandleCORS(mux, s.srv.Base()+PathAuthorization, s.serveDeviceAuthorization)
}

// Redeem is the token endpoint's device_code grant: a poll of a request
// another replica holds is passed there.
func (s *Grant) Redeem(w http.ResponseWriter, r *http.Request, form url.Values) ([]byte, string, *oauth.TokenError) {
	clientID, terr := s.srv.TokenClient(r, form)
	if terr != nil {
		s.srv.RefuseToken(w, "token", terr)
		return nil, "", nil
	}
	if s.passDevicePoll(w, r, form) {
		return nil, "", nil
	}
	body, terr := s.redeemDevice(r, form, clientID)
	return body, "token_device_code", terr
}

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
	client   oauth.Client
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

func userCodeKey(code string) string { return keyring.Digest("user code", code) }

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

// serveDeviceAuthorization is POST /device_authorization (RFC 8628 §3.1).
func (s *Grant) serveDeviceAuthorization(w http.ResponseWriter, r *http.Request) {
	body, terr := s.deviceAuthorization(w, r)
	if terr != nil {
		s.srv.RefuseToken(w, "device_authorization", terr)
		return
	}
	s.srv.Count("device_authorization", "ok")
	oauth.WriteJSON(w, http.StatusOK, body)
}

// deviceAuthorization answers with the RFC 8628 §3.2 shape the sign-in
// client reads (signin.DeviceAuthorization).
func (s *Grant) deviceAuthorization(w http.ResponseWriter, r *http.Request) (*signin.DeviceAuthorization, *oauth.TokenError) {
	if !s.srv.Allow(r, "device_authorization", deviceAuthPerMin) {
		return nil, oauth.NewTokenError(http.StatusTooManyRequests, "temporarily_unavailable", ErrDeviceRate.Error()+"; try again in a minute", time.Minute)
	}
	form, clientID, terr := s.srv.TokenForm(w, r)
	if terr != nil {
		return nil, terr
	}
	if sc, ok := form["scope"]; ok && sc[0] != oauth.Scope {
		return nil, oauth.NewTokenError(http.StatusBadRequest, "invalid_scope", "the only scope is "+oauth.Scope, 0)
	}
	if res, ok := form["resource"]; ok && !s.srv.IsResource(res[0]) {
		return nil, oauth.NewTokenError(http.StatusBadRequest, "invalid_target", "resource must be the MCP endpoint "+s.srv.Resource(), 0)
	}
	client, err := s.deviceClient(r, clientID)
	if err != nil {
		return nil, oauth.NewTokenError(http.StatusBadRequest, "unauthorized_client", err.Error(), 0)
	}
	now := s.srv.Now()
	g := &deviceGrant{id: oauth.RandomString(16), clientID: clientID, client: *client, ip: s.srv.ClientIP(r),
		computer: describeComputer(r.UserAgent()), created: now, exp: now.Add(DeviceCodeTTL), interval: DevicePollInterval}
	for range 3 {
		g.userCode = newUserCode()
		if err = s.devices.add(g, now); !errors.Is(err, errUserCodeTaken) {
			break
		}
	}
	if err != nil {
		s.srv.Log().Warn("oauth: device request refused", "err", err)
		return nil, oauth.NewTokenError(http.StatusServiceUnavailable, "temporarily_unavailable", ErrDeviceFull.Error()+"; try again shortly", 30*time.Second)
	}
	sealed, err := s.srv.Seal(purposeDeviceCode, deviceCodeState{ID: g.id, Client: keyring.Digest(clientID), Exp: g.exp.Unix(), Holder: s.holder()})
	if err != nil {
		return nil, oauth.ErrInternal()
	}
	s.srv.Log().Info("oauth: device sign-in requested", "client", oauth.ClientLabel(clientID), "client_ip", g.ip, "computer", g.computer)
	verify := s.srv.Issuer() + PathPage
	return &signin.DeviceAuthorization{
		DeviceCode: devicePrefix + sealed, UserCode: formatUserCode(g.userCode),
		VerificationURI: verify, VerificationURIComplete: verify + "?user_code=" + formatUserCode(g.userCode),
		ExpiresIn: int64(DeviceCodeTTL / time.Second), Interval: int64(DevicePollInterval / time.Second),
	}, nil
}

// deviceClient resolves a client that may use the device grant.
func (s *Grant) deviceClient(r *http.Request, clientID string) (*oauth.Client, error) {
	client, err := s.srv.ResolveClient(r, clientID)
	if errors.Is(err, oauth.ErrNoMetadataDocuments) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("the client cannot be used: %w", err)
	}
	if !client.Device {
		return nil, fmt.Errorf("the client did not register the grant type %s", oauth.GrantTypeDevice)
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
func (s *Grant) openDeviceCode(form url.Values) (dc deviceCodeState, ok bool) {
	raw, ok := strings.CutPrefix(form.Get("device_code"), devicePrefix)
	return dc, ok && s.srv.Open(purposeDeviceCode, raw, maxDeviceCodeBytes, &dc) == nil
}

// passDevicePoll passes a poll of a device request another replica holds
// to that replica, and reports whether it answered.
func (s *Grant) passDevicePoll(w http.ResponseWriter, r *http.Request, form url.Values) bool {
	dc, ok := s.openDeviceCode(form)
	if !ok || !s.elsewhere(r, dc.Holder) || s.devices.get(dc.ID) != nil {
		return false
	}
	return s.forward(w, r, dc.Holder, []byte(form.Encode()))
}

// redeemDevice is the token endpoint's device_code grant (RFC 8628 §3.4).
func (s *Grant) redeemDevice(r *http.Request, form url.Values, clientID string) ([]byte, *oauth.TokenError) {
	dc, ok := s.openDeviceCode(form)
	if !ok {
		return nil, oauth.InvalidGrant("the device code is not valid")
	}
	now := s.srv.Now()
	switch {
	case !keyring.IsDigest(dc.Client, clientID):
		return nil, oauth.InvalidGrant("the device code was issued to another client")
	case now.Unix() > dc.Exp:
		return nil, oauth.NewTokenError(http.StatusBadRequest, "expired_token", "the device code expired; start the sign-in again", 0)
	}
	if !s.srv.Allow(r, "device_poll", devicePollPerMin) {
		return nil, oauth.NewTokenError(http.StatusBadRequest, "slow_down", ErrDeviceRate.Error()+" (polling)", 0)
	}
	g := s.devices.get(dc.ID)
	switch {
	case g == nil && s.elsewhere(r, dc.Holder):
		return nil, oauth.InvalidGrant("%s; start the sign-in again", ErrPeerUnreachable.Error())
	case g == nil:
		return nil, oauth.InvalidGrant("this gateway replica holds no such device request (made at another replica, or before a restart); start the sign-in again")
	}
	var (
		terr *oauth.TokenError
		id   auth.Identity
		upRT string
	)
	s.devices.update(g, func(g *deviceGrant) {
		if !g.lastPoll.IsZero() && now.Sub(g.lastPoll) < g.interval {
			g.interval += deviceSlowDown
			g.lastPoll = now
			terr = oauth.NewTokenError(http.StatusBadRequest, "slow_down", fmt.Sprintf("polling too fast; wait %d seconds between polls", int(g.interval/time.Second)), 0)
			return
		}
		g.lastPoll = now
		switch g.status {
		case devicePending, deviceApproving:
			terr = oauth.NewTokenError(http.StatusBadRequest, "authorization_pending", "the user has not approved the request yet", 0)
		case deviceDenied:
			terr = oauth.NewTokenError(http.StatusBadRequest, "access_denied", "the request was denied"+g.reason, 0)
		case deviceRedeemed:
			terr = oauth.InvalidGrant("the device code was already used")
		case deviceApproved:
			g.status = deviceRedeemed
			id, upRT = g.identity, g.upRefr
			g.upRefr = ""
		}
	})
	if terr != nil {
		return nil, terr
	}
	return s.srv.Issue(id, clientID, upRT, oauth.RandomString(16), now.Add(s.srv.Config().RefreshTokenTTL).Unix(), "device_code")
}

// deviceForm is the sealed token of the code entry form, and what the
// approval form's holds too: the CSRF value of the page's cookie, and when
// the form expires.
type deviceForm struct {
	CSRF string `json:"x"`
	Exp  int64  `json:"e"`
}

// deviceApproval is the sealed token of the approval form.
type deviceApproval struct {
	ID string `json:"i"`
	deviceForm
	Holder string `json:"h,omitempty"` // the replica holding the request (peers.go)
}

// newDeviceForm is a form's fresh CSRF value and expiry.
func (s *Grant) newDeviceForm() deviceForm {
	return deviceForm{CSRF: oauth.RandomString(16), Exp: s.srv.Now().Add(config.LoginTTL).Unix()}
}

// serveDevicePage is GET /device: the form to type the user code in,
// filled in from ?user_code= (verification_uri_complete); the user still
// submits it and then sees the approval page.
func (s *Grant) serveDevicePage(w http.ResponseWriter, r *http.Request) {
	prefill := ""
	if q := r.URL.Query()["user_code"]; len(q) == 1 {
		if c, err := normalizeUserCode(q[0]); err == nil {
			prefill = formatUserCode(c)
		}
	}
	s.srv.Count("device_page", "ok")
	s.renderCodeForm(w, http.StatusOK, prefill, "")
}

// renderCodeForm shows the code entry form with a fresh CSRF token.
func (s *Grant) renderCodeForm(w http.ResponseWriter, status int, prefill, problem string) {
	f := s.newDeviceForm()
	sealed, err := s.srv.Seal(purposeDeviceForm, f)
	if err != nil {
		s.srv.ServerError(w, err)
		return
	}
	s.srv.SetCookie(w, cookieDeviceCSRF, f.CSRF, config.LoginTTL, http.SameSiteStrictMode)
	s.srv.RenderPage(w, status, pages.DeviceCode, pages.DeviceCodeData{
		Gateway: s.srv.Issuer(), Action: s.srv.Issuer() + PathPage, Token: sealed, Code: prefill, Problem: problem})
}

// serveDeviceForm is POST /device: a typed code (step=code) or the
// approval page's answer (step=approve).
func (s *Grant) serveDeviceForm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, oauth.MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.srv.RefusePage(w, "device_page", http.StatusBadRequest, "Invalid answer", "The form could not be read.")
		return
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			s.srv.RefusePage(w, "device_page", http.StatusBadRequest, "Invalid answer", fmt.Sprintf("The field %q appears more than once.", k))
			return
		}
	}
	if !s.srv.SameOrigin(r) {
		s.srv.RefusePage(w, "device_page", http.StatusForbidden, "Invalid answer", "The form was not submitted from this gateway's own page.")
		return
	}
	switch r.PostForm.Get("step") {
	case "code":
		s.deviceCodeStep(w, r)
	case "approve":
		s.deviceApproveStep(w, r)
	default:
		s.srv.RefusePage(w, "device_page", http.StatusBadRequest, "Invalid answer", "The form's step is neither code nor approve.")
	}
}

// openForm opens the posted form's sealed token into v, whose deviceForm is
// f, and checks that it has not expired and belongs to this browser (its
// CSRF value is the page's cookie's). Otherwise it refuses the page, saying
// expired or foreign, and returns false.
func (s *Grant) openForm(w http.ResponseWriter, r *http.Request, purpose string, v any, f *deviceForm, expired, foreign string) bool {
	if err := s.srv.Open(purpose, r.PostForm.Get("token"), 4<<10, v); err != nil || s.srv.Now().Unix() > f.Exp {
		s.srv.RefusePage(w, "device_page", http.StatusBadRequest, "This page has expired", expired)
		return false
	}
	if got := s.srv.Cookie(r, cookieDeviceCSRF); got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(f.CSRF)) != 1 {
		s.srv.RefusePage(w, "device_page", http.StatusForbidden, "Invalid answer", foreign)
		return false
	}
	return true
}

func (s *Grant) deviceCodeStep(w http.ResponseWriter, r *http.Request) {
	var f deviceForm
	if !s.openForm(w, r, purposeDeviceForm, &f, &f, "The page is older than "+pages.Human(config.LoginTTL)+" or was altered. Load it again.",
		"The form does not belong to this browser. Load the page again.") {
		return
	}
	if !s.srv.Allow(r, "device_verify", deviceVerifyPerMin) {
		w.Header().Set("Retry-After", "60")
		s.srv.RefusePage(w, "device_page", http.StatusTooManyRequests, "Too many codes tried", "Too many codes were tried from your address. Wait a minute and try again.")
		return
	}
	g, err := s.lookupUserCode(r.PostForm.Get("user_code"), s.srv.Now())
	if errors.Is(err, ErrUserCodeUnknown) && s.mayPass(r) {
		// Perhaps another replica issued it.
		code, _ := normalizeUserCode(r.PostForm.Get("user_code"))
		if peer := s.findHolder(r.Context(), code); peer != "" && s.forward(w, r, peer, []byte(r.PostForm.Encode())) {
			return
		}
	}
	if err != nil {
		s.srv.Count("device_page", "refused")
		s.renderCodeForm(w, http.StatusBadRequest, "", userCodeProblem(err))
		return
	}
	now := s.srv.Now()
	a := deviceApproval{ID: g.id, deviceForm: s.newDeviceForm(), Holder: s.holder()}
	sealed, err := s.srv.Seal(purposeDeviceApprove, a)
	if err != nil {
		s.srv.ServerError(w, err)
		return
	}
	// The IdP is discovered before the page, whose CSP must name its origin.
	if err := s.srv.DiscoverIdP(r.Context()); err != nil {
		s.srv.Count("device_page", "unavailable")
		s.srv.UnavailablePage(w, err)
		return
	}
	s.srv.SetCookie(w, cookieDeviceCSRF, a.CSRF, config.LoginTTL, http.SameSiteStrictMode)
	name := cmp.Or(g.client.Name, "An unnamed application")
	computer := cmp.Or(g.computer, "(it gave no description)")
	s.srv.Count("device_page", "approve")
	s.srv.RenderPage(w, http.StatusOK, pages.DeviceApprove, pages.DeviceApproveData{
		Name: name, ClientID: clientLabelLong(g.clientID), Gateway: s.srv.Issuer(), Dynamic: g.client.Dynamic,
		MetadataHost: g.client.MetadataHost, IP: g.ip, YourIP: s.srv.ClientIP(r), Computer: computer,
		Age: pages.Human(max(now.Sub(g.created).Truncate(time.Second), time.Second)), Code: formatUserCode(g.userCode),
		TokenTTL: pages.Human(s.srv.Config().AccessTokenTTL), RefreshTTL: pages.Human(s.srv.Config().RefreshTokenTTL),
		Action: s.srv.Issuer() + PathPage, Token: sealed}, s.srv.IdPOrigin())
}

// lookupUserCode finds the pending request of a typed code:
// ErrUserCodeFormat, ErrUserCodeUnknown (also once used: a used code finds
// nothing) or ErrDeviceExpired otherwise.
func (s *Grant) lookupUserCode(typed string, now time.Time) (*deviceGrant, error) {
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
	return "No sign-in request has this code. Check the code your device shows, or start again there (codes work once, for " + pages.Human(DeviceCodeTTL) + ")."
}

// clientLabelLong names a client on the approval page: a metadata
// document's URL, or the start of a registered id.
func clientLabelLong(id string) string {
	if clients.IsMetadataURL(id) || len(id) <= 24 {
		return id
	}
	return id[:24] + "…"
}

func (s *Grant) deviceApproveStep(w http.ResponseWriter, r *http.Request) {
	var a deviceApproval
	if !s.openForm(w, r, purposeDeviceApprove, &a, &a.deviceForm, "The approval page is older than "+pages.Human(config.LoginTTL)+" or was altered.",
		"The approval does not belong to this browser. Type the code again.") {
		return
	}
	if s.elsewhere(r, a.Holder) && s.devices.get(a.ID) == nil && s.forward(w, r, a.Holder, []byte(r.PostForm.Encode())) {
		return
	}
	decision := r.PostForm.Get("decision")
	if decision != "allow" && decision != "deny" {
		s.srv.RefusePage(w, "device_page", http.StatusBadRequest, "Invalid answer", "The answer is neither allow nor deny.")
		return
	}
	s.srv.SetCookie(w, cookieDeviceCSRF, "", -1, http.SameSiteStrictMode)
	g := s.devices.get(a.ID)
	now := s.srv.Now()
	sid := oauth.RandomString(16)
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
		s.srv.RefusePage(w, "device_page", http.StatusBadRequest, "This code cannot be used", problem)
		return
	}
	if decision == "deny" {
		s.srv.Count("device_page", "denied")
		s.srv.Log().Info("oauth: device sign-in denied", "client", oauth.ClientLabel(g.clientID), "client_ip", g.ip)
		s.srv.RenderPage(w, http.StatusOK, pages.DeviceDone, pages.DeviceDoneData{Title: "Denied",
			Message: "The device gets nothing. If you did not start this sign-in yourself, someone may be trying to get you to approve theirs: tell your security team."})
		return
	}
	s.srv.Count("device_page", "ok")
	s.srv.SendToIdP(w, r, oauth.Login{SID: sid, Request: g.id, Holder: s.holder(), Verifier: oauth.RandomString(32), Nonce: oauth.RandomString(16),
		Exp: now.Add(config.LoginTTL).Unix()})
}

// FinishLogin is the IdP's callback of a device approval: passed to the
// replica holding the request when it is another, finished here
// otherwise.
func (s *Grant) FinishLogin(w http.ResponseWriter, r *http.Request, ls oauth.Login) {
	if s.elsewhere(r, ls.Holder) && s.devices.get(ls.Request) == nil && s.forward(w, r, ls.Holder, nil) {
		return // a device approval another replica holds: finished there
	}
	if s.srv.EndLogin(w, r, ls) {
		s.finishDevice(w, r, ls)
	}
}

// finishDevice completes a device approval at the IdP's callback: the
// IdP's code is redeemed here, the identity verified, and the request
// marked approved for the client's next poll.
func (s *Grant) finishDevice(w http.ResponseWriter, r *http.Request, ls oauth.Login) {
	g := s.devices.get(ls.Request)
	mine := false
	if g != nil {
		s.devices.update(g, func(g *deviceGrant) { mine = g.sid == ls.SID })
	}
	if !mine {
		s.srv.Count("callback", "refused")
		s.srv.ErrorPage(w, http.StatusBadRequest, "This sign-in request is gone", "Start the sign-in again on your device.")
		return
	}
	deny := func(status int, title, msg, reason string) {
		s.devices.update(g, func(g *deviceGrant) {
			if g.status == deviceApproving && g.sid == ls.SID {
				g.status, g.reason = deviceDenied, reason
			}
		})
		s.srv.Count("callback", "refused")
		s.srv.ErrorPage(w, status, title, msg)
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
	tok, err := s.srv.Exchange(r.Context(), upCode, ls.Verifier)
	if err != nil {
		terr := s.srv.UpstreamFailure(err)
		if errors.Is(err, upstream.ErrRefused) {
			terr = oauth.InvalidGrant("the identity provider refused its code")
		}
		deny(terr.Status, "Your company sign-in failed", "The gateway could not complete the sign-in: "+terr.Description+".", ": "+terr.Description)
		return
	}
	id, terr := s.srv.Identify(r.Context(), tok, ls.Nonce)
	if terr != nil {
		deny(http.StatusForbidden, "You cannot sign in", terr.Description, ": "+terr.Description)
		return
	}
	ok := false
	s.devices.update(g, func(g *deviceGrant) {
		if g.status == deviceApproving && g.sid == ls.SID && !s.srv.Now().After(g.exp) {
			g.status, g.identity, g.upRefr, g.email, ok = deviceApproved, id, tok.RefreshToken, id.Email, true
		}
	})
	if !ok {
		s.srv.Count("callback", "refused")
		s.srv.ErrorPage(w, http.StatusBadRequest, "This sign-in request expired", "Start the sign-in again on your device.")
		return
	}
	s.srv.Count("callback", "ok")
	s.srv.Log().Info("oauth: device sign-in approved", "email", id.Email, "client", oauth.ClientLabel(g.clientID), "client_ip", g.ip)
	s.srv.RenderPage(w, http.StatusOK, pages.DeviceDone, pages.DeviceDoneData{Title: "Approved",
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
