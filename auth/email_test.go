package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/tooling/emailcases"
)

// TestEmailRuleInPoliciesAndTokens: the policy and the shard-token minter
// apply the email rule. A refused address gets no capability, not even
// through "*" or a principal it would fold onto (the Kelvin sign K is not
// k), and no token.
func TestEmailRuleInPoliciesAndTokens(t *testing.T) {
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	m := NewMinter("w", key, time.Minute, nil)
	v := NewTokenVerifier("w", nil, key.Public())
	open := Policy{Readers: []string{"*"}, Curators: []string{"email:kate@example.com", "email:stan@acme.com", "email:ann@acme.com"}}
	for _, c := range emailcases.Load(t) {
		caps := open.Caps(c.In, nil)
		tok, _, err := m.Mint(c.In, brain.CapRead, time.Time{})
		if c.Refused {
			if caps != 0 {
				t.Errorf("Policy.Caps(%q) = %v, want none", c.In, caps)
			}
			if err == nil {
				t.Errorf("Mint(%q) signed a token", c.In)
			}
			if _, err := ParsePrincipal("email:" + c.In); err == nil {
				t.Errorf("ParsePrincipal(email:%q) accepted", c.In)
			}
			continue
		}
		if caps == 0 {
			t.Errorf("Policy.Caps(%q) = none, want read", c.In)
		}
		if err != nil {
			t.Errorf("Mint(%q): %v", c.In, err)
			continue
		}
		claims, err := v.Verify(tok)
		if err != nil || claims.Email != c.Want {
			t.Errorf("Verify(token for %q) = %q, %v; want %q", c.In, claims.Email, err, c.Want)
		}
	}
}

// TestCanonicalEmail runs the email attack list (tooling/emailcases)
// through the rule itself.
func TestCanonicalEmail(t *testing.T) {
	for _, c := range emailcases.Load(t) {
		got, err := CanonicalEmail(c.In)
		switch {
		case c.Refused && err == nil:
			t.Errorf("CanonicalEmail(%q) = %q, want a refusal", c.In, got)
		case c.Refused && (!errors.Is(err, ErrBadEmail) || got != ""):
			t.Errorf("CanonicalEmail(%q) = %q, %v; want ErrBadEmail", c.In, got, err)
		case !c.Refused && (err != nil || got != c.Want):
			t.Errorf("CanonicalEmail(%q) = %q, %v; want %q", c.In, got, err, c.Want)
		}
	}
}

// TestGroupsDigest: the same group names in any order or multiplicity have
// one digest; any other set has another.
func TestGroupsDigest(t *testing.T) {
	same := [][]string{{"eng", "people-team"}, {"people-team", "eng"}, {"eng", "people-team", "eng"}, {"", "people-team", "eng", ""}}
	for _, g := range same[1:] {
		if GroupsDigest(g) != GroupsDigest(same[0]) {
			t.Errorf("GroupsDigest(%q) differs from GroupsDigest(%q)", g, same[0])
		}
	}
	if GroupsDigest(nil) != GroupsDigest([]string{}) || GroupsDigest([]string{""}) != GroupsDigest(nil) || GroupsDigest(nil) != [32]byte{} {
		t.Error("no groups must digest to the zero value")
	}
	different := [][]string{nil, {"eng"}, {"Eng"}, {"eng", "people"}, {"engpeople"}, {"eng\x00people"}, {"e", "ngpeople"}, {"eng", "people-team", "x"}}
	seen := map[[32]byte][]string{}
	for _, g := range different {
		d := GroupsDigest(g)
		if prev, ok := seen[d]; ok {
			t.Errorf("GroupsDigest(%q) == GroupsDigest(%q)", g, prev)
		}
		seen[d] = g
	}
	if got := GroupSet([]string{"b", "", "a", "b"}); strings.Join(got, ",") != "a,b" {
		t.Errorf("GroupSet = %q", got)
	}
}
