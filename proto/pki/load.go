package pki

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/brainstem/brainstem/internal/smallfile"
)

// MaxPEMFileBytes bounds each file ReadFiles reads: a CA bundle, a
// certificate chain or a key is a few kilobytes.
const MaxPEMFileBytes = 1 << 20

// Files names the PEM files of one mTLS identity: the internal CA bundle,
// the certificate and its private key (a Kubernetes TLS secret's ca.crt,
// tls.crt and tls.key). The names say what errors call each file — the flag
// or configuration key that named it ("--tls-ca", "shards.tls.ca_file");
// empty names default to "CA file", "certificate file" and "key file".
type Files struct {
	CA, Cert, Key             string
	CAName, CertName, KeyName string
}

// Identity is the PEM content of one mTLS identity.
type Identity struct {
	CA, Cert, Key []byte
}

// ReadFiles reads the three files of f, each bounded by MaxPEMFileBytes. It
// reports every problem at once (errors.Join): a file not named ("--tls-ca
// is required"), one that cannot be read, one that is too large. It is the
// one place Brainstem reads TLS material from files.
func ReadFiles(f Files) (Identity, error) {
	var errs []error
	read := func(path, name, def string) []byte {
		name = cmp.Or(name, def)
		if path == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
			return nil
		}
		b, err := smallfile.Read(path, MaxPEMFileBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return b
	}
	id := Identity{CA: read(f.CA, f.CAName, "CA file"), Cert: read(f.Cert, f.CertName, "certificate file"), Key: read(f.Key, f.KeyName, "key file")}
	if err := errors.Join(errs...); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// LoadClientTLS reads f and returns the gateway's client configuration
// (ClientTLS) for serverName.
func LoadClientTLS(f Files, serverName string) (*tls.Config, error) {
	id, err := ReadFiles(f)
	if err != nil {
		return nil, err
	}
	return id.ClientTLS(serverName)
}

// ServerTLS is ServerTLS of the identity.
func (id Identity) ServerTLS() (*tls.Config, error) { return ServerTLS(id.CA, id.Cert, id.Key) }

// ClientTLS is ClientTLS of the identity.
func (id Identity) ClientTLS(serverName string) (*tls.Config, error) {
	return ClientTLS(id.CA, id.Cert, id.Key, serverName)
}

// Check is CheckIdentity of the identity.
func (id Identity) Check(want Role, now time.Time) (warnings []string, err error) {
	return CheckIdentity(id.CA, id.Cert, id.Key, want, now)
}
