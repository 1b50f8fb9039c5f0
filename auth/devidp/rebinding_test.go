package devidp

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// hostCase is one line of testdata/hosts.txt.
type hostCase struct {
	refused      bool
	host, origin string
}

func readHostCases(t *testing.T, path, port string) []hostCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []hostCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(strings.ReplaceAll(line, "PORT", port))
		if len(f) != 3 || (f[0] != "ok" && f[0] != "refused") {
			t.Fatalf("%s: bad line %q", path, line)
		}
		c := hostCase{refused: f[0] == "refused", host: f[1], origin: f[2]}
		if c.origin == "-" {
			c.origin = ""
		}
		out = append(out, c)
	}
	return out
}

// TestRefusesForeignHostAndOrigin runs testdata/hosts.txt against the
// provider's token and authorization endpoints (and its other routes): a
// request whose Host is not a loopback name, or whose Origin is present and
// not a loopback origin, is refused with 403 before it is looked at, so a
// DNS-rebinding page cannot obtain a code or a token.
func TestRefusesForeignHostAndOrigin(t *testing.T) {
	p := serve(t, newClock())
	u, _ := url.Parse(p.Issuer())
	_, port, _ := net.SplitHostPort(u.Host)
	form := url.Values{"grant_type": {"refresh_token"}, "client_id": {p.ClientID()}, "refresh_token": {"x"}}
	authQuery := url.Values{"client_id": {p.ClientID()}, "redirect_uri": {"http://127.0.0.1:1/cb"}, "response_type": {"code"},
		"code_challenge_method": {"S256"}, "code_challenge": {strings.Repeat("a", 43)}}
	requests := []struct {
		method, path, body string
	}{
		{http.MethodPost, "/token", form.Encode()},
		{http.MethodGet, "/authorize?" + authQuery.Encode(), ""},
		{http.MethodPost, "/authorize", authQuery.Encode() + "&email=ann%40acme.com"},
		{http.MethodGet, "/.well-known/openid-configuration", ""},
		{http.MethodGet, "/keys", ""},
	}
	for _, c := range readHostCases(t, "testdata/hosts.txt", port) {
		for _, r := range requests {
			req, err := http.NewRequest(r.method, p.Issuer()+r.path, strings.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if r.body != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == http.StatusForbidden; got != c.refused {
				t.Errorf("%s %s with Host %q Origin %q: %d; refused=%v, want refused=%v", r.method, r.path, c.host, c.origin, resp.StatusCode, got, c.refused)
			}
		}
	}
}
