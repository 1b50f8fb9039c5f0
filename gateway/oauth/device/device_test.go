package device

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/oauthtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// deviceApp registers a client for the device grant only at r.
func (e *testEnv) deviceApp(r *replica) string {
	e.t.Helper()
	st, out := e.Register(r, `{"client_name":"Device App","grant_types":["`+oauth.GrantTypeDevice+`","refresh_token"]}`)
	if st != http.StatusCreated {
		e.t.Fatalf("register: %d %v", st, out)
	}
	if fmt.Sprint(out["grant_types"]) != "[refresh_token "+oauth.GrantTypeDevice+"]" {
		e.t.Fatalf("registered grant types %v", out["grant_types"])
	}
	return out["client_id"].(string)
}

// postForm posts a form to r's path with a User-Agent.
func (e *testEnv) postForm(r *replica, path string, form url.Values, ua string) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", ua)
	return e.Post(path, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
}

// device starts a device request for clientID at r.
func (e *testEnv) device(r *replica, clientID string) map[string]any {
	e.t.Helper()
	st, out := e.postForm(r, PathAuthorization, url.Values{"client_id": {clientID}, "scope": {Scope}, "resource": {r.URL + "/mcp"}},
		"brainstem/test (login --device; host build-box-7; linux/amd64)")
	if st != http.StatusOK {
		e.t.Fatalf("device_authorization: %d %v", st, out)
	}
	return out
}

func poll(clientID string, dev map[string]any) url.Values {
	return url.Values{"grant_type": {oauth.GrantTypeDevice}, "device_code": {dev["device_code"].(string)}, "client_id": {clientID}}
}

// typeCode loads the verification page in b and submits code; it returns
// the answer (the approval page when the code is good).
func typeCode(t *testing.T, b *testbrowser.Browser, r *replica, code string) *testbrowser.Page {
	t.Helper()
	ctx := context.Background()
	p, err := b.Get(ctx, r.URL+PathPage)
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Form()
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Submit(ctx, p, f, map[string]string{"user_code": code}, "")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// approve types code, allows, and signs in at the IdP as email; it
// returns the last page (the result page).
func approve(t *testing.T, b *testbrowser.Browser, r *replica, code, email string) *testbrowser.Page {
	t.Helper()
	ctx := context.Background()
	p := typeCode(t, b, r, code)
	if p.Status != http.StatusOK || !strings.Contains(p.Body, `name="decision"`) {
		t.Fatalf("no approval page: %d %s", p.Status, testbrowser.Text(p.Body))
	}
	f, err := p.Form()
	if err != nil {
		t.Fatal(err)
	}
	if p, err = b.Submit(ctx, p, f, nil, "allow"); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Follow(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Body, `name="email"`) {
		t.Fatalf("no IdP login page: %d %s", p.Status, testbrowser.Text(p.Body))
	}
	if f, err = p.Form(); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Submit(ctx, p, f, map[string]string{"email": email}, ""); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Follow(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeviceFlow walks the device flow with a real HTTP client and the
// scripted browser: the request, polls before the approval (pending, and
// slow_down for a poll too soon), the code typed into the verification
// page, which names the client and the computer, the IdP login, then the
// tokens, which verify and refresh; the device code then is spent.
func TestDeviceFlow(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	id := e.deviceApp(r)
	dev := e.device(r, id)
	code := dev["user_code"].(string)
	if len(code) != 9 || code[4] != '-' {
		t.Fatalf("user code %q, want XXXX-XXXX", code)
	}
	if _, err := normalizeUserCode(code); err != nil {
		t.Fatalf("user code %q: %v", code, err)
	}
	if dev["verification_uri"] != r.URL+"/device" || dev["verification_uri_complete"] != r.URL+"/device?user_code="+code ||
		dev["expires_in"] != float64(600) || dev["interval"] != float64(5) {
		t.Fatalf("device answer %v", dev)
	}

	st, out := e.Token(r, poll(id, dev))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "authorization_pending")
	st, out = e.Token(r, poll(id, dev)) // at once: too soon
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "slow_down")
	e.Clock.Advance(5 * time.Second) // the interval is now 10 s: still too soon, now 15 s
	st, out = e.Token(r, poll(id, dev))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "slow_down")
	e.Clock.Advance(15 * time.Second)
	st, out = e.Token(r, poll(id, dev))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "authorization_pending")

	b := testbrowser.New()
	// verification_uri_complete fills the code in; the user still submits it.
	p, err := b.Get(context.Background(), dev["verification_uri_complete"].(string))
	if err != nil || !strings.Contains(p.Body, `value="`+code+`"`) {
		t.Fatalf("verification_uri_complete: %v %s", err, testbrowser.Text(p.Body))
	}
	page := typeCode(t, b, r, strings.ToLower(strings.ReplaceAll(code, "-", " ")))
	for _, want := range []string{"Device App", "127.0.0.1", "build-box-7", code, "started this sign-in yourself", "registered itself"} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("approval page lacks %q: %s", want, testbrowser.Text(page.Body))
		}
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, e.IdPURL) {
		t.Errorf("approval page CSP = %q", csp)
	}
	if page.Header.Get("X-Frame-Options") != "DENY" || page.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("approval page headers %v", page.Header)
	}

	done := approve(t, b, r, code, "Erin@Example.com")
	if done.Status != http.StatusOK || !strings.Contains(done.Body, "signed in as erin@example.com") {
		t.Fatalf("result page: %d %s", done.Status, testbrowser.Text(done.Body))
	}
	e.Clock.Advance(15 * time.Second)
	st, out = e.Token(r, poll(id, dev))
	if st != http.StatusOK || out["token_type"] != "Bearer" || out["refresh_token"] == nil {
		t.Fatalf("token: %d %v", st, out)
	}
	who, err := oauthtest.IdentityOf(t, r, out["access_token"].(string))
	if err != nil || who.Email != "erin@example.com" {
		t.Fatalf("access token: %+v %v", who, err)
	}
	st, out2 := e.Token(r, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {out["refresh_token"].(string)}, "client_id": {id}})
	if st != http.StatusOK || out2["access_token"] == out["access_token"] {
		t.Fatalf("refresh: %d %v", st, out2)
	}

	// Single use: the device code is spent, and the user code finds nothing.
	e.Clock.Advance(15 * time.Second)
	st, out = e.Token(r, poll(id, dev))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
	again := typeCode(t, testbrowser.New(), r, code)
	if again.Status != http.StatusBadRequest || !strings.Contains(again.Body, "No sign-in request has this code") {
		t.Fatalf("a used code: %d %s", again.Status, testbrowser.Text(again.Body))
	}
}

// TestDeviceRefusals: each way a device code or a user code is refused.
func TestDeviceRefusals(t *testing.T) {
	e := newEnv(t, 2, nil)
	r := e.Replicas[0]
	id := e.deviceApp(r)

	t.Run("expired", func(t *testing.T) {
		dev := e.device(r, id)
		e.Clock.Advance(DeviceCodeTTL + time.Second)
		st, out := e.Token(r, poll(id, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "expired_token")
		p := typeCode(t, testbrowser.New(), r, dev["user_code"].(string))
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "expired") {
			t.Fatalf("expired code at the page: %d %s", p.Status, testbrowser.Text(p.Body))
		}
	})
	t.Run("expired between the approval page and the answer", func(t *testing.T) {
		dev := e.device(r, id)
		b := testbrowser.New()
		p := typeCode(t, b, r, dev["user_code"].(string))
		f, err := p.Form()
		if err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(DeviceCodeTTL + time.Second)
		res, err := b.Submit(context.Background(), p, f, nil, "allow")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusBadRequest || res.Location != nil {
			t.Fatalf("got %d %v", res.Status, res.Location)
		}
	})
	t.Run("wrong code", func(t *testing.T) {
		e.device(r, id)
		p := typeCode(t, testbrowser.New(), r, "BCDF-GHJK")
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "No sign-in request has this code") {
			t.Fatalf("wrong code: %d %s", p.Status, testbrowser.Text(p.Body))
		}
	})
	t.Run("not a code", func(t *testing.T) {
		p := typeCode(t, testbrowser.New(), r, "AEIOU123")
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "That is not a code") {
			t.Fatalf("malformed code: %d %s", p.Status, testbrowser.Text(p.Body))
		}
	})
	t.Run("denied", func(t *testing.T) {
		dev := e.device(r, id)
		b := testbrowser.New()
		p := typeCode(t, b, r, dev["user_code"].(string))
		f, err := p.Form()
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Submit(context.Background(), p, f, nil, "deny")
		if err != nil || res.Status != http.StatusOK || !strings.Contains(res.Body, "Denied") {
			t.Fatalf("deny: %v %d", err, res.Status)
		}
		st, out := e.Token(r, poll(id, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "access_denied")
		// The answer is used once: the same approval form cannot allow now.
		res, err = b.Submit(context.Background(), p, f, nil, "allow")
		if err != nil || res.Status < 400 || res.Location != nil {
			t.Fatalf("allow after deny: %v %d %v", err, res.Status, res.Location)
		}
	})
	t.Run("approved twice", func(t *testing.T) {
		// Two browsers hold the approval page; the second allow is refused.
		dev := e.device(r, id)
		code := dev["user_code"].(string)
		b1, b2 := testbrowser.New(), testbrowser.New()
		p1, p2 := typeCode(t, b1, r, code), typeCode(t, b2, r, code)
		f1, _ := p1.Form()
		f2, _ := p2.Form()
		if res, err := b1.Submit(context.Background(), p1, f1, nil, "allow"); err != nil || res.Location == nil {
			t.Fatalf("first allow: %v", err)
		}
		res, err := b2.Submit(context.Background(), p2, f2, nil, "allow")
		if err != nil || res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "already used") {
			t.Fatalf("second allow: %v %d %s", err, res.Status, testbrowser.Text(res.Body))
		}
	})
	t.Run("another client's device code", func(t *testing.T) {
		dev := e.device(r, id)
		other := e.deviceApp(r)
		st, out := e.Token(r, poll(other, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("tampered device code", func(t *testing.T) {
		dev := e.device(r, id)
		dev["device_code"] = dev["device_code"].(string) + "A"
		st, out := e.Token(r, poll(id, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
	})
	t.Run("at another replica", func(t *testing.T) {
		dev := e.device(r, id)
		st, out := e.Token(e.Replicas[1], poll(id, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
		if !strings.Contains(out["error_description"].(string), "another replica") {
			t.Errorf("description %v", out["error_description"])
		}
	})
	t.Run("client without the device grant", func(t *testing.T) {
		a := e.RegisteredApp(r)
		st, out := e.postForm(r, PathAuthorization, url.Values{"client_id": {a.ID}}, "x")
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "unauthorized_client")
	})
	t.Run("code flow for a device-only client", func(t *testing.T) {
		a := oauthtest.NewApp(id, "http://127.0.0.1:43210/callback")
		p, err := testbrowser.New().Get(context.Background(), a.AuthorizeURL(r, nil))
		if err != nil || p.Status != http.StatusBadRequest || p.Location != nil {
			t.Fatalf("authorize with a device-only client: %v %d", err, p.Status)
		}
	})
	t.Run("code form from another browser", func(t *testing.T) {
		dev := e.device(r, id)
		ctx := context.Background()
		p, err := testbrowser.New().Get(ctx, r.URL+PathPage)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := p.Form()
		res, err := testbrowser.New().Submit(ctx, p, f, map[string]string{"user_code": dev["user_code"].(string)}, "")
		if err != nil || res.Status != http.StatusForbidden {
			t.Fatalf("got %v %d", err, res.Status)
		}
	})
	t.Run("cross-site post", func(t *testing.T) {
		dev := e.device(r, id)
		ctx := context.Background()
		b := testbrowser.New()
		p, err := b.Get(ctx, r.URL+PathPage)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := p.Form()
		evil := *p
		evil.URL, _ = url.Parse("https://evil.example/page")
		res, err := b.Submit(ctx, &evil, f, map[string]string{"user_code": dev["user_code"].(string)}, "")
		if err != nil || res.Status != http.StatusForbidden {
			t.Fatalf("got %v %d", err, res.Status)
		}
	})
	t.Run("slow_down adds 5 s each time", func(t *testing.T) {
		dev := e.device(r, id)
		e.Token(r, poll(id, dev))
		for want := 10; want <= 20; want += 5 {
			st, out := e.Token(r, poll(id, dev))
			oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "slow_down")
			if !strings.Contains(out["error_description"].(string), fmt.Sprintf("wait %d seconds", want)) {
				t.Fatalf("slow_down %v, want an interval of %d s", out["error_description"], want)
			}
		}
		e.Clock.Advance(20 * time.Second)
		st, out := e.Token(r, poll(id, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "authorization_pending")
	})
}

// TestDeviceRateLimits: user codes tried per address on the verification
// page, and device requests per address, are bounded; a refused attempt
// changes nothing.
func TestDeviceRateLimits(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	id := e.deviceApp(r)
	dev := e.device(r, id)
	for i := 1; i < deviceAuthPerMin; i++ {
		e.device(r, id)
	}
	st, out := e.postForm(r, PathAuthorization, url.Values{"client_id": {id}}, "x")
	oauthtest.WantTokenError(t, st, out, http.StatusTooManyRequests, "temporarily_unavailable")

	b := testbrowser.New()
	for i := range deviceVerifyPerMin {
		if p := typeCode(t, b, r, "BCDF-GHJK"); p.Status != http.StatusBadRequest {
			t.Fatalf("attempt %d: %d", i, p.Status)
		}
	}
	// Over the budget even the right code is refused, and stays pending.
	p := typeCode(t, b, r, dev["user_code"].(string))
	if p.Status != http.StatusTooManyRequests || p.Header.Get("Retry-After") == "" {
		t.Fatalf("over the budget: %d %s", p.Status, testbrowser.Text(p.Body))
	}
	e.Clock.Advance(time.Minute)
	if p := typeCode(t, b, r, dev["user_code"].(string)); p.Status != http.StatusOK {
		t.Fatalf("a minute later: %d %s", p.Status, testbrowser.Text(p.Body))
	}
}

// TestDevicePollRateLimit: polls from one address over the per-minute
// budget get slow_down whatever the device code, and change nothing.
func TestDevicePollRateLimit(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	id := e.deviceApp(r)
	var devs []map[string]any
	for i := range devicePollPerMin + 1 {
		if i > 0 && i%deviceAuthPerMin == 0 {
			e.Clock.Advance(time.Minute) // the device request budget
		}
		devs = append(devs, e.device(r, id))
	}
	for i, d := range devs[:devicePollPerMin] {
		st, out := e.Token(r, poll(id, d))
		if st != http.StatusBadRequest || out["error"] != "authorization_pending" {
			t.Fatalf("poll %d: %d %v", i, st, out)
		}
	}
	last := devs[devicePollPerMin]
	st, out := e.Token(r, poll(id, last))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "slow_down")
	if !strings.Contains(out["error_description"].(string), "too many attempts") {
		t.Errorf("description %v", out["error_description"])
	}
	e.Clock.Advance(time.Minute)
	st, out = e.Token(r, poll(id, last))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "authorization_pending")
}

// TestDeviceAttackList runs testdata/device.txt: inputs of the device
// endpoints that must each be refused with the named error.
func TestDeviceAttackList(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	id := e.deviceApp(r)
	codeApp := e.RegisteredApp(r)
	dev := e.device(r, id)
	expand := strings.NewReplacer("$DEVICE_CLIENT", url.QueryEscape(id), "$CODE_CLIENT", url.QueryEscape(codeApp.ID),
		"$DEVICE_CODE", url.QueryEscape(dev["device_code"].(string)), "$MCP", url.QueryEscape(r.URL+"/mcp"))
	f, err := os.Open("testdata/device.txt")
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
		kind, rest, _ := strings.Cut(line, " ")
		want, input, _ := strings.Cut(rest, " ")
		t.Run(fmt.Sprintf("%d %s", n, line), func(t *testing.T) {
			switch kind {
			case "user_code":
				e.Clock.Advance(time.Minute / deviceVerifyPerMin) // within the page's budget
				if c, err := normalizeUserCode(input); err == nil && devOf(r).devices.byUserCode(c) != nil {
					t.Fatalf("%q finds a request", input)
				}
				p := typeCode(t, testbrowser.New(), r, input)
				if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, want) {
					t.Fatalf("got %d %s", p.Status, testbrowser.Text(p.Body))
				}
			case "device_authorization", "token":
				path := PathAuthorization
				if kind == "token" {
					path = PathToken
				}
				req, err := http.NewRequest(http.MethodPost, r.URL+path, strings.NewReader(expand.Replace(input)))
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
			default:
				t.Fatalf("unknown kind %q", kind)
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d attack lines read", n)
	}
	// Nothing refused changed the real request: never polled, interval
	// untouched, still pending and found by its code.
	uc, _ := normalizeUserCode(dev["user_code"].(string))
	g := devOf(r).devices.byUserCode(uc)
	if g == nil {
		t.Fatal("the genuine request is gone")
	}
	devOf(r).devices.update(g, func(g *deviceGrant) {
		if g.status != devicePending || !g.lastPoll.IsZero() || g.interval != DevicePollInterval {
			t.Errorf("the genuine request changed: status %d, last poll %v, interval %v", g.status, g.lastPoll, g.interval)
		}
	})
	e.Clock.Advance(time.Minute)
	st, out := e.Token(r, poll(id, dev))
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "authorization_pending")
}

// TestUserCodes: user codes are drawn from the alphabet, read back
// whatever the case, dashes and spaces, and nothing else is read.
func TestUserCodes(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c := newUserCode()
		if n, err := normalizeUserCode(formatUserCode(c)); err != nil || n != c {
			t.Fatalf("%q: %q %v", c, n, err)
		}
		seen[c] = true
	}
	if len(seen) < 999 {
		t.Errorf("%d distinct codes of 1000", len(seen))
	}
	for in, want := range map[string]string{"bcdf-ghjk": "BCDFGHJK", " BCDF GHJK ": "BCDFGHJK", "BcDfGhJk": "BCDFGHJK"} {
		if got, err := normalizeUserCode(in); err != nil || got != want {
			t.Errorf("%q → %q %v", in, got, err)
		}
	}
}

// TestLookupUserCodeErrors: each refusal of a typed code is its named error.
func TestLookupUserCodeErrors(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	id := e.deviceApp(r)
	dev := e.device(r, id)
	now := e.Clock.Now()
	for _, tc := range []struct {
		typed string
		at    time.Time
		want  error
	}{
		{"BCDF", now, ErrUserCodeFormat},
		{"AAAA-AAAA", now, ErrUserCodeFormat},
		{strings.Repeat("B", 33), now, ErrUserCodeFormat},
		{"BCDF-GHJK", now, ErrUserCodeUnknown},
		{dev["user_code"].(string), now.Add(DeviceCodeTTL + time.Second), ErrDeviceExpired},
		{dev["user_code"].(string), now, nil},
	} {
		if _, err := devOf(r).lookupUserCode(tc.typed, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.typed, err, tc.want)
		}
	}
}

// TestDeviceMetadataDocumentClient: a client ID metadata document that
// lists the device grant may start device sign-ins; one that does not may
// not.
func TestDeviceMetadataDocumentClient(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	ln, base := oauthtest.Listen(t)
	mux := http.NewServeMux()
	for _, p := range []struct{ path, grants string }{{"/device.json", `["` + oauth.GrantTypeDevice + `"]`}, {"/code.json", `["authorization_code"]`}} {
		mux.HandleFunc(p.path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"client_id":%q,"client_name":"Doc App","redirect_uris":["http://127.0.0.1/callback"],"grant_types":%s}`, base+p.path, p.grants)
		})
	}
	oauthtest.Serve(t, ln, mux)
	dev := e.device(r, base+"/device.json")
	b := testbrowser.New()
	page := typeCode(t, b, r, dev["user_code"].(string))
	if !strings.Contains(page.Body, "Doc App") || !strings.Contains(page.Body, ln.Addr().String()) || strings.Contains(page.Body, "registered itself") {
		t.Fatalf("approval page: %s", testbrowser.Text(page.Body))
	}
	st, out := e.postForm(r, PathAuthorization, url.Values{"client_id": {base + "/code.json"}}, "x")
	oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "unauthorized_client")
}

// TestDeviceStoreBounds: expired requests are dropped, a full store of live
// requests refuses new ones (ErrDeviceFull) and forgets none.
func TestDeviceStoreBounds(t *testing.T) {
	d := newDeviceStore()
	now := time.Unix(1e9, 0)
	add := func(at time.Time) error {
		for {
			g := &deviceGrant{id: oauth.RandomString(16), userCode: newUserCode(), created: at, exp: at.Add(DeviceCodeTTL)}
			if err := d.add(g, at); !errors.Is(err, errUserCodeTaken) {
				return err
			}
		}
	}
	if err := add(now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(DeviceCodeTTL + time.Minute)
	if err := add(later); err != nil || len(d.byID) != 1 || len(d.byCode) != 1 {
		t.Fatalf("the expired request was kept: %v, %d held", err, len(d.byID))
	}
	for len(d.byID) < MaxDeviceGrants {
		if err := add(later); err != nil {
			t.Fatal(err)
		}
	}
	if err := add(later.Add(time.Minute)); !errors.Is(err, ErrDeviceFull) || len(d.byID) != MaxDeviceGrants {
		t.Fatalf("full store: %v, %d held", err, len(d.byID))
	}
}

func TestMetadata(t *testing.T) {
	e := newEnv(t, 1, nil)
	r := e.Replicas[0]
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		resp, err := http.Get(r.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
		want := map[string]any{
			"issuer": r.URL, "authorization_endpoint": r.URL + "/authorize", "token_endpoint": r.URL + "/token",
			"registration_endpoint": r.URL + "/register", "revocation_endpoint": r.URL + "/revoke", "jwks_uri": r.URL + "/jwks",
			"client_id_metadata_document_supported": true, "device_authorization_endpoint": r.URL + "/device_authorization",
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %v", path, k, m[k], v)
			}
		}
		for k, v := range map[string]string{
			"response_types_supported": "code", "code_challenge_methods_supported": "S256",
			"token_endpoint_auth_methods_supported": "none", "scopes_supported": "mcp",
		} {
			if fmt.Sprint(m[k]) != "["+v+"]" {
				t.Errorf("%s: %s = %v, want [%s]", path, k, m[k], v)
			}
		}
		if fmt.Sprint(m["grant_types_supported"]) != "[authorization_code refresh_token "+oauth.GrantTypeDevice+"]" {
			t.Errorf("grant_types_supported = %v", m["grant_types_supported"])
		}
	}
}
