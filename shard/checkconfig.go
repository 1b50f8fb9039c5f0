package shard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard/remote"
)

// Files names what a shard serving over QUIC reads at start.
type Files struct {
	Brain, Wing            string
	Policy                 string // the wing policy (YAML)
	KeyFile                string // the shard-token signing key; "" or missing means one is created
	TLSCA, TLSCert, TLSKey string // the internal CA bundle and this shard's mTLS identity
	// Remote, when set, is the wing's git remote: checked and reached
	// (its refs listed) with its credentials.
	Remote *remote.Config
}

// ErrCheck wraps every problem Check finds.
var ErrCheck = errors.New("shard: invalid configuration")

// Check is `brainstem shard --check-config`: it reads what a shard would
// read at start, without serving or writing anything, and reports every
// problem at once (errors.Join, each wrapping ErrCheck): the brain
// directory (it must exist; an empty one is a new brain), the wing name,
// the policy, the signing key file (when it exists), and the
// TLS identity as gateways will judge it (shard role, key matching the
// certificate, validity at now, chain to the CA with server-auth use; see
// pki.CheckIdentity). Warnings name certificates close to expiry.
func Check(f Files, now time.Time) (warnings []string, err error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrCheck, fmt.Sprintf(format, args...)))
	}
	// The brain directory must exist (an empty one is a new brain: the
	// shard creates the wing's directories in it).
	switch st, err := os.Stat(f.Brain); {
	case f.Brain == "":
		bad("--brain is required")
	case err != nil:
		bad("--brain: %v", err)
	case !st.IsDir():
		bad("--brain %q is not a directory", f.Brain)
	}
	if f.Wing == "" {
		bad("--wing is required")
	} else if err := brain.ValidWing(f.Wing); err != nil {
		bad("--wing: %v", err)
	}
	if f.Policy == "" {
		bad("--policy is required")
	} else if _, err := auth.LoadPolicy(f.Policy); err != nil {
		bad("--policy: %v", err)
	}
	if f.KeyFile != "" {
		data, err := os.ReadFile(f.KeyFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			warnings = append(warnings, fmt.Sprintf("--key-file %s does not exist yet; the shard will create it", f.KeyFile))
		case err != nil:
			bad("--key-file: %v", err)
		default:
			if _, err := auth.ParsePrivateKeyPEM(data); err != nil {
				bad("--key-file %s: %v", f.KeyFile, err)
			}
		}
	}
	id, err := pki.ReadFiles(pki.Files{CA: f.TLSCA, Cert: f.TLSCert, Key: f.TLSKey,
		CAName: "--tls-ca", CertName: "--tls-cert", KeyName: "--tls-key"})
	if err != nil {
		each := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			each = j.Unwrap() // one line per file
		}
		for _, e := range each {
			errs = append(errs, fmt.Errorf("%w: %w", ErrCheck, e))
		}
	} else {
		w, err := id.Check(pki.RoleShard, now)
		warnings = append(warnings, w...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: --tls-cert/--tls-key: %w", ErrCheck, err))
		}
	}
	if err := checkRemote(f); err != nil {
		errs = append(errs, err)
	}
	return warnings, errors.Join(errs...)
}

// remoteProbeTimeout bounds the check's call to the git remote.
const remoteProbeTimeout = 15 * time.Second

// checkRemote says why the wing's remote would not sync: its settings, its
// credential files, or what the remote answers when its refs are listed.
func checkRemote(f Files) error {
	if f.Remote == nil {
		return nil
	}
	cfg := *f.Remote
	cfg.Wing = f.Wing
	ctx, cancel := context.WithTimeout(context.Background(), remoteProbeTimeout)
	defer cancel()
	if err := remote.Probe(ctx, cfg); err != nil {
		return fmt.Errorf("%w: --git-remote %s: %w", ErrCheck, cfg.Redacted(), err)
	}
	return nil
}
