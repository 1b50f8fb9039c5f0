package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// signedIn is one sign-in at the gateway: its client, access and refresh
// tokens.
type signedIn struct{ client, access, refresh string }

// signInFull is signInHTTP keeping the refresh token and the client id.
func signInFull(t *testing.T, base, email string) signedIn {
	t.Helper()
	resp, err := http.Post(base+"/register", "application/json", strings.NewReader(`{"client_name":"t","redirect_uris":["http://127.0.0.1/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	err = jsonDecode(resp.Body, &reg)
	resp.Body.Close()
	if err != nil || reg.ClientID == "" {
		t.Fatalf("register: %v", err)
	}
	verifier, _ := transport.GenerateCodeVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {"http://127.0.0.1:43210/cb"},
		"code_challenge": {transport.GenerateCodeChallenge(verifier)}, "code_challenge_method": {"S256"}, "resource": {base + "/mcp"}}
	back, err := testbrowser.New().SignIn(context.Background(), base+"/authorize?"+q.Encode(), func(u *url.URL) bool { return u.Port() == "43210" }, email, "")
	if err != nil {
		t.Fatal(err)
	}
	st, tok := postRefresh(t, base, url.Values{"grant_type": {"authorization_code"}, "code": {back.Location.Query().Get("code")},
		"client_id": {reg.ClientID}, "redirect_uri": {"http://127.0.0.1:43210/cb"}, "code_verifier": {verifier}, "resource": {base + "/mcp"}})
	if st != http.StatusOK || tok["access_token"] == "" || tok["refresh_token"] == "" {
		t.Fatalf("token: %d %v", st, tok)
	}
	return signedIn{client: reg.ClientID, access: tok["access_token"], refresh: tok["refresh_token"]}
}

func postRefresh(t *testing.T, base string, form url.Values) (int, map[string]string) {
	t.Helper()
	resp, err := http.PostForm(base+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = jsonDecode(resp.Body, &out)
	m := map[string]string{}
	for k, v := range out {
		if s, ok := v.(string); ok {
			m[k] = s
		}
	}
	return resp.StatusCode, m
}

// mcpStatus is the status of a tools/list with token at base.
func mcpStatus(t *testing.T, base, token string) int {
	t.Helper()
	resp, _ := rawPost(t, base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer " + token})
	return resp.StatusCode
}

// replicaPair is two gateway replicas sharing the signing key, the ended
// sign-ins file and the operator token, behind a round-robin proxy.
type replicaPair struct {
	e        *testEnv
	base     string   // the proxy
	backends []string // each replica's public base
	admins   []string // each replica's admin base
	gws      []*Gateway
	file     string
	admin    offboard.Admin
}

func startReplicaPair(t *testing.T) *replicaPair {
	t.Helper()
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	dir := t.TempDir()
	p := &replicaPair{e: e, file: filepath.Join(dir, "ended.yaml")}
	if err := os.WriteFile(p.file, []byte("ended: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	p.admin.Token = hex.EncodeToString(b)
	tokFile := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(tokFile, []byte(p.admin.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.base = "http://" + pl.Addr().String()
	key := filepath.Join(dir, "oauth.pem")
	var backends []*url.URL
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.config([]config.WingConfig{{Name: "payments", Address: e.shards["payments"].addr, ServerName: "localhost"}}, p.base)
		withOAuth(t, e.idp, &cfg, key)
		cfg.Signins = config.SigninsConfig{EndedFile: p.file, AdminTokenFile: tokFile}
		gw := e.startGatewayOn(ln, cfg, Options{})
		adm := httptest.NewServer(gw.AdminHandler())
		t.Cleanup(adm.Close)
		u, _ := url.Parse("http://" + ln.Addr().String())
		backends = append(backends, u)
		p.backends = append(p.backends, u.String())
		p.admins = append(p.admins, adm.URL)
		p.gws = append(p.gws, gw)
	}
	roundRobin(t, pl, backends)
	return p
}

// waitEnded waits, polling each replica's admin endpoint until it enforces
// an entry for email (the readiness signal), at most until deadline.
func (p *replicaPair) waitEnded(t *testing.T, email string, deadline time.Time) {
	t.Helper()
	for i, a := range p.admins {
		for {
			reps, _, err := p.admin.List(context.Background(), []string{a}, email)
			if err == nil && len(reps) == 1 && len(reps[0].Ended) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d does not enforce the entry for %s by the deadline: %v %+v", i, email, err, reps)
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline, not a wait for a duration
		}
	}
}

// grantKeysOf lists the grant cache keys of email on gw.
func grantKeysOf(gw *Gateway, email string) int {
	n := 0
	for _, k := range gw.grants.Keys() {
		if e, _, _ := strings.Cut(string(k), "\x00"); e == email {
			n++
		}
	}
	return n
}

// TestOffboardingTwoReplicas: issue 21's acceptance for offboarding. Two
// replicas behind a round-robin proxy share the ended sign-ins file (as
// both mount one ConfigMap) and nothing else. The operator lists alice's
// sign-ins, then ends them by adding her to the file; within 5 s neither
// replica accepts her access token or her refresh token, her cached
// sessions are dropped, bob is untouched, and a new sign-in of alice
// works. Then carol's sign-ins are ended through the admin endpoints
// (brainstem signins end without the file): at once on both.
func TestOffboardingTwoReplicas(t *testing.T) {
	p := startReplicaPair(t)
	ctx := context.Background()
	alice := signInFull(t, p.base, "alice@acme.com")
	bob := signInFull(t, p.base, "bob@acme.com")
	idpToken := p.e.idp.token(t, "alice@acme.com") // the IdP's own token, accepted at /mcp too
	for _, b := range p.backends {
		for _, tok := range []string{alice.access, bob.access} {
			if text, isErr := call(t, newMCPClient(t, b+"/mcp", tok, false), "brain_wings", `{}`); isErr || !strings.Contains(text, "payments") {
				t.Fatalf("before: brain_wings at %s: %s", b, text)
			}
		}
	}
	for i, gw := range p.gws {
		if grantKeysOf(gw, "alice@acme.com") == 0 {
			t.Fatalf("replica %d holds no session for alice before", i)
		}
	}
	// The operator lists her sign-ins: the one sign-in, seen by the
	// replica that issued it.
	reps, signins, err := p.admin.List(ctx, p.admins, "alice@acme.com")
	if err != nil || len(reps) != 2 || len(signins) != 1 || signins[0].Email != "alice@acme.com" || signins[0].Ended {
		t.Fatalf("list: %v %+v %+v", err, reps, signins)
	}

	// Ended through the shared file.
	start := time.Now()
	if err := offboard.AddToFile(p.file, offboard.Entry{Email: "alice@acme.com", NotBefore: offboard.CeilSecond(time.Now()), Reason: "left"}); err != nil {
		t.Fatal(err)
	}
	p.waitEnded(t, "alice@acme.com", start.Add(5*time.Second))
	for _, b := range p.backends {
		if st := mcpStatus(t, b, alice.access); st != http.StatusUnauthorized {
			t.Fatalf("alice's access token at %s after the end: %d", b, st)
		}
		if st := mcpStatus(t, b, idpToken); st != http.StatusUnauthorized {
			t.Fatalf("alice's IdP token at %s after the end: %d", b, st)
		}
		st, out := postRefresh(t, b, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {alice.refresh}, "client_id": {alice.client}})
		if st != http.StatusBadRequest || out["error"] != "invalid_grant" || !strings.Contains(out["error_description"], "operator ended") {
			t.Fatalf("alice's refresh token at %s after the end: %d %v", b, st, out)
		}
		if text, isErr := call(t, newMCPClient(t, b+"/mcp", bob.access, false), "brain_wings", `{}`); isErr || !strings.Contains(text, "payments") {
			t.Fatalf("bob's token at %s: %s", b, text)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the end took %s on the two replicas, over 5 s", took)
	}
	for i, gw := range p.gws {
		if n := grantKeysOf(gw, "alice@acme.com"); n != 0 {
			t.Fatalf("replica %d still holds %d sessions of alice", i, n)
		}
	}
	if _, signins, _ := p.admin.List(ctx, p.admins, "alice@acme.com"); len(signins) != 1 || !signins[0].Ended {
		t.Fatalf("after: %+v", signins)
	}
	// A new sign-in (after not_before) works again.
	for time.Now().Before(offboard.CeilSecond(start)) {
		time.Sleep(10 * time.Millisecond) // iat is in seconds: the next second is after not_before
	}
	again := signInFull(t, p.base, "alice@acme.com")
	for _, b := range p.backends {
		if text, isErr := call(t, newMCPClient(t, b+"/mcp", again.access, false), "brain_wings", `{}`); isErr || !strings.Contains(text, "payments") {
			t.Fatalf("alice's new sign-in at %s: %s", b, text)
		}
	}

	// Ended through the admin endpoints, as `brainstem signins end` does:
	// every replica enforces it when End returns.
	carol := signInFull(t, p.base, "carol@acme.com")
	reports, err := p.admin.End(ctx, p.admins, offboard.Entry{Email: "carol@acme.com", NotBefore: offboard.CeilSecond(time.Now())})
	if err != nil || len(reports) != 2 || !reports[0].Changed || !reports[1].Changed {
		t.Fatalf("end: %v %+v", err, reports)
	}
	for _, b := range p.backends {
		if st := mcpStatus(t, b, carol.access); st != http.StatusUnauthorized {
			t.Fatalf("carol's access token at %s: %d", b, st)
		}
		if st, out := postRefresh(t, b, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {carol.refresh}, "client_id": {carol.client}}); out["error"] != "invalid_grant" {
			t.Fatalf("carol's refresh at %s: %d %v", b, st, out)
		}
	}
}

// TestSigninsAdminRefusals: the admin endpoints need the operator's token
// (compared in constant time), and refuse bad entries; nothing changes.
func TestSigninsAdminRefusals(t *testing.T) {
	p := startReplicaPair(t)
	a := p.admins[0]
	do := func(method, path, token, body string) int {
		req, _ := http.NewRequest(method, a+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, method, path, token, body string
		want                            int
	}{
		{"no token", "GET", "/signins", "", "", http.StatusUnauthorized},
		{"wrong token", "GET", "/signins", strings.Repeat("0", 64), "", http.StatusUnauthorized},
		{"token prefix", "POST", "/signins/end", p.admin.Token[:32], "email=x@acme.com", http.StatusUnauthorized},
		{"bad email", "POST", "/signins/end", p.admin.Token, "email=not-an-email", http.StatusBadRequest},
		{"bad not_before", "POST", "/signins/end", p.admin.Token, "email=x@acme.com&not_before=tomorrow", http.StatusBadRequest},
		{"reason with a newline", "POST", "/signins/end", p.admin.Token, "email=x@acme.com&reason=a%0Ab", http.StatusBadRequest},
		{"list bad email", "GET", "/signins?email=a%20b", p.admin.Token, "", http.StatusBadRequest},
		{"body over the limit", "POST", "/signins/end", p.admin.Token, "email=x@acme.com&reason=" + strings.Repeat("a", maxAdminFormBytes), http.StatusBadRequest},
	} {
		if got := do(tc.method, tc.path, tc.token, tc.body); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if es := p.gws[0].ended.Entries(); len(es) != 0 {
		t.Fatalf("a refused request changed the list: %+v", es)
	}
	// Without a token file the endpoints are off.
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	adm := httptest.NewServer(e.gw.AdminHandler())
	t.Cleanup(adm.Close)
	resp, err := http.Get(adm.URL + "/signins")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("without admin_token_file: %d", resp.StatusCode)
	}
}

// TestSigninsAdminAttackList runs testdata/signins-admin.txt against one
// replica's admin listener.
func TestSigninsAdminAttackList(t *testing.T) {
	p := startReplicaPair(t)
	data, err := os.ReadFile("testdata/signins-admin.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, " ", 5)
		if len(f) != 5 {
			t.Fatalf("bad line %q", line)
		}
		want, _ := strconv.Atoi(f[0])
		var body io.Reader
		if f[4] != "-" {
			body = strings.NewReader(f[4])
		}
		req, err := http.NewRequest(f[1], p.admins[0]+f[2], body)
		if err != nil {
			t.Fatal(err)
		}
		if f[3] != "-" {
			h, err := url.PathUnescape(strings.ReplaceAll(f[3], "$TOKEN", p.admin.Token))
			if err != nil {
				t.Fatal(err)
			}
			req.Header["Authorization"] = []string{h}
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			// net/http refuses to send a header with a NUL: that request
			// cannot reach the server at all.
			if strings.Contains(err.Error(), "invalid header") {
				n++
				continue
			}
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", line, resp.StatusCode, want)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d cases", n)
	}
	if es := p.gws[0].ended.Entries(); len(es) != 0 {
		t.Fatalf("the attacks changed the list: %+v", es)
	}
}

// FuzzSigninsEndForm: whatever the form, POST /signins/end with the
// operator token answers 200 only for an entry offboard.Check accepts, and
// then enforces exactly that email; anything else changes nothing.
func FuzzSigninsEndForm(f *testing.F) {
	for _, s := range []string{"email=bob@acme.com", "email=Bob@Acme.com&not_before=2026-12-02T10:00:00Z&reason=left",
		"email=bob", "email=bob@acme.com&not_before=x", "email=a@b.co&email=c@d.co", "%zz", "reason=%0A", ""} {
		f.Add(s)
	}
	// The handler of a gateway holding only what it uses.
	sum := sha256.Sum256([]byte("operator-token-0123456789abcdef0123"))
	g := &Gateway{log: slog.New(slog.DiscardHandler), now: time.Now, ended: offboard.NewList(), adminToken: sum[:]}
	g.grants = route.NewGrantCache(nil, 100, time.Minute, time.Minute, time.Second, time.Now, nopMetrics{}, g.log)
	f.Fuzz(func(t *testing.T, body string) {
		before := len(g.ended.Entries())
		req := httptest.NewRequest(http.MethodPost, "/signins/end", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer operator-token-0123456789abcdef0123")
		w := httptest.NewRecorder()
		g.serveSigninsEnd(w, req)
		form, perr := url.ParseQuery(body)
		if w.Code != http.StatusOK {
			if len(g.ended.Entries()) != before {
				t.Fatalf("%q: refused (%d) but the list changed", body, w.Code)
			}
			return
		}
		if perr != nil {
			t.Fatalf("%q: accepted a form that does not parse", body)
		}
		ce, err := offboard.Check(offboard.Entry{Email: form.Get("email"), NotBefore: time.Now(), Reason: form.Get("reason")})
		if err != nil {
			t.Fatalf("%q: accepted an entry Check refuses: %v", body, err)
		}
		if _, ended := g.ended.Ended(ce.Email, time.Time{}); !ended {
			t.Fatalf("%q: accepted but %s is not enforced", body, ce.Email)
		}
	})
}

// TestSigninsConfig: the signins section's problems are reported by the
// check and by New, each naming its key.
func TestSigninsConfig(t *testing.T) {
	e := newEnv(t, []string{"payments"}, map[string]auth.Policy{"payments": policyOpen})
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	_ = os.WriteFile(short, []byte("too-short"), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("ended: [{email: nope, not_before: 2026-12-02T10:00:00Z}]\n"), 0o600)
	wcs := []config.WingConfig{{Name: "payments", Address: e.shards["payments"].addr, ServerName: "localhost"}}
	for _, tc := range []struct {
		name    string
		s       config.SigninsConfig
		noAdmin bool
		want    string
	}{
		{"token without the admin listener", config.SigninsConfig{AdminTokenFile: short}, true, "signins.admin_token_file: the /signins endpoints are served on admin_listen"},
		{"spaces", config.SigninsConfig{EndedFile: " x"}, false, "signins.ended_file: \" x\" has surrounding spaces"},
		{"missing file", config.SigninsConfig{EndedFile: filepath.Join(dir, "none.yaml")}, false, "signins.ended_file"},
		{"bad file", config.SigninsConfig{EndedFile: bad}, false, "ended[0]: email"},
		{"short token", config.SigninsConfig{AdminTokenFile: short}, false, "want 32 to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e.config(wcs, "http://127.0.0.1:1")
			cfg.Signins = tc.s
			if tc.noAdmin {
				cfg.AdminListen = ""
			}
			_, err := New(context.Background(), cfg, Options{ShardTLS: e.pki.gwTLS})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
}
