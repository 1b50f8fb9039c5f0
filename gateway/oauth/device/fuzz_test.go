package device

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// fuzzServer is a bare server with the device grant.
func fuzzServer(f *testing.F) *Grant {
	f.Helper()
	srv := oauthtest.BareServer(f, nil)
	g, err := New(srv, nil)
	if err == nil {
		err = srv.Add(g)
	}
	if err != nil {
		f.Fatal(err)
	}
	return g
}

// FuzzDeviceAuthorizationForm: no form body makes the device authorization
// endpoint panic; it answers a device code only to the one client
// registered for the device grant, and every answer is JSON.
func FuzzDeviceAuthorizationForm(f *testing.F) {
	s := fuzzServer(f)
	dev := oauthtest.Registered(f, s.srv, `{"client_name":"D","grant_types":["`+oauth.GrantTypeDevice+`"]}`)
	good := url.Values{"client_id": {dev.ID}}.Encode()
	f.Add(good)
	f.Add(good + "&scope=mcp&resource=http%3A%2F%2F127.0.0.1%3A1%2Fmcp")
	f.Add(good + "&client_id=x")
	f.Add("client_id=")
	f.Add("client_id=https%3A%2F%2Fexample.com%2Fc.json")
	f.Add("%zz=1")
	f.Add(good + "&scope=admin")
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/device_authorization", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		s.serveDeviceAuthorization(w, req)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%q: answer is not JSON: %s", body, w.Body)
		}
		if w.Code == http.StatusOK {
			form, err := url.ParseQuery(body)
			if err != nil || form.Get("client_id") != dev.ID {
				t.Fatalf("%q: a device code for another client: %v", body, out)
			}
			if _, err := normalizeUserCode(out["user_code"].(string)); err != nil {
				t.Fatalf("%q: user code %v", body, out["user_code"])
			}
		} else if out["error"] == "" {
			t.Fatalf("%q: %d without an error code", body, w.Code)
		}
	})
}

// FuzzUserCode: the verification page's reading of a typed code never
// panics and accepts only 8 letters of the alphabet.
func FuzzUserCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdf ghjk", "AAAA-AAAA", "", "----", "ＢＣＤＦ", "BCDFGHJK\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := normalizeUserCode(in)
		if err != nil {
			return
		}
		if len(c) != UserCodeLength || strings.Trim(c, userCodeAlphabet) != "" {
			t.Fatalf("%q read as %q", in, c)
		}
	})
}

// FuzzDevicePageForm: no form posted to the verification page makes it
// panic, and without the page's own sealed token and CSRF cookie nothing
// is accepted: every answer is an error page, never the approval page or
// a redirect to the IdP.
func FuzzDevicePageForm(f *testing.F) {
	s := fuzzServer(f)
	f.Add("step=code&user_code=BCDF-GHJK&token=x")
	f.Add("step=approve&decision=allow&token=x")
	f.Add("step=code&step=approve")
	f.Add("%zz")
	f.Add("step=code&token=" + strings.Repeat("A", 200))
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, PathPage, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookieDeviceCSRF+"=x")
		w := httptest.NewRecorder()
		s.serveDeviceForm(w, req)
		if w.Code < 400 || w.Header().Get("Location") != "" || strings.Contains(w.Body.String(), `name="decision"`) {
			t.Fatalf("%q: %d %s", body, w.Code, w.Header().Get("Location"))
		}
		if !strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Fatalf("%q: a page without the CSP", body)
		}
	})
}

// FuzzPeerRequest: a peer request sealed with the replicas' key but with
// any operation, target, method, path and body never makes the peer
// endpoint panic, and is answered only when it is a find or a step of the
// device flow for this replica; anything else is refused unanswered.
func FuzzPeerRequest(f *testing.F) {
	self := "10.0.0.1:9090"
	s := fuzzServer(f)
	s.peers = &Peers{Self: self, List: func(context.Context) ([]string, error) { return nil, nil }}
	f.Add("find", self, "", "", "BCDFGHJK", "")
	f.Add("forward", self, http.MethodPost, PathToken, "", "grant_type="+oauth.GrantTypeDevice+"&device_code=bsd1.x&client_id=x")
	f.Add("forward", self, http.MethodPost, PathPage, "", "step=code&user_code=BCDF-GHJK")
	f.Add("forward", self, http.MethodGet, PathCallback+"?state=aaaaaaaaaaaaaaaaaaaaaa&code=x", "", "")
	f.Add("forward", self, http.MethodPost, PathRegister, "", "{}")
	f.Add("forward", "10.0.0.2:9090", http.MethodPost, PathToken, "", "")
	f.Add("forward", self, http.MethodPost, "/../token", "", "")
	f.Fuzz(func(t *testing.T, op, to, method, uri, code, body string) {
		sealed, err := s.srv.Seal(purposePeerRequest, peerRequest{Op: op, To: to, Nonce: oauth.RandomString(8), Exp: s.srv.Now().Add(peerTTL).Unix(),
			Code: code, Method: method, URI: uri, Body: []byte(body), IP: "192.0.2.1",
			Header: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}})
		if err != nil {
			t.Skip()
		}
		w := httptest.NewRecorder()
		s.servePeer(w, httptest.NewRequest(http.MethodPost, PathPeer, strings.NewReader(sealed)))
		answered := w.Code == http.StatusOK
		allowed := to == self && (op == "find" || op == "forward" && s.forwardable(method, pathOf(uri)))
		if answered != allowed {
			t.Fatalf("op %q to %q %s %q: status %d, allowed %v", op, to, method, uri, w.Code, allowed)
		}
		if answered {
			var ans peerAnswer
			if err := s.srv.Open(purposePeerAnswer, w.Body.String(), maxPeerBytes, &ans); err != nil {
				t.Fatalf("an answer that does not open: %v", err)
			}
			if op == "forward" && ans.Status == http.StatusOK && strings.Contains(string(ans.Body), "access_token") {
				t.Fatalf("tokens for a made-up request: %s", ans.Body)
			}
		}
	})
}
