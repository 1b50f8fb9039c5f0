package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	c, err := parseCert(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssue(t *testing.T) {
	ca := newCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	tests := []struct {
		role    Role
		names   []string
		wantEKU []x509.ExtKeyUsage
		dns     []string
		ips     int
	}{
		{RoleShard, []string{"localhost", "127.0.0.1", "::1", "shard-payments.brainstem.svc"}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []string{"localhost", "shard-payments.brainstem.svc"}, 2},
		{RoleGateway, []string{"gateway"}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, []string{"gateway"}, 0},
		{RoleGateway, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			certPEM, keyPEM, err := ca.Issue(tt.role, tt.names, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c := parse(t, certPEM)
			if RoleOf(c) != tt.role {
				t.Errorf("RoleOf = %q, want %q", RoleOf(c), tt.role)
			}
			if !slices.Equal(c.ExtKeyUsage, tt.wantEKU) {
				t.Errorf("EKU = %v, want %v", c.ExtKeyUsage, tt.wantEKU)
			}
			if !slices.Equal(c.DNSNames, tt.dns) || len(c.IPAddresses) != tt.ips {
				t.Errorf("SANs = %v %v", c.DNSNames, c.IPAddresses)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("does not verify against the CA: %v", err)
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				t.Errorf("key does not match: %v", err)
			}
		})
	}
}

func TestIssueRejects(t *testing.T) {
	ca := newCA(t)
	tests := []struct {
		name     string
		role     Role
		names    []string
		validity time.Duration
		want     error
	}{
		{"unknown role", "admin", []string{"x"}, time.Hour, ErrUnknownRole},
		{"empty role", "", []string{"x"}, time.Hour, ErrUnknownRole},
		{"bad name", RoleShard, []string{"bad name"}, time.Hour, ErrBadName},
		{"empty name", RoleShard, []string{""}, time.Hour, ErrBadName},
		{"label with dash", RoleShard, []string{"-x.example"}, time.Hour, ErrBadName},
		{"zero validity", RoleShard, []string{"x"}, 0, ErrValidity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := ca.Issue(tt.role, tt.names, tt.validity); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestIssueNeverOutlivesCA(t *testing.T) {
	ca := newCA(t)
	certPEM, _, err := ca.Issue(RoleShard, []string{"x"}, 365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if c := parse(t, certPEM); c.NotAfter.After(ca.Certificate().NotAfter) {
		t.Fatalf("leaf NotAfter %v after CA's %v", c.NotAfter, ca.Certificate().NotAfter)
	}
}

func TestRoleOf(t *testing.T) {
	ca := newCA(t)
	certPEM, _, err := ca.Issue(RoleShard, []string{"x"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := parse(t, certPEM)
	if RoleOf(nil) != "" || RoleOf(ca.Certificate()) != "" {
		t.Fatal("RoleOf of nil or the CA is not empty")
	}
	two := *c
	two.URIs = append(slices.Clone(c.URIs), mustURL(t, "brainstem://role/gateway"))
	if RoleOf(&two) != "" {
		t.Fatal("two different roles must give no role")
	}
	unknown := *c
	unknown.URIs = []*neturl.URL{mustURL(t, "brainstem://role/admin")}
	if RoleOf(&unknown) != "" {
		t.Fatal("an unknown role must give no role")
	}

	// Certificates without a role URI SAN (the Helm chart's) carry the role
	// in the CommonName; a role URI SAN, when present, always wins.
	cnTests := []struct {
		cn   string
		uris []*neturl.URL
		isCA bool
		want Role
	}{
		{"gateway", nil, false, RoleGateway},
		{"shard:payments", nil, false, RoleShard},
		{"shard:", nil, false, ""},
		{"shard", nil, false, ""},
		{"Gateway", nil, false, ""},
		{"admin", nil, false, ""},
		{"gateway", nil, true, ""},
		{"gateway", []*neturl.URL{mustURL(t, "brainstem://role/shard")}, false, RoleShard},
		{"shard:x", []*neturl.URL{mustURL(t, "brainstem://role/admin")}, false, ""},
		{"gateway", []*neturl.URL{mustURL(t, "https://example.com/")}, false, RoleGateway},
	}
	for _, tt := range cnTests {
		cert := *c
		cert.Subject.CommonName, cert.URIs, cert.IsCA = tt.cn, tt.uris, tt.isCA
		if got := RoleOf(&cert); got != tt.want {
			t.Errorf("RoleOf(CN=%q, URIs=%v, CA=%v) = %q, want %q", tt.cn, tt.uris, tt.isCA, got, tt.want)
		}
	}
}

func TestParseRole(t *testing.T) {
	if r, err := ParseRole(" Gateway "); err != nil || r != RoleGateway {
		t.Fatalf("ParseRole = %q, %v", r, err)
	}
	if _, err := ParseRole("root"); !errors.Is(err, ErrUnknownRole) {
		t.Fatalf("err = %v", err)
	}
}

func TestCARoundTrip(t *testing.T) {
	ca := newCA(t)
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseCA(ca.CertPEM(), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Certificate().Equal(ca.Certificate()) {
		t.Fatal("certificate changed")
	}
	// A certificate it issues verifies against the original.
	certPEM, _, err := back.Issue(RoleGateway, []string{"g"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	if _, err := parse(t, certPEM).Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}

	other := newCA(t)
	otherKey, _ := other.KeyPEM()
	leafPEM, leafKey, _ := ca.Issue(RoleShard, []string{"x"}, time.Hour)
	tests := []struct {
		name      string
		cert, key []byte
	}{
		{"key of another CA", ca.CertPEM(), otherKey},
		{"leaf is not a CA", leafPEM, leafKey},
		{"no PEM", []byte("hello"), keyPEM},
		{"no key", ca.CertPEM(), []byte("-----BEGIN NOTHING-----\nAA==\n-----END NOTHING-----\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseCA(tt.cert, tt.key); !errors.Is(err, ErrBadPEM) {
				t.Fatalf("err = %v, want ErrBadPEM", err)
			}
		})
	}
}

func TestInitDirAndIssueFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	ca, err := InitDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(dir, CAKeyFile), 0o600)
	assertMode(t, filepath.Join(dir, CACertFile), 0o644)
	// A second init refuses and leaves the CA alone.
	before, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if _, err := InitDir(dir); !errors.Is(err, ErrExists) {
		t.Fatalf("second InitDir: %v, want ErrExists", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if string(before) != string(after) {
		t.Fatal("second InitDir changed the key")
	}

	out := filepath.Join(t.TempDir(), "gw")
	if err := IssueFiles(dir, out, RoleGateway, []string{"gateway"}, 0); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(out, KeyFile), 0o600)
	certPEM, _ := os.ReadFile(filepath.Join(out, CertFile))
	keyPEM, _ := os.ReadFile(filepath.Join(out, KeyFile))
	caPEM, _ := os.ReadFile(filepath.Join(out, CACertFile))
	if string(caPEM) != string(ca.CertPEM()) {
		t.Fatal("ca.crt in the output is not the CA")
	}
	if RoleOf(parse(t, certPEM)) != RoleGateway {
		t.Fatal("issued file has the wrong role")
	}
	if _, err := ClientTLS(caPEM, certPEM, keyPEM, "localhost"); err != nil {
		t.Fatal(err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(out, ".*tmp*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}

	if err := IssueFiles(dir, out, "admin", nil, 0); !errors.Is(err, ErrUnknownRole) {
		t.Fatalf("bad role: %v", err)
	}
	if err := IssueFiles(t.TempDir(), out, RoleShard, nil, 0); err == nil {
		t.Fatal("IssueFiles without a CA succeeded")
	}
}

func TestWriteFilesRejectsPaths(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"../x.key", "a/b", "", ".."} {
		if err := WriteFiles(dir, map[string][]byte{"ok.crt": []byte("x"), name: []byte("y")}); err == nil {
			t.Errorf("WriteFiles accepted %q", name)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused WriteFiles wrote %d files", len(entries))
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Fatalf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

// handshake runs a real TLS 1.3 handshake over an in-memory pipe.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srvErr := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			// The client verifies the server after its Finished; read so
			// the client's alerts reach us.
			buf := make([]byte, 1)
			_, err = s.Read(buf)
			if err != nil && strings.Contains(err.Error(), "EOF") {
				err = nil
			}
		}
		a.Close()
		srvErr <- err
	}()
	c := tls.Client(b, client)
	cerr := c.Handshake()
	if cerr == nil {
		c.Close()
	}
	b.Close()
	return <-srvErr, cerr
}

func TestTLSConfigs(t *testing.T) {
	ca := newCA(t)
	other := newCA(t)
	shardCert, shardKey, _ := ca.Issue(RoleShard, []string{"localhost"}, time.Hour)
	gwCert, gwKey, _ := ca.Issue(RoleGateway, []string{"gw"}, time.Hour)
	otherGW, otherGWKey, _ := other.Issue(RoleGateway, []string{"gw"}, time.Hour)
	// A gateway certificate pretending to serve.
	srv, err := ServerTLS(ca.CertPEM(), shardCert, shardKey)
	if err != nil {
		t.Fatal(err)
	}
	if srv.MinVersion != tls.VersionTLS13 || srv.ClientAuth != tls.RequireAndVerifyClientCert || !slices.Equal(srv.NextProtos, []string{ALPN}) {
		t.Fatalf("server config %+v", srv)
	}
	gwClient, err := ClientTLS(ca.CertPEM(), gwCert, gwKey, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if _, cerr := handshake(t, srv, gwClient); cerr != nil {
		t.Fatalf("gateway → shard: %v", cerr)
	}
	otherClient, _ := ClientTLS(ca.CertPEM(), otherGW, otherGWKey, "localhost")
	if serr, _ := handshake(t, srv, otherClient); serr == nil {
		t.Fatal("server accepted a client certificate from another CA")
	}
	wrongName, _ := ClientTLS(ca.CertPEM(), gwCert, gwKey, "not-the-shard")
	if _, cerr := handshake(t, srv, wrongName); cerr == nil {
		t.Fatal("client accepted a server under the wrong name")
	}
	// A shard-role client is fine at the TLS layer (proto refuses its mint).
	shardClient, _ := ClientTLS(ca.CertPEM(), shardCert, shardKey, "localhost")
	if _, cerr := handshake(t, srv, shardClient); cerr != nil {
		t.Fatalf("shard → shard: %v", cerr)
	}
	// A gateway certificate cannot serve (no server auth usage).
	gwServer, err := ServerTLS(ca.CertPEM(), gwCert, gwKey)
	if err != nil {
		t.Fatal(err)
	}
	gwClient2, _ := ClientTLS(ca.CertPEM(), gwCert, gwKey, "gw")
	if _, cerr := handshake(t, gwServer, gwClient2); cerr == nil {
		t.Fatal("client accepted a gateway certificate as a server")
	}
	// A server certificate of this CA without the shard role is refused by
	// the client's role check.
	noRoleCert, noRoleKey := issueWithoutRole(t, ca)
	noRoleServer, err := ServerTLS(ca.CertPEM(), noRoleCert, noRoleKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, cerr := handshake(t, noRoleServer, gwClient); cerr == nil || !strings.Contains(cerr.Error(), "role") {
		t.Fatalf("client accepted a server without the shard role: %v", cerr)
	}

	if _, err := ServerTLS([]byte("junk"), shardCert, shardKey); !errors.Is(err, ErrBadPEM) {
		t.Fatalf("bad CA PEM: %v", err)
	}
	if _, err := ClientTLS(ca.CertPEM(), shardCert, gwKey, "x"); err == nil {
		t.Fatal("mismatched key pair accepted")
	}
}

func mustURL(t *testing.T, s string) *neturl.URL {
	t.Helper()
	u, err := neturl.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// issueWithoutRole signs a server certificate for localhost that carries no
// role URI.
func issueWithoutRole(t *testing.T, ca *CA) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := newSerial()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return encodeCert(der), keyPEM
}
