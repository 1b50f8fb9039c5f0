package devenv

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestDevTokenRefusesForeignHostAndOrigin: /dev/token and /dev/id-jag hand
// out a token (an ID-JAG) for any email, so, like the IdP they sit beside,
// they answer only requests addressed to a loopback name from no or a
// loopback Origin (a DNS-rebinding page has its own name in Host and
// Origin). And they apply the email rule; /dev/id-jag wants an audience.
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
	post := func(path, host, origin, email string) (int, string) {
		t.Helper()
		form := url.Values{"email": {email}, "audience": {"http://127.0.0.1:1"}}
		req, err := http.NewRequest(http.MethodPost, env.IssuerURL+path, strings.NewReader(form.Encode()))
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
		for path, field := range map[string]string{"/dev/token": `"token"`, "/dev/id-jag": `"id_jag"`} {
			status, body := post(path, tc.host, tc.origin, tc.email)
			if status != tc.status || (status == http.StatusOK) != strings.Contains(body, field) {
				t.Errorf("%s Host %q Origin %q email %q: %d %s; want %d", path, tc.host, tc.origin, tc.email, status, body, tc.status)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodPost, env.IssuerURL+"/dev/id-jag", strings.NewReader("email=bob@example.com"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("/dev/id-jag without an audience: %d", resp.StatusCode)
	}
}
