package pki

import (
	"cmp"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// ExpiryWarning is how close to its end a certificate makes CheckIdentity
// warn.
const ExpiryWarning = 30 * 24 * time.Hour

// ErrIdentity wraps every problem CheckIdentity finds.
var ErrIdentity = errors.New("pki: unusable identity")

// CheckIdentity checks an mTLS identity the way its peers will judge it,
// before it is used: the CA bundle holds CA certificates valid now; the
// certificate and key parse and belong together; the certificate carries
// role want (a gateway's mints are refused otherwise), chains to the CA
// with the key usage its role needs (server auth for a shard, client auth
// for a gateway), and is valid at now. Every problem is reported
// (errors.Join, each wrapping ErrIdentity); warnings name certificates that
// end within ExpiryWarning.
func CheckIdentity(caPEM, certPEM, keyPEM []byte, want Role, now time.Time) (warnings []string, err error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrIdentity, fmt.Sprintf(format, args...)))
	}
	expiry := func(what string, c *x509.Certificate) {
		switch {
		case now.Before(c.NotBefore):
			bad("%s is not valid before %s (check the clocks)", what, c.NotBefore.UTC().Format(time.RFC3339))
		case !now.Before(c.NotAfter):
			bad("%s expired on %s; issue a new one", what, c.NotAfter.UTC().Format(time.RFC3339))
		case c.NotAfter.Sub(now) < ExpiryWarning:
			warnings = append(warnings, fmt.Sprintf("%s expires on %s (in %.0f days); renew it soon",
				what, c.NotAfter.UTC().Format(time.RFC3339), c.NotAfter.Sub(now).Hours()/24))
		}
	}

	pool := x509.NewCertPool()
	cas, err := parseCerts(caPEM)
	switch {
	case err != nil:
		bad("CA bundle: %v", err)
	default:
		for _, ca := range cas {
			if !ca.IsCA {
				bad("CA bundle: %q is not a CA certificate", ca.Subject.CommonName)
				continue
			}
			expiry(fmt.Sprintf("CA certificate %q", ca.Subject.CommonName), ca)
			pool.AddCert(ca)
		}
	}

	cert, cerr := parseCert(certPEM)
	if cerr != nil {
		bad("certificate: %v", cerr)
	}
	key, kerr := parseKey(keyPEM)
	if kerr != nil {
		bad("key: %v", kerr)
	}
	if cerr == nil && kerr == nil && !publicKeysEqual(cert.PublicKey, key.Public()) {
		bad("the key does not belong to the certificate %q (they come from different issues)", cert.Subject.CommonName)
	}
	if cerr != nil {
		return warnings, errors.Join(errs...)
	}
	what := fmt.Sprintf("certificate %q", cert.Subject.CommonName)
	if got := RoleOf(cert); got != want {
		got = cmp.Or(got, "none")
		bad("%s has role %s; a %s needs a %s-role certificate (brainstem ca issue --role %s)", what, got, want, want, want)
	}
	expiry(what, cert)
	usage, use := x509.ExtKeyUsageClientAuth, "client"
	if want == RoleShard {
		usage, use = x509.ExtKeyUsageServerAuth, "server"
	}
	if len(cas) > 0 {
		// Verify at a time the certificate is valid, so an expired one
		// (reported above) is not reported twice.
		at := now
		if now.Before(cert.NotBefore) || !now.Before(cert.NotAfter) {
			at = cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) / 2)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			bad("%s does not chain to the CA bundle for %s use: %v", what, use, err)
		}
	}
	return warnings, errors.Join(errs...)
}

// parseCerts parses every CERTIFICATE block of a PEM bundle.
func parseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := bundle; ; {
		c, r, err := nextCert(rest)
		if err != nil {
			return nil, err
		}
		if c == nil {
			break
		}
		out = append(out, c)
		rest = r
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no CERTIFICATE block", ErrBadPEM)
	}
	return out, nil
}

// PrivateKeyDER returns the PKCS#8 DER of the private key in keyPEM: a
// canonical form of the key, whatever PEM encoding the file uses (a secret
// to derive other keys from, e.g. a shard's stateless-reset key).
func PrivateKeyDER(keyPEM []byte) ([]byte, error) {
	k, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	return der, nil
}
