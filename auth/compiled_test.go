package auth

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
)

// TestCompiledPolicyMatchesPolicy: the compiled form grants exactly what
// Policy.Caps grants, over many generated policies and callers.
func TestCompiledPolicyMatchesPolicy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	principals := []string{"*", "email:ann@acme.com", "email:bob@acme.com", "domain:acme.com", "domain:corp.io",
		"group:eng", "group:ops", "group:payments", "group:Eng"}
	pick := func() []string {
		var out []string
		for _, p := range principals {
			if r.IntN(5) == 0 {
				out = append(out, p)
			}
		}
		return out
	}
	emails := []string{"ann@acme.com", " Bob@ACME.com", "carl@corp.io", "dan@else.org", ""}
	groupSets := [][]string{nil, {"eng"}, {"ops", "payments"}, {"Eng"}, {"eng", "ops", "payments", "other"}}
	for range 500 {
		p := Policy{Readers: pick(), Writers: pick(), Curators: pick()}
		cp, err := CompilePolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range emails {
			for _, g := range groupSets {
				want := p.Caps(e, g)
				if got := cp.Caps(e, g); got != want {
					t.Fatalf("%+v: Caps(%q, %v) = %s, Policy.Caps = %s", p, e, g, got, want)
				}
				caps, carried := cp.Grant(e, g)
				if caps != want {
					t.Fatalf("Grant caps %s, want %s", caps, want)
				}
				// The carried groups re-grant exactly the same.
				if again := cp.Caps(e, carried); again != caps {
					t.Fatalf("%+v: groups %v carried for %v re-grant %s, not %s", p, carried, g, again, caps)
				}
			}
		}
	}
}

func TestGrantGroups(t *testing.T) {
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("team-%03d", i))
	}
	p := Policy{Readers: append([]string{"group:z-readers"}, prefixed("group:", many)...), Writers: []string{"group:writers"}, Curators: []string{"email:lead@acme.com"}}
	cp, err := CompilePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		email  string
		groups []string
		caps   brain.Caps
		want   []string
	}{
		{"groups the policy does not name are dropped", "a@acme.com", []string{"unrelated", "writers", "also-unrelated"}, brain.CapRead | brain.CapWrite, []string{"writers"}},
		{"no access, no groups", "a@acme.com", []string{"unrelated"}, 0, nil},
		{"email grant carries named groups too", "lead@acme.com", []string{"writers"}, brain.CapRead | brain.CapWrite | brain.CapCurate, []string{"writers"}},
	}
	for _, tt := range tests {
		caps, got := cp.Grant(tt.email, tt.groups)
		if caps != tt.caps || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Grant = %s %v, want %s %v", tt.name, caps, got, tt.caps, tt.want)
		}
	}
	// A member of every group: bounded, and the groups that grant are kept.
	caps, got := cp.Grant("a@acme.com", append(append([]string{}, many...), "z-readers", "writers"))
	if caps != brain.CapRead|brain.CapWrite || len(got) > MaxTokenGroups || !contains(got, "writers") {
		t.Fatalf("Grant for a member of everything = %s %v", caps, got)
	}
	if cp.Caps("a@acme.com", got) != caps {
		t.Fatal("bounded groups re-grant less")
	}
	// A token carries them.
	k, _ := GenerateKey()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tok, _, err := NewMinter("payments", k, 0, clock).MintGroups("a@acme.com", caps, got, time.Time{})
	if err != nil || len(tok) > MaxShardTokenBytes {
		t.Fatalf("mint with %d groups: %v (%d bytes)", len(got), err, len(tok))
	}
	claims, err := NewTokenVerifier("payments", clock, k.Public()).Verify(tok)
	if err != nil || !reflect.DeepEqual(claims.Groups, got) {
		t.Fatalf("verified groups %v, want %v (%v)", claims.Groups, got, err)
	}
	if _, _, err := NewMinter("payments", k, 0, clock).MintGroups("a@acme.com", caps, many, time.Time{}); err == nil {
		t.Fatal("a token with 100 groups was minted")
	}
	if _, _, err := NewMinter("payments", k, 0, clock).MintGroups("a@acme.com", caps, []string{strings.Repeat("g", MaxPrincipalBytes+1)}, time.Time{}); err == nil {
		t.Fatal("a token with an over-long group was minted")
	}
}

func prefixed(p string, s []string) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = p + s[i]
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
