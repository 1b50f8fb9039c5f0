package doctor_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/doctor"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

func startDev(t *testing.T, mutate func(*config.Config)) *devenv.Env {
	t.Helper()
	return devenvtest.Start(t, devenv.Config{Gateway: mutate})
}

// signedIn signs email in to env through the browser flow and returns
// the client holding the stored sign-in.
func signedIn(t *testing.T, env *devenv.Env, email string) *signin.Client {
	t.Helper()
	c := &signin.Client{Store: &signin.Store{Dir: filepath.Join(t.TempDir(), "signins")},
		Browser: signin.BrowserFunc(func(ctx context.Context, u string) error {
			_, err := testbrowser.New().SignIn(ctx, u, nil, email, "")
			return err
		})}
	if _, err := c.Login(context.Background(), env.MCPURL); err != nil {
		t.Fatal(err)
	}
	return c
}

func run(t *testing.T, cfg doctor.Config) (*doctor.Report, string) {
	t.Helper()
	rep, err := doctor.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b)
	return rep, b.String()
}

// want checks a step's status and that its detail and fix hold the given
// fragments.
func want(t *testing.T, rep *doctor.Report, printed, name string, st doctor.Status, fragments ...string) {
	t.Helper()
	s, ok := rep.Step(name)
	if !ok {
		t.Fatalf("no step %q:\n%s", name, printed)
	}
	if s.Status != st {
		t.Errorf("step %q is %s, want %s:\n%s", name, s.Status.Mark(), st.Mark(), printed)
	}
	for _, f := range fragments {
		if !strings.Contains(s.Detail+" fix: "+s.Fix, f) {
			t.Errorf("step %q lacks %q: %s / %s", name, f, s.Detail, s.Fix)
		}
	}
	if st == doctor.Fail && s.Fix == "" {
		t.Errorf("failed step %q has no fix", name)
	}
}

var allSteps = []string{doctor.StepTLS, doctor.StepResource, doctor.StepServer, doctor.StepRegistration, doctor.StepAuthorization,
	doctor.StepChallenge, doctor.StepToken, doctor.StepTools, doctor.StepWings, doctor.StepClock}

// TestDoctorHealthy: on a healthy dev environment every step passes, with
// the stored sign-in and with --token.
func TestDoctorHealthy(t *testing.T) {
	env := startDev(t, nil)
	sc := signedIn(t, env, "alice@example.com")
	rep, printed := run(t, doctor.Config{URL: env.MCPURL, SignIn: sc})
	if len(rep.Steps) != len(allSteps) {
		t.Fatalf("%d steps, want %d:\n%s", len(rep.Steps), len(allSteps), printed)
	}
	for i, name := range allSteps {
		if rep.Steps[i].Name != name {
			t.Errorf("step %d is %q, want %q", i, rep.Steps[i].Name, name)
		}
		want(t, rep, printed, name, doctor.Pass)
	}
	want(t, rep, printed, doctor.StepAuthorization, doctor.Pass, "consent page")
	want(t, rep, printed, doctor.StepToken, doctor.Pass, "alice@example.com")
	want(t, rep, printed, doctor.StepWings, doctor.Pass, "3 wings:", "people-ops (read, write, curate)")
	if !strings.Contains(printed, "✓ TLS") || !strings.Contains(printed, "Every step passed.") {
		t.Errorf("printed report:\n%s", printed)
	}

	tok, _, err := env.Token("bob@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, printed = run(t, doctor.Config{URL: strings.TrimSuffix(env.MCPURL, "/mcp"), Token: tok})
	if len(rep.Failed()) != 0 {
		t.Errorf("with --token:\n%s", printed)
	}
	want(t, rep, printed, doctor.StepToken, doctor.Pass, "--token")

	// Without any token the token steps are skipped, not failed.
	rep, printed = run(t, doctor.Config{URL: env.MCPURL, SignIn: &signin.Client{Store: &signin.Store{Dir: t.TempDir()}}})
	if len(rep.Failed()) != 0 {
		t.Errorf("without a token:\n%s", printed)
	}
	want(t, rep, printed, doctor.StepToken, doctor.Skip, "brainstem login "+env.MCPURL)
	want(t, rep, printed, doctor.StepTools, doctor.Skip)
}

// TestDoctorWrongPublicURL: a gateway configured with another public_url
// fails at the protected-resource metadata, saying to set public_url.
func TestDoctorWrongPublicURL(t *testing.T) {
	env := startDev(t, func(c *config.Config) { c.PublicURL = "http://127.0.0.1:1" })
	base := strings.TrimSuffix(env.MCPURL, "/mcp")
	rep, printed := run(t, doctor.Config{URL: base})
	want(t, rep, printed, doctor.StepTLS, doctor.Pass)
	want(t, rep, printed, doctor.StepResource, doctor.Fail, "http://127.0.0.1:1/mcp", "Set public_url", base+", the URL clients use")
	want(t, rep, printed, doctor.StepServer, doctor.Skip)
	want(t, rep, printed, doctor.StepRegistration, doctor.Skip)
	want(t, rep, printed, doctor.StepChallenge, doctor.Fail, "public_url")
	if rep.Failed()[0].Name != doctor.StepResource {
		t.Errorf("the first failed step is %q, want the protected-resource metadata:\n%s", rep.Failed()[0].Name, printed)
	}
}

// TestDoctorIdPUnreachable: with the company IdP down the gateway answers
// its "sign-in is unreachable" page, and the authorization step says so.
func TestDoctorIdPUnreachable(t *testing.T) {
	env := startDev(t, nil)
	if err := env.StopIdP(); err != nil {
		t.Fatal(err)
	}
	rep, printed := run(t, doctor.Config{URL: env.MCPURL})
	for _, name := range []string{doctor.StepTLS, doctor.StepResource, doctor.StepServer, doctor.StepRegistration, doctor.StepChallenge} {
		want(t, rep, printed, name, doctor.Pass)
	}
	want(t, rep, printed, doctor.StepAuthorization, doctor.Fail, "cannot reach the company's identity provider", "oauth.upstream.issuer")
	if len(rep.Failed()) != 1 {
		t.Errorf("%d failed steps, want only the authorization endpoint:\n%s", len(rep.Failed()), printed)
	}
}

// TestDoctorClockSkew: this computer's clock (injected) against the
// gateway's Date header.
func TestDoctorClockSkew(t *testing.T) {
	env := startDev(t, nil)
	tests := []struct {
		offset time.Duration
		st     doctor.Status
		frag   string
	}{
		{-10 * time.Minute, doctor.Fail, "behind the gateway's"},
		{3 * time.Hour, doctor.Fail, "3h0m0s ahead of the gateway's"},
		{20 * time.Second, doctor.Pass, "within"},
		{0, doctor.Pass, "within"},
	}
	for _, tt := range tests {
		now := func() time.Time { return time.Now().Add(tt.offset) }
		rep, printed := run(t, doctor.Config{URL: env.MCPURL, Now: now})
		want(t, rep, printed, doctor.StepClock, tt.st, tt.frag)
		if tt.st == doctor.Fail {
			want(t, rep, printed, doctor.StepClock, tt.st, "NTP")
		}
	}
}

// TestDoctorRefusedToken: a token the gateway refuses fails tools/list.
func TestDoctorRefusedToken(t *testing.T) {
	env := startDev(t, nil)
	rep, printed := run(t, doctor.Config{URL: env.MCPURL, Token: "not-a-token"})
	want(t, rep, printed, doctor.StepTools, doctor.Fail, "401", "invalid_token", "brainstem login")
	want(t, rep, printed, doctor.StepWings, doctor.Skip)
}

// TestDoctorWithoutFacade: a gateway that names the company IdP as its
// authorization server (oauth off) fails where MCP clients fail.
func TestDoctorWithoutFacade(t *testing.T) {
	env := startDev(t, func(c *config.Config) { c.OAuth.Enabled = false })
	rep, printed := run(t, doctor.Config{URL: env.MCPURL})
	want(t, rep, printed, doctor.StepResource, doctor.Pass, env.IssuerURL)
	want(t, rep, printed, doctor.StepServer, doctor.Fail, "no dynamic registration", "oauth.enabled: true")
}

// TestDoctorTLS: certificates checked against a real TLS server.
func TestDoctorTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":"):]

	rep, printed := run(t, doctor.Config{URL: srv.URL, HTTP: srv.Client()})
	want(t, rep, printed, doctor.StepTLS, doctor.Pass, "certificate valid for 127.0.0.1")
	want(t, rep, printed, doctor.StepResource, doctor.Fail, "Check the URL")

	rep, printed = run(t, doctor.Config{URL: srv.URL, HTTP: &http.Client{}})
	want(t, rep, printed, doctor.StepTLS, doctor.Fail, "does not trust", "company's CA")
	want(t, rep, printed, doctor.StepResource, doctor.Skip)

	rep, printed = run(t, doctor.Config{URL: "https://localhost" + port, HTTP: srv.Client()})
	want(t, rep, printed, doctor.StepTLS, doctor.Fail, "not localhost", "certificate for localhost")

	rep, printed = run(t, doctor.Config{URL: "http://brain.example.com"})
	want(t, rep, printed, doctor.StepTLS, doctor.Fail, "in the clear", "https://brain.example.com")
	for _, s := range rep.Steps[1:] {
		if s.Status != doctor.Skip {
			t.Errorf("after plain http to a remote host, %q ran", s.Name)
		}
	}
}

// TestDoctorGatewayDown: with nothing listening at a local gateway's URL,
// the steps that reach it fail saying so and how to start it, and the
// clock step says the gateway did not answer (not that it sent no Date
// header); `brainstem login` gets the same fix (Unreachable).
func TestDoctorGatewayDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rep, printed := run(t, doctor.Config{URL: "http://" + addr})
	fix := "Nothing is listening at " + addr + ": start the gateway"
	want(t, rep, printed, doctor.StepResource, doctor.Fail, fix)
	want(t, rep, printed, doctor.StepChallenge, doctor.Fail, fix)
	want(t, rep, printed, doctor.StepClock, doctor.Skip, "the gateway did not answer")
	if err := rep.Err(); err == nil || err.Error() != "doctor: 2 steps failed" {
		t.Errorf("Err() = %v", err)
	}
	_, err = (&signin.Client{Store: &signin.Store{Dir: t.TempDir()}}).Login(context.Background(), "http://"+addr+"/mcp")
	if err := doctor.Unreachable(err, "http://"+addr+"/mcp"); err == nil || !strings.Contains(err.Error(), "\nfix: "+fix) || !strings.Contains(err.Error(), "brainstem doctor http://"+addr+"/mcp") {
		t.Errorf("login to a gateway that is down: %v", err)
	}
	if err := errors.New("refused"); doctor.Unreachable(err, "http://"+addr+"/mcp") != err {
		t.Error("Unreachable changed an error that is not a failure to reach the gateway")
	}
}

// TestDoctorPlainHTTPAsHTTPS: a URL without a scheme means https; a local
// server speaking plain http there fails the TLS step with the fix "use
// http://"; a remote one is told to use its https URL.
func TestDoctorPlainHTTPAsHTTPS(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	rep, printed := run(t, doctor.Config{URL: host})
	want(t, rep, printed, doctor.StepTLS, doctor.Fail, "answers plain http, not https", "use http://"+host)
	if fix, ok := doctor.ReachFix(errors.New("http: server gave HTTP response to HTTPS client"), "brain.example.com:8080"); !ok || !strings.Contains(fix, "https URL") {
		t.Errorf("a remote plain http server: %q %v", fix, ok)
	}
	if _, ok := doctor.ReachFix(errors.New("HTTP 500"), "brain.example.com"); ok {
		t.Error("ReachFix took an answer for a failure to reach")
	}
}
