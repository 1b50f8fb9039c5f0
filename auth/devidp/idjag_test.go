package devidp

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
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

// TestTokenExchangeAttackList runs testdata/token_exchange.txt.
func TestTokenExchangeAttackList(t *testing.T) {
	clk := newClock()
	p := serve(t, clk)
	idt, _, _ := p.Mint("alice@example.com", nil, 0)
	expired, _, _ := p.Mint("alice@example.com", nil, time.Second)
	other, _ := New(Config{Issuer: "http://127.0.0.1:1"})
	foreign, _, _ := other.Mint("alice@example.com", nil, 0)
	jag, _, _ := p.MintIDJAG(IDJAGClaims{Email: "alice@example.com", Audience: p.Issuer()})
	clk.Add(2 * time.Second)
	vars := strings.NewReplacer("$IDT", url.QueryEscape(idt), "$OTHER", url.QueryEscape(foreign), "$JAG", url.QueryEscape(jag), "$EXPIRED", url.QueryEscape(expired))
	data, err := os.ReadFile("testdata/token_exchange.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, body, _ := strings.Cut(line, " ")
		resp, err := http.Post(p.Issuer()+"/token", "application/x-www-form-urlencoded", strings.NewReader(vars.Replace(body)))
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out["error"] != want || out["access_token"] != nil {
			t.Errorf("%s: %d %v, want %s", line, resp.StatusCode, out, want)
		}
		n++
	}
	if n < 15 {
		t.Fatalf("only %d cases", n)
	}
}

// FuzzTokenExchange: whatever the form, the exchange answers an ID-JAG
// only for a genuine, unexpired ID token of the provider and the required
// parameters, addressed to the requested audience.
func FuzzTokenExchange(f *testing.F) {
	p, err := New(Config{Issuer: "http://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	idt, _, _ := p.Mint("alice@example.com", nil, time.Hour)
	good := url.Values{"grant_type": {GrantTypeTokenExchange}, "requested_token_type": {TokenTypeIDJAG}, "client_id": {DefaultClientID},
		"subject_token": {idt}, "subject_token_type": {TokenTypeIDToken}, "audience": {"https://gw"}}
	f.Add(good.Encode())
	f.Add(good.Encode() + "&resource=https%3A%2F%2Fgw%2Fmcp&scope=mcp")
	f.Add(strings.Replace(good.Encode(), "audience=", "audience=&x=", 1))
	f.Add("grant_type=" + url.QueryEscape(GrantTypeTokenExchange))
	h := p.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			return
		}
		form, err := url.ParseQuery(body)
		if err != nil || form.Get("grant_type") != GrantTypeTokenExchange {
			return // another grant (a code or refresh token the fuzzer cannot know is never 200)
		}
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		jag, _ := out["access_token"].(string)
		if form.Get("subject_token") != idt || jag == "" {
			t.Fatalf("%q: an ID-JAG without the genuine ID token: %v", body, out)
		}
		if c := claimsOfT(t, jag); c["aud"] != form.Get("audience") || c["sub"] != "alice@example.com" {
			t.Fatalf("%q: ID-JAG claims %v", body, c)
		}
	})
}

func claimsOfT(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
