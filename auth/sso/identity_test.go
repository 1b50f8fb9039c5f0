package sso

import (
	"context"
	"errors"
	"strconv"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/tooling/emailcases"
)

// TestEmailRule runs the email attack list shared with package auth
// (tooling/emailcases) through Verify: an email the rule refuses is
// refused with EmailMissing (401 invalid_token) and never becomes an
// identity; an accepted one becomes exactly its canonical form. A trusted
// IdP's "\u212aate@example.com" (Kelvin sign) is not kate@example.com.
func TestEmailRule(t *testing.T) {
	clk := newClock()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	for _, c := range emailcases.Load(t) {
		in, want := c.In, c.Want
		tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(claimsFor(idp.URL, clk.Now()), "email", in))
		id, err := v.Verify(context.Background(), tok)
		if c.Refused {
			var e *Error
			if !errors.As(err, &e) || e.Kind != EmailMissing || e.OAuthCode() != "invalid_token" || e.HTTPStatus() != 401 {
				t.Errorf("email %q: identity %q, err %v; want EmailMissing", in, id.Email, err)
			}
			continue
		}
		if err != nil || id.Email != want {
			t.Errorf("email %q: identity %q, err %v; want %q", in, id.Email, err, want)
		}
	}
}

// TestStrictClaimTypes: exp, iat and nbf are JSON numbers and email is a
// JSON string. A number sent as a string ("1700000000") is refused, however
// plausible.
func TestStrictClaimTypes(t *testing.T) {
	clk := newClock()
	now := clk.Now()
	idp := newTestIdP(t)
	idp.publish("k1", rsaKey(t, 0))
	v := newTestVerifier(t, idp, clk, nil)
	c := claimsFor(idp.URL, now)
	unix := func(d int64) string { return strconv.FormatInt(now.Unix()+d, 10) }
	for _, tc := range []struct {
		name  string
		claim string
		value any
	}{
		{"exp as a numeric string", "exp", unix(3600)},
		{"exp as a padded numeric string", "exp", " " + unix(3600)},
		{"exp as a boolean", "exp", true},
		{"exp as an object", "exp", map[string]any{"$date": now.Unix() + 3600}},
		{"exp as a list", "exp", []int64{now.Unix() + 3600}},
		{"iat as a numeric string", "iat", unix(0)},
		{"nbf as a numeric string", "nbf", unix(-60)},
		{"nbf as a boolean", "nbf", false},
		{"email as a number", "email", 7},
		{"email as a list", "email", []string{"ann@acme.com"}},
		{"email as an object", "email", map[string]string{"value": "ann@acme.com"}},
		{"email as a boolean", "email", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(c, tc.claim, tc.value))
			id, err := v.Verify(context.Background(), tok)
			var e *Error
			if !errors.As(err, &e) || e.Kind != MalformedToken {
				t.Fatalf("%s = %#v: identity %+v, err %v; want MalformedToken", tc.claim, tc.value, id, err)
			}
		})
	}
	// The numeric forms are fine: integers and fractions.
	for _, exp := range []any{now.Unix() + 3600, float64(now.Unix()) + 3600.5} {
		if _, err := v.Verify(context.Background(), signJWT(t, jose.RS256, rsaKey(t, 0), "k1", with(c, "exp", exp))); err != nil {
			t.Errorf("exp %v: %v", exp, err)
		}
	}
}
