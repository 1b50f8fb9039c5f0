package pki

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// File names used by InitDir and IssueFiles. Issued files follow the
// Kubernetes TLS secret convention (tls.crt, tls.key, ca.crt), so a
// directory can become a secret as is.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
	CertFile   = "tls.crt"
	KeyFile    = "tls.key"
)

// WriteFiles writes each file of files (name → content) into dir, creating
// dir (0700) if needed. Each file is replaced atomically and durably
// (package atomicfile), so a crash leaves either the old or the new
// content. Names ending in ".key" get mode 0600, others 0644. Names must be
// plain file names (no path separators).
func WriteFiles(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("pki: write files: invalid file name %q", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pki: write files: %w", err)
	}
	for _, name := range names {
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(name, ".key") {
			mode = 0o600
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), files[name], mode); err != nil {
			return fmt.Errorf("pki: write %s: %w", name, err)
		}
	}
	return nil
}

// InitDir creates a new CA (DefaultCAValidity) in dir as ca.crt and ca.key
// (0600). It refuses, with ErrExists and without touching anything, when dir
// already holds either file.
func InitDir(dir string) (*CA, error) {
	for _, n := range []string{CACertFile, CAKeyFile} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrExists, filepath.Join(dir, n))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pki: init %s: %w", dir, err)
		}
	}
	ca, err := NewCA("Brainstem internal CA", DefaultCAValidity)
	if err != nil {
		return nil, err
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := WriteFiles(dir, map[string][]byte{CACertFile: ca.CertPEM(), CAKeyFile: keyPEM}); err != nil {
		return nil, err
	}
	return ca, nil
}

// LoadDir loads the CA that InitDir wrote into dir.
func LoadDir(dir string) (*CA, error) {
	return LoadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
}

// IssueFiles loads the CA of caDir, issues a certificate for role and names
// (validity 0 means DefaultCertValidity) and writes tls.crt, tls.key (0600)
// and ca.crt into outDir, replacing earlier ones.
func IssueFiles(caDir, outDir string, role Role, names []string, validity time.Duration) error {
	validity = cmp.Or(validity, DefaultCertValidity)
	ca, err := LoadDir(caDir)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue(role, names, validity)
	if err != nil {
		return err
	}
	return WriteFiles(outDir, map[string][]byte{CertFile: certPEM, KeyFile: keyPEM, CACertFile: ca.CertPEM()})
}
