package auth

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
)

// emailCase is one line of testdata/emails.txt: an input and its canonical
// form, or refused.
type emailCase struct {
	in, want string
	refused  bool
}

func readEmailCases(t testing.TB, path string) []emailCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []emailCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, quoted, ok := strings.Cut(line, " ")
		in, err := strconv.Unquote(quoted)
		if !ok || err != nil {
			t.Fatalf("%s: bad line %q: %v", path, line, err)
		}
		out = append(out, emailCase{in: in, want: want, refused: want == "!"})
	}
	if len(out) < 20 {
		t.Fatalf("%s: only %d cases", path, len(out))
	}
	return out
}

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
	for _, c := range readEmailCases(t, "testdata/emails.txt") {
		caps := open.Caps(c.in, nil)
		tok, _, err := m.Mint(c.in, brain.CapRead, time.Time{})
		if c.refused {
			if caps != 0 {
				t.Errorf("Policy.Caps(%q) = %v, want none", c.in, caps)
			}
			if err == nil {
				t.Errorf("Mint(%q) signed a token", c.in)
			}
			if _, err := ParsePrincipal("email:" + c.in); err == nil {
				t.Errorf("ParsePrincipal(email:%q) accepted", c.in)
			}
			continue
		}
		if caps == 0 {
			t.Errorf("Policy.Caps(%q) = none, want read", c.in)
		}
		if err != nil {
			t.Errorf("Mint(%q): %v", c.in, err)
			continue
		}
		claims, err := v.Verify(tok)
		if err != nil || claims.Email != c.want {
			t.Errorf("Verify(token for %q) = %q, %v; want %q", c.in, claims.Email, err, c.want)
		}
	}
}

// TestCanonicalEmail runs testdata/emails.txt through the rule itself.
func TestCanonicalEmail(t *testing.T) {
	for _, c := range readEmailCases(t, "testdata/emails.txt") {
		got, err := CanonicalEmail(c.in)
		switch {
		case c.refused && err == nil:
			t.Errorf("CanonicalEmail(%q) = %q, want a refusal", c.in, got)
		case c.refused && (!errors.Is(err, ErrBadEmail) || got != ""):
			t.Errorf("CanonicalEmail(%q) = %q, %v; want ErrBadEmail", c.in, got, err)
		case !c.refused && (err != nil || got != c.want):
			t.Errorf("CanonicalEmail(%q) = %q, %v; want %q", c.in, got, err, c.want)
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
