package shard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto/pki"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, err := pki.NewCA("test CA", 10*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	scert, skey, err := ca.Issue(pki.RoleShard, []string{"localhost"}, 365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	gcert, gkey, err := ca.Issue(pki.RoleGateway, []string{"gateway"}, 365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	brain := filepath.Join(dir, "brain")
	if err := os.MkdirAll(filepath.Join(brain, "wiki"), 0o700); err != nil {
		t.Fatal(err)
	}
	good := Files{
		Brain: brain, Wing: "payments",
		Policy:  write("policy.yaml", []byte("readers: [\"*\"]\n")),
		KeyFile: filepath.Join(dir, "keys", "shard.pem"),
		TLSCA:   write("ca.crt", ca.CertPEM()), TLSCert: write("tls.crt", scert), TLSKey: write("tls.key", skey),
	}
	gwCert, gwKey := write("gw.crt", gcert), write("gw.key", gkey)
	badPolicy := write("bad.yaml", []byte("readers: [\"nobody\"]\n"))
	badKey := write("bad.pem", []byte("not a key"))

	tests := []struct {
		name     string
		edit     func(*Files)
		wantErrs []string
		wantWarn string
	}{
		{name: "valid (the key file will be created)", edit: func(*Files) {}, wantWarn: "will create it"},
		{name: "gateway certificate", edit: func(f *Files) { f.TLSCert, f.TLSKey = gwCert, gwKey },
			wantErrs: []string{"has role gateway; a shard needs a shard-role certificate"}},
		{name: "key of another certificate", edit: func(f *Files) { f.TLSKey = gwKey },
			wantErrs: []string{"the key does not belong to the certificate"}},
		{name: "bad policy, key file, brain and wing", edit: func(f *Files) {
			f.Policy, f.KeyFile, f.Brain, f.Wing = badPolicy, badKey, dir+"/nowhere", "Pay Ments"
		}, wantErrs: []string{"--policy", "--key-file", "--brain", "no such file", "--wing"}},
		{name: "an empty directory is a new brain", edit: func(f *Files) { f.Brain = t.TempDir() }, wantWarn: "will create it"},
		{name: "nothing given", edit: func(f *Files) { *f = Files{} },
			wantErrs: []string{"--brain is required", "--wing is required", "--policy is required", "--tls-ca is required", "--tls-cert is required", "--tls-key is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good
			tt.edit(&f)
			warn, err := Check(f, time.Now())
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(tt.wantErrs) > 0 && !errors.Is(err, ErrCheck) {
				t.Fatalf("err = %v, want ErrCheck", err)
			}
			for _, w := range tt.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
			if got := strings.Join(warn, "\n"); !strings.Contains(got, tt.wantWarn) {
				t.Errorf("warnings %q, want %q", got, tt.wantWarn)
			}
		})
	}
	if _, err := os.Stat(good.KeyFile); err == nil {
		t.Fatal("Check created the key file; it must change nothing")
	}
}
