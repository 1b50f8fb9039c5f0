package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

func TestServiceAccountID(t *testing.T) {
	for _, id := range []string{"ci", "release-bot", "a", "x_1", strings.Repeat("a", MaxServiceAccountIDBytes)} {
		email, err := ServiceAccountEmail(id)
		if err != nil {
			t.Fatalf("ServiceAccountEmail(%q): %v", id, err)
		}
		if c, err := CanonicalEmail(email); err != nil || c != email {
			t.Fatalf("%q is not canonical: %q, %v", email, c, err)
		}
		if got, ok := ServiceAccountID(email); !ok || got != id {
			t.Fatalf("ServiceAccountID(%q) = %q, %v", email, got, ok)
		}
	}
	for _, id := range []string{"", "Ci", "-x", "_x", "a.b", "a@b", "a b", "é", strings.Repeat("a", MaxServiceAccountIDBytes+1), "a\x00"} {
		if err := CheckServiceAccountID(id); !errors.Is(err, ErrBadServiceAccountID) {
			t.Errorf("CheckServiceAccountID(%q) = %v, want ErrBadServiceAccountID", id, err)
		}
	}
	for _, email := range []string{"ci@example.com", "ci@x.clients.brainstem.invalid", "a.b@clients.brainstem.invalid", "@clients.brainstem.invalid"} {
		if id, ok := ServiceAccountID(email); ok {
			t.Errorf("ServiceAccountID(%q) = %q, true", email, id)
		}
	}
}

// TestPolicyServiceAccounts: a service account matches its client:
// principal only (not "*", a domain or a group); a person never matches a
// client: principal; email: and domain: principals cannot name the
// reserved domain.
func TestPolicyServiceAccounts(t *testing.T) {
	p := Policy{
		Readers:  []string{"*", "group:ci", "client:reader"},
		Writers:  []string{"client:ci"},
		Curators: []string{"email:ann@acme.com"},
	}
	cp, err := CompilePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	rw := brain.CapRead | brain.CapWrite
	for _, tt := range []struct {
		email  string
		groups []string
		want   brain.Caps
	}{
		{"ci@" + ServiceAccountDomain, nil, rw},
		{"reader@" + ServiceAccountDomain, nil, brain.CapRead},
		{"other@" + ServiceAccountDomain, []string{"ci"}, 0}, // not through "*" nor a group
		{"a.b@" + ServiceAccountDomain, nil, 0},              // not an account id
		{"ci@example.com", nil, brain.CapRead},               // a person named ci: "*" only
		{"ann@acme.com", nil, rw | brain.CapCurate},
	} {
		if got := p.Caps(tt.email, tt.groups); got != tt.want {
			t.Errorf("Policy.Caps(%q, %v) = %v, want %v", tt.email, tt.groups, got, tt.want)
		}
		if got := cp.Caps(tt.email, tt.groups); got != tt.want {
			t.Errorf("CompiledPolicy.Caps(%q, %v) = %v, want %v", tt.email, tt.groups, got, tt.want)
		}
		if got, groups := cp.Grant(tt.email, tt.groups); got != tt.want || IsServiceAccountDomain(tt.email) && len(groups) != 0 {
			t.Errorf("Grant(%q) = %v, %v", tt.email, got, groups)
		}
	}
	for _, bad := range []string{"email:ci@clients.brainstem.invalid", "email:x.y@clients.brainstem.invalid",
		"domain:clients.brainstem.invalid", "domain:CLIENTS.brainstem.invalid", "client:", "client:Ci", "client:a.b",
		"client:" + strings.Repeat("a", 64)} {
		if _, err := ParsePrincipal(bad); !errors.Is(err, ErrBadPrincipal) {
			t.Errorf("ParsePrincipal(%q) = %v, want ErrBadPrincipal", bad, err)
		}
	}
	if pr, err := ParsePrincipal(" Client: ci "); err != nil || pr != (Principal{Kind: PrincipalClient, Value: "ci"}) {
		t.Errorf("ParsePrincipal(client) = %+v, %v", pr, err)
	}
}
