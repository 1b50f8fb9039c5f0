package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

func TestPolicyCaps(t *testing.T) {
	p := Policy{
		Readers:  []string{"domain:acme.com", "group:auditors"},
		Writers:  []string{"email:Writer@Partner.io", "group:eng"},
		Curators: []string{"email:cur@acme.com", "group:Curators"},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	rw := brain.CapRead | brain.CapWrite
	all := brain.CapRead | brain.CapWrite | brain.CapCurate
	tests := []struct {
		name   string
		email  string
		groups []string
		want   brain.Caps
	}{
		{"domain reader", "ann@acme.com", nil, brain.CapRead},
		{"domain match is case-insensitive via canonical email", "  Ann@ACME.com ", nil, brain.CapRead},
		{"subdomain is not the domain", "ann@eu.acme.com", nil, 0},
		{"domain suffix trick", "ann@evilacme.com", nil, 0},
		{"domain is after the @", "acme.com@evil.io", nil, 0},
		{"quoted local part refused by the email rule", `"x@evil.io"@acme.com`, nil, 0},
		{"Kelvin sign is not k", "\u212aate@acme.com", nil, 0},
		{"group reader", "bob@other.org", []string{"auditors"}, brain.CapRead},
		{"email writer implies read, canonicalised both sides", "writer@partner.io", nil, rw},
		{"group writer", "bob@other.org", []string{"eng"}, rw},
		{"curator implies write and read", "cur@acme.com", nil, all},
		{"group names are case-sensitive", "bob@other.org", []string{"curators"}, 0},
		{"curator group", "bob@other.org", []string{"Curators"}, all},
		{"strongest list wins", "ann@acme.com", []string{"eng", "Curators"}, all},
		{"stranger", "eve@evil.io", []string{"nobody"}, 0},
		{"empty email gets nothing", "", []string{"eng"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Caps(tt.email, tt.groups); got != tt.want {
				t.Fatalf("Caps(%q, %v) = %v, want %v", tt.email, tt.groups, got, tt.want)
			}
		})
	}
}

func TestPolicyWildcard(t *testing.T) {
	p := Policy{Readers: []string{"*"}, Writers: []string{"group:eng"}}
	if got := p.Caps("anyone@anywhere.net", nil); got != brain.CapRead {
		t.Fatalf("wildcard reader: got %v", got)
	}
	if got := p.Caps("", nil); got != 0 {
		t.Fatalf("wildcard must not admit an empty email: got %v", got)
	}
	if got := (Policy{Curators: []string{"*"}}).Caps("x@y.z", nil); got != brain.CapRead|brain.CapWrite|brain.CapCurate {
		t.Fatalf("wildcard curator: got %v", got)
	}
	if got := (Policy{}).Caps("x@y.z", []string{"eng"}); got != 0 {
		t.Fatalf("empty policy: got %v", got)
	}
}

func TestParsePrincipal(t *testing.T) {
	tests := []struct {
		in      string
		want    Principal
		wantErr bool
	}{
		{"*", Principal{Kind: PrincipalAnyone}, false},
		{" * ", Principal{Kind: PrincipalAnyone}, false},
		{"email:A@B.c", Principal{PrincipalEmail, "a@b.c"}, false},
		{"EMAIL: a@b.c ", Principal{PrincipalEmail, "a@b.c"}, false},
		{"domain:Acme.COM", Principal{PrincipalDomain, "acme.com"}, false},
		{"group:Eng Team", Principal{PrincipalGroup, "Eng Team"}, false},
		{"group:realm:admin", Principal{PrincipalGroup, "realm:admin"}, false},
		{"", Principal{}, true},
		{"**", Principal{}, true},
		{"acme.com", Principal{}, true},
		{"user:a@b.c", Principal{}, true},
		{"email:", Principal{}, true},
		{"email:nobody", Principal{}, true},
		{"email:@b.c", Principal{}, true},
		{"email:a@", Principal{}, true},
		{"email:a b@c.d", Principal{}, true},
		{"domain:", Principal{}, true},
		{"domain:@acme.com", Principal{}, true},
		{"domain:.acme.com", Principal{}, true},
		{"group:", Principal{}, true},
		{"group:a\nb", Principal{}, true},
		{"group:" + strings.Repeat("x", MaxPrincipalBytes), Principal{}, true},
	}
	for _, tt := range tests {
		got, err := ParsePrincipal(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePrincipal(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil && !errors.Is(err, ErrBadPrincipal) && !errors.Is(err, ErrPolicyTooLarge) {
			t.Errorf("ParsePrincipal(%q) err = %v, want ErrBadPrincipal or ErrPolicyTooLarge", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("ParsePrincipal(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestPolicyValidateReportsEverything(t *testing.T) {
	p := Policy{
		Readers:  []string{"*", "bogus"},
		Writers:  []string{"email:ok@x.y", "email:nope", "domain:"},
		Curators: []string{"group:"},
	}
	err := p.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad policy")
	}
	msg := err.Error()
	for _, want := range []string{"readers[1]", "writers[1]", "writers[2]", "curators[0]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not name %s:\n%s", want, msg)
		}
	}
	for _, notWant := range []string{"readers[0]", "writers[0]"} {
		if strings.Contains(msg, notWant) {
			t.Errorf("error blames valid entry %s:\n%s", notWant, msg)
		}
	}
	if !errors.Is(err, ErrBadPrincipal) {
		t.Errorf("errors.Is(err, ErrBadPrincipal) = false")
	}
	if n := strings.Count(msg, "\n") + 1; n != 4 {
		t.Errorf("want 4 problems, got %d:\n%s", n, msg)
	}
}

func TestLoadPolicy(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    Policy
		wantErr string // substring; "" = success
	}{
		{"full", "readers: [\"*\"]\nwriters:\n  - group:eng\ncurators:\n  - email:Cur@Acme.com\n",
			Policy{Readers: []string{"*"}, Writers: []string{"group:eng"}, Curators: []string{"email:Cur@Acme.com"}}, ""},
		{"only readers", "readers: [domain:acme.com]\n", Policy{Readers: []string{"domain:acme.com"}}, ""},
		{"unknown key", "readers: [\"*\"]\nadmins: [group:x]\n", Policy{}, "admins"},
		{"typo key", "reader: [\"*\"]\n", Policy{}, "reader"},
		{"bad principal", "readers: [acme.com]\n", Policy{}, "readers[0]"},
		{"unquoted wildcard", "readers:\n  - *\n", Policy{}, `quote the wildcard`},
		{"space after colon", "readers:\n  - email: a@b.c\n", Policy{}, "without a space"},
		{"empty", "", Policy{}, "empty document"},
		{"two documents", "readers: [\"*\"]\n---\nreaders: [\"*\"]\n", Policy{}, "more than one"},
		{"not a map", "- a\n- b\n", Policy{}, "auth: policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadPolicy(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadPolicy err = %v, want one containing %q", err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "auth: ") {
					t.Errorf("error %q lacks the package prefix", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Readers, ",") != strings.Join(tt.want.Readers, ",") ||
				strings.Join(got.Writers, ",") != strings.Join(tt.want.Writers, ",") ||
				strings.Join(got.Curators, ",") != strings.Join(tt.want.Curators, ",") {
				t.Fatalf("LoadPolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadPolicyLimitsAndMissing(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadPolicy(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want ErrNotExist", err)
	}
	big := filepath.Join(dir, "big.yaml")
	data := "readers:\n" + strings.Repeat("  - group:abcdefghijklmnop\n", MaxPolicyFileBytes/26+1)
	if err := os.WriteFile(big, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy(big); !errors.Is(err, ErrPolicyTooLarge) {
		t.Fatalf("big file: err = %v, want ErrPolicyTooLarge", err)
	}
	many := Policy{Readers: make([]string, MaxPrincipals+1)}
	for i := range many.Readers {
		many.Readers[i] = "*"
	}
	if err := many.Validate(); !errors.Is(err, ErrPolicyTooLarge) {
		t.Fatalf("too many principals: err = %v, want ErrPolicyTooLarge", err)
	}
}
