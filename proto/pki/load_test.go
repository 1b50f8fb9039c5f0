package pki

import (
	"crypto/tls"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadTLSFromFiles: the identities IssueFiles writes load into server
// and client configurations that complete a handshake with each other.
func TestLoadTLSFromFiles(t *testing.T) {
	dir := t.TempDir()
	caDir := filepath.Join(dir, "ca")
	if _, err := InitDir(caDir); err != nil {
		t.Fatal(err)
	}
	for role, names := range map[Role][]string{RoleShard: {"localhost"}, RoleGateway: {"gateway"}} {
		if err := IssueFiles(caDir, filepath.Join(dir, string(role)), role, names, 0); err != nil {
			t.Fatal(err)
		}
	}
	files := func(role Role) Files {
		d := filepath.Join(dir, string(role))
		return Files{CA: filepath.Join(d, CACertFile), Cert: filepath.Join(d, CertFile), Key: filepath.Join(d, KeyFile)}
	}
	srv, id, err := LoadServerTLS(files(RoleShard))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile(files(RoleShard).Key); string(id.Key) != string(want) {
		t.Error("LoadServerTLS returned another key than the file's")
	}
	if _, err := id.Check(RoleShard, time.Now()); err != nil {
		t.Errorf("Check of the loaded shard identity: %v", err)
	}
	cli, err := LoadClientTLS(files(RoleGateway), "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if serr, cerr := handshake(t, srv, cli); serr != nil || cerr != nil {
		t.Fatalf("handshake: server %v, client %v", serr, cerr)
	}
}

// TestReadFilesReportsEveryFile: every missing, unreadable or oversized
// file is reported at once, under the name the caller gave it.
func TestReadFilesReportsEveryFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.crt")
	if err := os.WriteFile(big, make([]byte, MaxPEMFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFiles(Files{CA: "", Cert: filepath.Join(dir, "missing.crt"), Key: big,
		CAName: "--tls-ca", CertName: "--tls-cert"})
	if err == nil {
		t.Fatal("ReadFiles succeeded")
	}
	for _, want := range []string{"--tls-ca is required", "--tls-cert: open ", "key file: ", "over 1048576 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
	if j, ok := err.(interface{ Unwrap() []error }); !ok || len(j.Unwrap()) != 3 {
		t.Errorf("error %v is not one error per file", err)
	}
	if _, err := LoadClientTLS(Files{}, "x"); err == nil {
		t.Error("LoadClientTLS of no files succeeded")
	}
	if _, _, err := LoadServerTLS(Files{}); err == nil {
		t.Error("LoadServerTLS of no files succeeded")
	}
}

// LoadServerTLS reads f and returns the shard's server configuration
// (ServerTLS) and the identity read, whose key a shard derives its
// stateless-reset key from.
func LoadServerTLS(f Files) (*tls.Config, Identity, error) {
	id, err := ReadFiles(f)
	if err != nil {
		return nil, Identity{}, err
	}
	tc, err := id.ServerTLS()
	if err != nil {
		return nil, Identity{}, err
	}
	return tc, id, nil
}
