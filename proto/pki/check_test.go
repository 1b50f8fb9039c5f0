package pki

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckIdentity(t *testing.T) {
	const year = 365 * 24 * time.Hour
	ca, err := NewCA("test CA", 10*year)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other CA", 10*year)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	gwCert, gwKey, err := ca.Issue(RoleGateway, []string{"gateway"}, year)
	if err != nil {
		t.Fatal(err)
	}
	shCert, shKey, err := ca.Issue(RoleShard, []string{"localhost"}, year)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, err := other.Issue(RoleGateway, []string{"gateway"}, year)
	if err != nil {
		t.Fatal(err)
	}
	_, strayKey, err := ca.Issue(RoleGateway, []string{"gateway"}, year)
	if err != nil {
		t.Fatal(err)
	}
	noRoleCert, noRoleKey := issueWithoutRole(t, ca)
	oldCA := *ca
	oldCA.now = func() time.Time { return now.Add(-48 * time.Hour) }
	expCert, expKey, err := oldCA.Issue(RoleGateway, []string{"gateway"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	soonCert, soonKey, err := ca.Issue(RoleShard, []string{"localhost"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		ca        []byte
		cert, key []byte
		role      Role
		wantErrs  []string // substrings, each must appear
		wantWarn  string
	}{
		{name: "gateway", ca: ca.CertPEM(), cert: gwCert, key: gwKey, role: RoleGateway},
		{name: "shard", ca: ca.CertPEM(), cert: shCert, key: shKey, role: RoleShard},
		{name: "shard certificate on a gateway", ca: ca.CertPEM(), cert: shCert, key: shKey, role: RoleGateway,
			wantErrs: []string{"has role shard; a gateway needs a gateway-role certificate"}},
		{name: "gateway certificate on a shard", ca: ca.CertPEM(), cert: gwCert, key: gwKey, role: RoleShard,
			wantErrs: []string{"has role gateway; a shard needs a shard-role certificate", "for server use"}},
		{name: "no role", ca: ca.CertPEM(), cert: noRoleCert, key: noRoleKey, role: RoleShard,
			wantErrs: []string{"has role none"}, wantWarn: "renew it soon"},
		{name: "key of another certificate", ca: ca.CertPEM(), cert: gwCert, key: strayKey, role: RoleGateway,
			wantErrs: []string{"the key does not belong to the certificate"}},
		{name: "another CA", ca: ca.CertPEM(), cert: otherCert, key: otherKey, role: RoleGateway,
			wantErrs: []string{"does not chain to the CA bundle"}},
		{name: "expired", ca: ca.CertPEM(), cert: expCert, key: expKey, role: RoleGateway,
			wantErrs: []string{"expired on"}},
		{name: "expiring soon", ca: ca.CertPEM(), cert: soonCert, key: soonKey, role: RoleShard,
			wantWarn: "renew it soon"},
		{name: "CA bundle without a CA", ca: gwCert, cert: gwCert, key: gwKey, role: RoleGateway,
			wantErrs: []string{"is not a CA certificate"}},
		{name: "garbage everywhere", ca: []byte("x"), cert: []byte("y"), key: []byte("z"), role: RoleGateway,
			wantErrs: []string{"CA bundle:", "certificate:", "key:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warn, err := CheckIdentity(tt.ca, tt.cert, tt.key, tt.role, now)
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(tt.wantErrs) > 0 && !errors.Is(err, ErrIdentity) {
				t.Fatalf("err = %v, want ErrIdentity", err)
			}
			for _, w := range tt.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
			got := strings.Join(warn, "\n")
			if (tt.wantWarn == "") != (got == "") || !strings.Contains(got, tt.wantWarn) {
				t.Errorf("warnings = %q, want %q", got, tt.wantWarn)
			}
		})
	}
}

func TestPrivateKeyDER(t *testing.T) {
	ca := newCA(t)
	_, key, err := ca.Issue(RoleShard, []string{"localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a, err := PrivateKeyDER(key)
	if err != nil {
		t.Fatal(err)
	}
	// The same key with other PEM bytes around it gives the same DER.
	b, err := PrivateKeyDER(append([]byte("# comment\n"), key...))
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("DER differs: %v", err)
	}
	if _, err := PrivateKeyDER([]byte("nope")); !errors.Is(err, ErrBadPEM) {
		t.Fatalf("err = %v, want ErrBadPEM", err)
	}
}
