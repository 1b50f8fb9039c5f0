package devidp

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTokenExchangeIDJAG: the token exchange turns an ID token of the
// provider into an ID-JAG (typ oauth-id-jag+jwt, the draft's claims); each
// bad request is refused with its reason, a disabled account too.
func TestTokenExchangeIDJAG(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	idt, _, err := p.Mint("alice@example.com", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Config{Issuer: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, _ := other.Mint("alice@example.com", nil, 0)
	expired, _, _ := p.Mint("alice@example.com", nil, time.Second)
	form := func(edit func(url.Values)) url.Values {
		f := url.Values{"grant_type": {GrantTypeTokenExchange}, "requested_token_type": {TokenTypeIDJAG},
			"subject_token": {idt}, "subject_token_type": {TokenTypeIDToken}, "audience": {"https://gw.example"},
			"resource": {"https://gw.example/mcp"}, "scope": {"mcp"}, "client_id": {DefaultClientID}}
		if edit != nil {
			edit(f)
		}
		return f
	}
	post := func(f url.Values) (int, map[string]any) {
		resp, err := http.PostForm(p.Issuer()+"/token", f)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	st, out := post(form(nil))
	jag, _ := out["access_token"].(string)
	if st != http.StatusOK || out["issued_token_type"] != TokenTypeIDJAG || jag == "" {
		t.Fatalf("exchange: %d %v", st, out)
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(jag, ".")[0])
	c := claimsOf(t, jag)
	if !strings.Contains(string(hdr), `"typ":"oauth-id-jag+jwt"`) || c["aud"] != "https://gw.example" || c["client_id"] != DefaultAssertionClientID ||
		c["sub"] != "alice@example.com" || c["resource"] != "https://gw.example/mcp" || c["scope"] != "mcp" || c["jti"] == "" || c["iss"] != p.Issuer() ||
		c["exp"].(float64)-c["iat"].(float64) != IDJAGTTL.Seconds() {
		t.Fatalf("ID-JAG %s %v", hdr, c)
	}
	if _, again := post(form(nil)); again["access_token"] == jag {
		t.Fatal("two exchanges gave the same ID-JAG (jti)")
	}
	clk.Add(2 * time.Second)
	for _, tc := range []struct {
		name, want string
		edit       func(url.Values)
	}{
		{"other token type", "requested_token_type", func(f url.Values) { f.Set("requested_token_type", "urn:ietf:params:oauth:token-type:access_token") }},
		{"other subject type", "subject_token_type", func(f url.Values) { f.Set("subject_token_type", "urn:ietf:params:oauth:token-type:saml2") }},
		{"no audience", "audience is required", func(f url.Values) { f.Del("audience") }},
		{"two audiences", "one audience", func(f url.Values) { f["audience"] = []string{"a", "b"} }},
		{"no subject", "subject_token is required", func(f url.Values) { f.Del("subject_token") }},
		{"not a JWT", "not a JWT", func(f url.Values) { f.Set("subject_token", "abc") }},
		{"another provider's", "not signed by this provider", func(f url.Values) { f.Set("subject_token", foreign) }},
		{"an ID-JAG as subject", "not an ID token", func(f url.Values) { f.Set("subject_token", jag) }},
		{"expired", "expired", func(f url.Values) { f.Set("subject_token", expired) }},
		{"unknown client", "unknown client_id", func(f url.Values) { f.Set("client_id", "other") }},
	} {
		st, out := post(form(tc.edit))
		if desc, _ := out["error_description"].(string); st < 400 || !strings.Contains(desc, tc.want) {
			t.Errorf("%s: %d %v, want %q", tc.name, st, out, tc.want)
		}
	}
	if err := p.SetDisabled("alice@example.com", true); err != nil {
		t.Fatal(err)
	}
	if st, out := post(form(nil)); st != http.StatusBadRequest || !strings.Contains(out["error_description"].(string), "disabled") {
		t.Fatalf("disabled: %d %v", st, out)
	}
}
