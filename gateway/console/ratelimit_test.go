package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestOverRateLimit: over his rate limit, bob's console pages say so
// (429, Retry-After, a page saying when to retry) instead of answering
// as a missing page (issue 34: pages of wings he reads answered 404).
// Every page answers the same, byte for byte, whether its wing exists,
// is readable or hidden, so the limit tells nothing of what exists.
func TestOverRateLimit(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		// Five calls, refilled at one per 1,000 s: bob runs out within a
		// few pages and gets no call back before the test ends.
		c.Limits.CallsPerSecond, c.Limits.Burst = 0.001, 5
	}})
	bob := signIn(t, env, "bob@example.com", "")
	var over *testbrowser.Page
	for range 10 { // a wing page is two calls
		if p := bob.get("w/payments"); p.Status != http.StatusOK {
			over = p
			break
		}
	}
	if over == nil {
		t.Fatal("bob never went over his rate limit")
	}
	for _, path := range []string{"w/payments", "", "w/payments/inbox", "n/payments/facts/ledger-double-entry-model",
		"search?q=ledger", "search?q=ledger&wing=payments", "w/people-ops", "w/no-such-wing", "no/such/page"} {
		p := bob.get(path)
		if p.Status != http.StatusTooManyRequests || p.Header.Get("Retry-After") != "1" ||
			!strings.Contains(testbrowser.Text(p.Body), "Try again in 1 second") {
			t.Errorf("%q over the rate limit: %d, Retry-After %q: %s", path, p.Status, p.Header.Get("Retry-After"), testbrowser.Text(p.Body))
		}
		if p.Body != over.Body {
			t.Errorf("%q over the rate limit is not the page w/payments got:\n%s\n%s", path, testbrowser.Text(p.Body), testbrowser.Text(over.Body))
		}
	}
}
