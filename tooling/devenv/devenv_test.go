package devenv

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestDevTokenRefusesForeignHostAndOrigin: /dev/token hands out a token for
// any email, so, like the IdP it sits beside, it answers only requests
// addressed to a loopback name from no or a loopback Origin (a DNS-rebinding
// page has its own name in Host and Origin). And it applies the email rule.
func TestDevTokenRefusesForeignHostAndOrigin(t *testing.T) {
	env, err := Start(context.Background(), Config{Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	})
	u, _ := url.Parse(env.IssuerURL)
	post := func(host, origin, email string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, env.IssuerURL+"/dev/token", strings.NewReader(url.Values{"email": {email}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		host, origin, email string
		status              int
	}{
		{u.Host, "", "bob@example.com", http.StatusOK},
		{"localhost:" + u.Port(), "http://localhost:" + u.Port(), "bob@example.com", http.StatusOK},
		{"evil.example:" + u.Port(), "", "bob@example.com", http.StatusForbidden},
		{"evil.example", "https://evil.example", "bob@example.com", http.StatusForbidden},
		{u.Host, "https://evil.example", "bob@example.com", http.StatusForbidden},
		{u.Host, "null", "bob@example.com", http.StatusForbidden},
		{u.Host, "", "\u212aate@example.com", http.StatusBadRequest},
		{u.Host, "", "bob\n@example.com", http.StatusBadRequest},
	} {
		status, body := post(tc.host, tc.origin, tc.email)
		if status != tc.status || (status == http.StatusOK) != strings.Contains(body, `"token"`) {
			t.Errorf("Host %q Origin %q email %q: %d %s; want %d", tc.host, tc.origin, tc.email, status, body, tc.status)
		}
	}
}
