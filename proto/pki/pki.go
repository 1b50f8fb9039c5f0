package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// ALPN is the TLS application protocol of brainstem/1. It equals proto.ALPN
// (pki cannot import proto without an import cycle).
const ALPN = "brainstem/1"

// Role is what a certificate's holder is in the cluster.
type Role string

// The roles.
const (
	RoleGateway Role = "gateway" // may connect to shards and mint shard tokens
	RoleShard   Role = "shard"   // serves a wing; may also act as a client
)

// roleURIPrefix prefixes the URI SAN that carries a certificate's role.
const roleURIPrefix = "brainstem://role/"

// Default validities.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
)

// Errors.
var (
	// ErrUnknownRole is returned for a role other than RoleGateway and RoleShard.
	ErrUnknownRole = errors.New("pki: unknown role (want gateway or shard)")
	// ErrBadName is returned for a name that is neither an IP address nor a DNS name.
	ErrBadName = errors.New("pki: invalid certificate name")
	// ErrBadPEM is returned when PEM input holds no usable certificate or key.
	ErrBadPEM = errors.New("pki: invalid PEM")
	// ErrExists is returned by InitDir when the directory already holds a CA.
	ErrExists = errors.New("pki: a CA already exists there")
	// ErrValidity is returned for a non-positive validity.
	ErrValidity = errors.New("pki: validity must be positive")
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleGateway || r == RoleShard }

// ParseRole parses "gateway" or "shard".
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownRole, s)
	}
	return r, nil
}

// CA is a certificate authority: a self-signed certificate and its key.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	now     func() time.Time
}

// NewCA creates a CA with a fresh ECDSA P-256 key and a self-signed
// certificate valid from now for validity.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, ErrValidity
	}
	if strings.TrimSpace(commonName) == "" {
		commonName = "Brainstem internal CA"
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"Brainstem"}},
		NotBefore:             now.Add(-5 * time.Minute), // tolerate small clock skew
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLen: 0, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse CA certificate: %w", err)
	}
	return &CA{cert: cert, certPEM: encodeCert(der), key: key, now: time.Now}, nil
}

// LoadCA reads a CA from a PEM certificate file and a PEM (PKCS#8, EC or
// PKCS#1) key file.
func LoadCA(certPEMFile, keyPEMFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certPEMFile)
	if err != nil {
		return nil, fmt.Errorf("pki: read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPEMFile)
	if err != nil {
		return nil, fmt.Errorf("pki: read CA key: %w", err)
	}
	return ParseCA(certPEM, keyPEM)
}

// ParseCA builds a CA from PEM bytes. The key must match the certificate and
// the certificate must be a CA certificate.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: certificate %q is not a CA", ErrBadPEM, cert.Subject.CommonName)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%w: CA key does not match CA certificate", ErrBadPEM)
	}
	return &CA{cert: cert, certPEM: encodeCert(cert.Raw), key: key, now: time.Now}, nil
}

// Certificate returns the CA certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// KeyPEM returns the CA private key in PEM (PKCS#8).
func (ca *CA) KeyPEM() ([]byte, error) { return encodeKey(ca.key) }

// Issue creates a fresh key and a certificate for role, signed by the CA.
// names become the certificate's SANs: IP addresses (e.g. 127.0.0.1, ::1) as
// IP SANs, anything else as DNS names (e.g. localhost,
// shard-payments.brainstem.svc). The first name is also the common name.
// Shard certificates may serve and connect (server+client auth); gateway
// certificates may only connect (client auth). The certificate never
// outlives the CA.
func (ca *CA) Issue(role Role, names []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if !role.Valid() {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownRole, role)
	}
	if validity <= 0 {
		return nil, nil, ErrValidity
	}
	roleURI, err := url.Parse(roleURIPrefix + string(role))
	if err != nil {
		return nil, nil, fmt.Errorf("pki: role URI: %w", err)
	}
	var dns []string
	var ips []net.IP
	for _, n := range names {
		n = strings.TrimSpace(n)
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if !ValidHostName(strings.TrimPrefix(n, "*.")) { // a host name, or a "*." wildcard of one
			return nil, nil, fmt.Errorf("%w: %q (want an IP address or a DNS name)", ErrBadName, n)
		}
		dns = append(dns, n)
	}
	cn := string(role)
	if len(names) > 0 {
		cn = strings.TrimSpace(names[0])
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := ca.now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	eku := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if role == RoleShard {
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"Brainstem"}, OrganizationalUnit: []string{string(role)}},
		NotBefore:    now.Add(-5 * time.Minute), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: eku,
		DNSNames: dns, IPAddresses: ips, URIs: []*url.URL{roleURI},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

// RoleOf returns the role a certificate carries: its
// "brainstem://role/<role>" URI SAN, or — only when it has no such URI SAN —
// the CommonName forms "gateway" and "shard:<wing>" that the Helm chart's
// generated certificates use (Helm's genSignedCert cannot write URI SANs).
// It returns "" for none, an unknown role, more than one, or a CA
// certificate. It does not verify the certificate: call it on a verified
// leaf only, from the internal CA.
func RoleOf(cert *x509.Certificate) Role {
	if cert == nil || cert.IsCA {
		return ""
	}
	var found Role
	sawURI := false
	for _, u := range cert.URIs {
		s := u.String()
		if !strings.HasPrefix(s, roleURIPrefix) {
			continue
		}
		sawURI = true
		r := Role(strings.TrimPrefix(s, roleURIPrefix))
		if !r.Valid() || (found != "" && found != r) {
			return ""
		}
		found = r
	}
	if sawURI {
		return found
	}
	cn := cert.Subject.CommonName
	switch {
	case cn == string(RoleGateway):
		return RoleGateway
	case strings.HasPrefix(cn, string(RoleShard)+":") && len(cn) > len(RoleShard)+1:
		return RoleShard
	}
	return ""
}

// baseTLS is what both sides of a connection share: TLS 1.3 only, the
// side's own key pair, NextProtos [ALPN]; and the pool of the CA it trusts
// (side: "server" or "client", for errors).
func baseTLS(caPEM, certPEM, keyPEM []byte, side string) (*tls.Config, *x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("%w: no CA certificate found", ErrBadPEM)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s key pair: %w", side, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}, NextProtos: []string{ALPN}}, pool, nil
}

// ServerTLS returns a server configuration for a shard: TLS 1.3 only, the
// shard's certificate, client certificates required and verified against the
// CA, and NextProtos [ALPN].
func ServerTLS(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	cfg, pool, err := baseTLS(caPEM, certPEM, keyPEM, "server")
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return cfg, nil
}

// ClientTLS returns a client configuration for a gateway (or a shard acting
// as a client): TLS 1.3 only, the client's certificate, the server verified
// against the CA under serverName, NextProtos [ALPN]. The server must also
// present a shard-role certificate: a gateway certificate cannot serve.
func ClientTLS(caPEM, certPEM, keyPEM []byte, serverName string) (*tls.Config, error) {
	cfg, pool, err := baseTLS(caPEM, certPEM, keyPEM, "client")
	if err != nil {
		return nil, err
	}
	cfg.RootCAs, cfg.ServerName = pool, serverName
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("pki: server presented no certificate")
		}
		if r := RoleOf(cs.PeerCertificates[0]); r != RoleShard {
			return fmt.Errorf("pki: server certificate has role %q, want %q", r, RoleShard)
		}
		return nil
	}
	return cfg, nil
}

func newSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	c, _, err := nextCert(certPEM)
	if err == nil && c == nil {
		err = fmt.Errorf("%w: no CERTIFICATE block", ErrBadPEM)
	}
	return c, err
}

// nextCert parses the first CERTIFICATE block of pemBytes and returns the
// bytes after it; (nil, nil, nil) when there is none.
func nextCert(pemBytes []byte) (*x509.Certificate, []byte, error) {
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, nil, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
		}
		return c, rest, nil
	}
}

func parseKey(keyPEM []byte) (crypto.Signer, error) {
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("%w: no private key block", ErrBadPEM)
		}
		var k any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadPEM, err)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%w: unsupported key type %T", ErrBadPEM, k)
		}
		return s, nil
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// ValidHostName reports whether n is an RFC 1123 host name: labels of 1 to
// 63 letters, digits and '-' (not at either end), separated by '.', at
// most 253 bytes.
func ValidHostName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
