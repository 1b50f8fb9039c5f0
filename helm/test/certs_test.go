package helmtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
)

// secretData returns a rendered Secret's decoded data.
func secretData(t *testing.T, r release, name string) map[string][]byte {
	t.Helper()
	s := r.get(t, "Secret", name)
	out := map[string][]byte{}
	for k, v := range digMap(t, s, "data") {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			t.Fatalf("Secret %s key %s: %v", name, k, err)
		}
		out[k] = b
	}
	return out
}

func parseCert(t *testing.T, what string, pemBytes []byte) *x509.Certificate {
	t.Helper()
	b, rest := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("%s: no PEM certificate", what)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		t.Fatalf("%s: trailing data after the certificate", what)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

// mountedSecret returns the Secret a workload mounts a file from.
func mountedSecret(t *testing.T, o obj, file string) string {
	t.Helper()
	src, ok := projectedFiles(t, o)[file]
	if !ok || !strings.HasPrefix(src, "Secret/") {
		t.Fatalf("%s %s: %s is not mounted from a Secret", o.kind(), o.name(), file)
	}
	return strings.TrimPrefix(src, "Secret/")
}

// checkMTLS checks the certificates the pods get, per mtls.mode.
func checkMTLS(t *testing.T, r release, v scenarioValues, cfg gatewayConfig) {
	t.Helper()
	gwSecret := mountedSecret(t, r.one(t, "Deployment"), cfg.Shards.TLS.CertFile)
	shardSecrets := map[string]string{}
	for _, s := range r.all("StatefulSet") {
		_, flags := args(t, container(t, s))
		shardSecrets[flags["wing"]] = mountedSecret(t, s, flags["tls-cert"])
	}
	switch v.MTLS.Mode {
	case "generate":
		checkGeneratedCerts(t, r, cfg, gwSecret, shardSecrets)
	case "certManager":
		checkCertManager(t, r, cfg, gwSecret, shardSecrets)
	case "existingSecrets":
		if gwSecret != v.MTLS.ExistingSecrets.Gateway {
			t.Errorf("gateway mounts %s, want the existing %s", gwSecret, v.MTLS.ExistingSecrets.Gateway)
		}
		for wing, s := range shardSecrets {
			if s != v.MTLS.ExistingSecrets.Shards[wing] {
				t.Errorf("wing %s mounts %s, want the existing %s", wing, s, v.MTLS.ExistingSecrets.Shards[wing])
			}
		}
		for _, s := range r.all("Secret") {
			if s.name() == gwSecret || slices.Contains(mapValues(shardSecrets), s.name()) || strings.HasSuffix(s.name(), "-ca") {
				t.Errorf("Secret %s rendered although mtls.mode is existingSecrets", s.name())
			}
		}
	default:
		t.Fatalf("unknown mtls mode %q", v.MTLS.Mode)
	}
	if v.Gateway.TLS.ExistingSecret == "" {
		checkListenerCert(t, r, cfg)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// checkGeneratedCerts: a CA whose key no pod sees; a gateway client
// certificate with CommonName "gateway"; per wing a shard certificate with
// CommonName "shard:<wing>" valid for the server_name the gateway dials; and
// a real mutual TLS 1.3 handshake between them over loopback.
func checkGeneratedCerts(t *testing.T, r release, cfg gatewayConfig, gwSecret string, shardSecrets map[string]string) {
	t.Helper()
	caData := secretData(t, r, releaseName+"-brainstem-ca")
	ca := parseCert(t, "CA", caData["tls.crt"])
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatalf("CA certificate is not a CA: IsCA=%v usage=%v", ca.IsCA, ca.KeyUsage)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, w := range append(r.all("Deployment"), r.all("StatefulSet")...) {
		for file, src := range projectedFiles(t, w) {
			if src == "Secret/"+releaseName+"-brainstem-ca" {
				t.Errorf("%s mounts the CA Secret (%s): its key must stay out of every pod", w.name(), file)
			}
		}
	}

	gw := secretData(t, r, gwSecret)
	if string(gw["ca.crt"]) != string(caData["tls.crt"]) {
		t.Error("gateway ca.crt is not the internal CA")
	}
	gwCert := parseCert(t, "gateway", gw["tls.crt"])
	if gwCert.Subject.CommonName != "gateway" {
		t.Errorf("gateway certificate CN %q, want gateway", gwCert.Subject.CommonName)
	}
	if _, err := gwCert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("gateway certificate is not a client certificate of the CA: %v", err)
	}
	gwPair, err := tls.X509KeyPair(gw["tls.crt"], gw["tls.key"])
	if err != nil {
		t.Fatalf("gateway key pair: %v", err)
	}
	if string(gw["tls.key"]) == string(caData["tls.key"]) {
		t.Fatal("the gateway got the CA's key")
	}

	if len(shardSecrets) != len(cfg.Wings) {
		t.Fatalf("%d shard secrets for %d wings", len(shardSecrets), len(cfg.Wings))
	}
	for _, w := range cfg.Wings {
		sd := secretData(t, r, shardSecrets[w.Name])
		if string(sd["ca.crt"]) != string(caData["tls.crt"]) {
			t.Errorf("wing %s: ca.crt is not the internal CA", w.Name)
		}
		c := parseCert(t, w.Name, sd["tls.crt"])
		if c.Subject.CommonName != "shard:"+w.Name {
			t.Errorf("wing %s: certificate CN %q, want shard:%s", w.Name, c.Subject.CommonName, w.Name)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: w.ServerName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("wing %s: certificate does not serve %s under the CA: %v", w.Name, w.ServerName, err)
		}
		pair, err := tls.X509KeyPair(sd["tls.crt"], sd["tls.key"])
		if err != nil {
			t.Fatalf("wing %s: key pair: %v", w.Name, err)
		}
		handshake(t, w.Name, roots, pair, gwPair, w.ServerName)
	}
	// A shard certificate never answers for another wing's name.
	if len(cfg.Wings) > 1 {
		a, b := cfg.Wings[0], cfg.Wings[1]
		c := parseCert(t, a.Name, secretData(t, r, shardSecrets[a.Name])["tls.crt"])
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: b.ServerName}); err == nil {
			t.Errorf("wing %s's certificate is valid for wing %s's server name %s", a.Name, b.Name, b.ServerName)
		}
	}
}

// handshake runs mutual TLS 1.3 between a shard (server) and the gateway
// (client) on loopback, each side trusting only the CA, and checks what each
// side sees of the other.
func handshake(t *testing.T, wing string, roots *x509.CertPool, shard, gateway tls.Certificate, serverName string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{shard},
		ClientCAs:    roots,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serverSaw := make(chan string, 1)
	serverErr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer conn.Close()
		tc := conn.(*tls.Conn)
		if err := tc.HandshakeContext(context.Background()); err != nil {
			serverErr <- err
			return
		}
		serverSaw <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
		Certificates: []tls.Certificate{gateway},
		RootCAs:      roots,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
	})
	if err != nil {
		t.Fatalf("wing %s: gateway → shard handshake: %v", wing, err)
	}
	defer conn.Close()
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "shard:"+wing {
		t.Errorf("wing %s: gateway saw %q", wing, cn)
	}
	select {
	case cn := <-serverSaw:
		if cn != "gateway" {
			t.Errorf("wing %s: shard saw client %q, want gateway", wing, cn)
		}
	case err := <-serverErr:
		t.Fatalf("wing %s: shard side of the handshake: %v", wing, err)
	}
}

// checkListenerCert: the gateway's own HTTPS certificate is self-signed,
// valid for its Service name, and NOT issued by the internal CA (nothing that
// reaches the ingress may hold a certificate the shards trust).
func checkListenerCert(t *testing.T, r release, cfg gatewayConfig) {
	t.Helper()
	d := r.one(t, "Deployment")
	sd := secretData(t, r, mountedSecret(t, d, cfg.TLS.CertFile))
	if mountedSecret(t, d, cfg.TLS.KeyFile) != mountedSecret(t, d, cfg.TLS.CertFile) {
		t.Error("listener cert and key come from different Secrets")
	}
	c := parseCert(t, "listener", sd["tls.crt"])
	if _, err := tls.X509KeyPair(sd["tls.crt"], sd["tls.key"]); err != nil {
		t.Fatalf("listener key pair: %v", err)
	}
	self := x509.NewCertPool()
	self.AddCert(c)
	svc := releaseName + "-brainstem-gateway." + namespace + ".svc"
	if _, err := c.Verify(x509.VerifyOptions{Roots: self, DNSName: svc}); err != nil {
		t.Errorf("listener certificate is not valid for %s: %v", svc, err)
	}
	if len(r.all("Certificate")) == 0 { // generate mode: compare with the CA
		if ca, ok := r.find("Secret", releaseName+"-brainstem-ca"); ok {
			roots := x509.NewCertPool()
			roots.AddCert(parseCert(t, "CA", secretData(t, r, ca.name())["tls.crt"]))
			var uae x509.UnknownAuthorityError
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: svc}); !errors.As(err, &uae) {
				t.Errorf("listener certificate must not chain to the internal CA (err %v)", err)
			}
		}
	}
}

// checkCertManager: the Certificates carry the role both as CommonName and
// as URI SAN, and the shard ones answer for the server_name the gateway dials.
func checkCertManager(t *testing.T, r release, cfg gatewayConfig, gwSecret string, shardSecrets map[string]string) {
	t.Helper()
	bySecret := map[string]obj{}
	for _, c := range r.all("Certificate") {
		bySecret[digString(t, c, "spec", "secretName")] = c
	}
	check := func(secret, cn, role string, usage string, dnsName string) {
		c, ok := bySecret[secret]
		if !ok {
			t.Fatalf("no Certificate writes Secret %s", secret)
		}
		if got := dig(c, "spec", "commonName"); got != cn {
			t.Errorf("Certificate %s commonName %v, want %s", c.name(), got, cn)
		}
		if uris := digList(t, c, "spec", "uris"); !slices.Contains(uris, any("brainstem://role/"+role)) {
			t.Errorf("Certificate %s uris %v lack brainstem://role/%s", c.name(), uris, role)
		}
		if u := digList(t, c, "spec", "usages"); !slices.Contains(u, any(usage)) {
			t.Errorf("Certificate %s usages %v lack %s", c.name(), u, usage)
		}
		if dnsName != "" && !slices.Contains(digList(t, c, "spec", "dnsNames"), any(dnsName)) {
			t.Errorf("Certificate %s does not name %s", c.name(), dnsName)
		}
		if len(cn) > 64 {
			t.Errorf("Certificate %s commonName longer than 64", c.name())
		}
		// The issuer must be a CA issuer, so ca.crt in the Secret is the internal CA.
		ref := digMap(t, c, "spec", "issuerRef")
		if ref["kind"] == "Issuer" {
			iss := r.get(t, "Issuer", ref["name"].(string))
			caSecret := digString(t, iss, "spec", "ca", "secretName")
			caCert := r.get(t, "Certificate", caSecret)
			if dig(caCert, "spec", "isCA") != true {
				t.Errorf("Issuer %s is backed by %s, which is not a CA", iss.name(), caSecret)
			}
		}
	}
	check(gwSecret, "gateway", "gateway", "client auth", "")
	for _, w := range cfg.Wings {
		check(shardSecrets[w.Name], "shard:"+w.Name, "shard", "server auth", w.ServerName)
	}
}
