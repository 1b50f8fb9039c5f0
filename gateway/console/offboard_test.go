package console_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestConsoleCookieEndedSignIn: when an operator ends a curator's
// sign-ins, the console cookie they hold is refused (it holds an access
// token issued before not_before): the console answers that the session
// ended and offers a new sign-in.
func TestConsoleCookieEndedSignIn(t *testing.T) {
	dir := t.TempDir()
	ended, tok := filepath.Join(dir, "ended.yaml"), filepath.Join(dir, "token")
	if err := os.WriteFile(ended, []byte("ended: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("0123456789abcdef", 3)
	if err := os.WriteFile(tok, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	env := devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
		c.Signins = config.SigninsConfig{EndedFile: ended, AdminTokenFile: tok}
	}})
	alice := signIn(t, env, "alice@example.com", "")
	alice.mustGet("w/payments/inbox")
	cookies := alice.b.Cookies(mustURL(t, env.ConsoleURL))
	if _, err := (offboard.Admin{Token: secret}).End(context.Background(), []string{env.AdminURL},
		offboard.Entry{Email: "alice@example.com", NotBefore: offboard.CeilSecond(time.Now())}); err != nil {
		t.Fatal(err)
	}
	if p := alice.get(""); p.Status != http.StatusUnauthorized || !strings.Contains(testbrowser.Text(p.Body), "Your console session has ended") {
		t.Fatalf("after the end the console should refuse the session and offer a sign-in: %d: %s", p.Status, testbrowser.Text(p.Body))
	}
	replay := testbrowser.New()
	replay.SetCookies(mustURL(t, env.ConsoleURL), cookies)
	if p, err := replay.Get(t.Context(), env.ConsoleURL+"w/payments/inbox"); err != nil || p.Status != http.StatusUnauthorized {
		t.Fatalf("the cookie after the end: %v %d: %s", err, p.Status, testbrowser.Text(p.Body))
	}
}
