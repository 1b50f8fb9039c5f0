package sso

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzParseClaims decodes arbitrary claim sets with arbitrary groups paths:
// no panic, and what comes out obeys the documented rules (flexBool accepts
// only true/"true" as verified; groups are non-empty strings within the
// limit; exp, nbf and iat were JSON numbers and email a JSON string).
func FuzzParseClaims(f *testing.F) {
	seeds := []struct{ payload, path string }{
		{`{"iss":"https://i","aud":"a","exp":1,"email":"A@B.c","email_verified":true,"groups":["x","y"]}`, "groups"},
		{`{"email_verified":"true"}`, "groups"},
		{`{"email_verified":"false"}`, "groups"},
		{`{"email_verified":"yes"}`, "groups"},
		{`{"email_verified":null,"aud":["a","b"]}`, "groups"},
		{`{"realm_access":{"roles":["admin"]}}`, "realm_access.roles"},
		{`{"https://acme.com/groups":["g"]}`, "https://acme.com/groups"},
		{`{"a":{"b":{"c":"one"}}}`, "a.b.c"},
		{`{"groups":[1,null,"",{"x":1},"z"]}`, "groups"},
		{`{"exp":1e300}`, "groups"},
		{`{"exp":"1"}`, "groups"},
		{`{"exp":"1700000000","email":"a@b.c"}`, "groups"},
		{`{"iat":" 1700000000"}`, ""},
		{`{"nbf":true}`, ""},
		{`{"email":["a@b.c"]}`, ""},
		{`{"email":7}`, ""},
		{`{"email":"\u212aate@example.com"}`, ""},
		{`{"nbf":-1.5,"iat":1700000000.25}`, ""},
		{`[]`, "groups"},
		{`{"aud":7}`, "groups"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.payload), s.path)
	}
	f.Fuzz(func(t *testing.T, payload []byte, path string) {
		c, err := parseClaims(payload, path)
		if err != nil {
			return
		}
		if len(c.Groups) > MaxGroups {
			t.Fatalf("%d groups, over the limit", len(c.Groups))
		}
		for _, g := range c.Groups {
			if g == "" {
				t.Fatal("empty group name")
			}
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(payload, &raw); err != nil {
			t.Fatalf("parseClaims accepted what encoding/json refuses: %v", err)
		}
		ev := string(bytes.TrimSpace(raw["email_verified"]))
		if c.EmailVerified != (ev == "true" || ev == `"true"`) {
			t.Fatalf("email_verified %s decoded as %v", ev, c.EmailVerified)
		}
		for _, d := range []*time.Time{c.Expiry, c.NotBefore, c.IssuedAt} {
			if d != nil && (d.Year() < 0 || d.Year() > 9999) {
				t.Fatalf("date %v out of range", d)
			}
		}
		for _, name := range []string{"exp", "nbf", "iat"} {
			v := bytes.TrimSpace(raw[name])
			if len(v) > 0 && string(v) != "null" && v[0] != '-' && (v[0] < '0' || v[0] > '9') {
				t.Fatalf("claim %s = %s accepted, not a JSON number", name, v)
			}
		}
		if v := bytes.TrimSpace(raw["email"]); len(v) > 0 && string(v) != "null" && v[0] != '"' {
			t.Fatalf("claim email = %s accepted, not a JSON string", v)
		}
	})
}

// failTransport refuses every request, so the fuzzed verifier never touches
// the network.
type failTransport struct{}

func (failTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in fuzzing")
}

// FuzzVerify feeds arbitrary strings to Verify: it must never panic, never
// accept (no keys can be fetched), and always answer with a typed error that
// maps to a defined status.
func FuzzVerify(f *testing.F) {
	for _, s := range []string{"", "a", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5pbnZhbGlkIn0.sig",
		"eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2lkcC5pbnZhbGlkIn0.", "..", strings.Repeat("A", 100)} {
		f.Add(s)
	}
	v, err := NewVerifier(context.Background(), Config{
		Issuers:    []IssuerConfig{{URL: "https://idp.invalid", Audiences: []string{"a"}}},
		HTTPClient: &http.Client{Transport: failTransport{}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := v.Verify(context.Background(), s)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Verify(%q) = %+v, %v: want a *Error", s, id, err)
		}
		switch e.HTTPStatus() {
		case 400, 401, 403, 503:
		default:
			t.Fatalf("status %d", e.HTTPStatus())
		}
		for i := 0; i < len(e.Description); i++ {
			if c := e.Description[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				t.Fatalf("description %q holds %q, not allowed in an error_description", e.Description, c)
			}
		}
	})
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  a.b.c", "Basic x", "Bearer", "Bearer a b", "", "Bearer =", "BEARER x~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := BearerToken(http.Header{"Authorization": {s}})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Kind != Malformed && e.Kind != NoToken) {
				t.Fatalf("err = %v", err)
			}
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n\"") {
			t.Fatalf("token %q from %q", tok, s)
		}
		if again, err := BearerToken(http.Header{"Authorization": {"Bearer " + tok}}); err != nil || again != tok {
			t.Fatalf("round trip of %q: %q, %v", tok, again, err)
		}
	})
}

// parseClaims decodes a JWT claims set and extracts the groups at
// groupsClaim (a literal claim name, else a dotted path). It checks types
// only; the verifier decides what is acceptable.
func parseClaims(payload []byte, groupsClaim string) (claims, error) {
	raw, err := claimSet(payload)
	if err != nil {
		return claims{}, err
	}
	var c claims
	if err := c.decode(raw, groupsClaim); err != nil {
		return claims{}, err
	}
	return c, nil
}
