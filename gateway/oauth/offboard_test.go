package oauth_test

import (
	. "github.com/brainstem/brainstem/gateway/oauth"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/tooling/oauthtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestEndedSignIns: once an operator ends a person's sign-ins, their
// access token (verified and cached before, as a console cookie's is) and
// their refresh token are refused, a sign-in after not_before works, and
// the replica lists the sign-in as ended.
func TestEndedSignIns(t *testing.T) {
	list := offboard.NewList()
	e := newEnv(t, 0, nil)
	r := e.AddReplicaWith(nil, func(o *Options) { o.Ended = list })
	a := e.RegisteredApp(r)
	st, out := e.Token(r, a.Redeem(e.Code(testbrowser.New(), r, a, "alice@example.com")))
	if st != http.StatusOK {
		t.Fatalf("%d %v", st, out)
	}
	at, rt := out["access_token"].(string), out["refresh_token"].(string)
	if _, err := oauthtest.IdentityOf(t, r, at); err != nil { // now in the verified cache
		t.Fatal(err)
	}
	if s := r.Srv.SignIns("alice@example.com"); len(s) != 1 || s[0].Ended || s[0].Grant != "authorization_code" {
		t.Fatalf("SignIns: %+v", s)
	}
	e.Clock.Advance(time.Second)
	if _, err := list.Post(offboard.Entry{Email: "alice@example.com", NotBefore: e.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := oauthtest.IdentityOf(t, r, at); err == nil || !strings.Contains(err.Error(), "operator ended") {
		t.Fatalf("the cached access token after the end: %v", err)
	}
	st, o := e.Token(r, a.Refresh(rt))
	oauthtest.WantTokenError(t, st, o, http.StatusBadRequest, "invalid_grant")
	if s := r.Srv.SignIns("alice@example.com"); len(s) != 1 || !s[0].Ended {
		t.Fatalf("SignIns after the end: %+v", s)
	}
	e.Clock.Advance(time.Second)
	st, out = e.Token(r, a.Redeem(e.Code(testbrowser.New(), r, a, "alice@example.com")))
	if st != http.StatusOK {
		t.Fatalf("a sign-in after not_before: %d %v", st, out)
	}
	if _, err := oauthtest.IdentityOf(t, r, out["access_token"].(string)); err != nil {
		t.Fatalf("the new sign-in's token: %v", err)
	}
}

// TestDisabledUserBound: docs/security.md's bound on a person disabled at
// the IdP. Their refresh is refused at once (the gateway refreshes at the
// IdP), which also ends the access token on the replica that tried; on
// another replica the access token they hold works until its exp plus the
// 30 s clock skew, and not a second longer: access_token_ttl + 30 s.
func TestDisabledUserBound(t *testing.T) {
	const ttl = 5 * time.Minute
	e := newEnv(t, 0, nil)
	r := e.AddReplica(func(c *Config) { c.AccessTokenTTL = ttl })
	// Another replica of the same gateway (the same issuer and MCP URL).
	other := e.AddReplicaWith(func(c *Config) { c.AccessTokenTTL = ttl }, func(o *Options) { o.Issuer, o.Resource = r.URL, r.URL+"/mcp" })
	a := e.RegisteredApp(r)
	st, out := e.Token(r, a.Redeem(e.Code(testbrowser.New(), r, a, "mallory@example.com")))
	if st != http.StatusOK {
		t.Fatalf("%d %v", st, out)
	}
	issued := e.Clock.Now()
	at := out["access_token"].(string)
	if err := e.IdP.SetDisabled("mallory@example.com", true); err != nil {
		t.Fatal(err)
	}
	st, o := e.Token(r, a.Refresh(out["refresh_token"].(string)))
	oauthtest.WantTokenError(t, st, o, http.StatusBadRequest, "invalid_grant")
	if _, err := oauthtest.IdentityOf(t, r, at); err == nil {
		t.Fatal("the replica whose refresh the IdP refused still accepts the access token")
	}
	e.Clock.Advance(ttl + AccessClockSkew - time.Second)
	if _, err := oauthtest.IdentityOf(t, other, at); err != nil {
		t.Fatalf("within the bound (%s after issue): %v", e.Clock.Now().Sub(issued), err)
	}
	e.Clock.Advance(time.Second)
	if _, err := oauthtest.IdentityOf(t, other, at); err == nil {
		t.Fatalf("the access token works %s after issue, past ttl + skew", e.Clock.Now().Sub(issued))
	}
}
