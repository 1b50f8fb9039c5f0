package helmtest

import (
	"context"
	"crypto/tls"
	"testing"

	"github.com/brainstem/brainstem/proto/pki"
)

// chartRoles returns the roles pki.RoleOf reads from the rendered gateway
// certificate and each wing's shard certificate (generate mode), and the
// PEM material.
type chartCerts struct {
	ca        []byte
	gw        map[string][]byte
	shards    map[string]map[string][]byte // wing → Secret data
	gwRole    pki.Role
	shardRole map[string]pki.Role
}

func loadChartCerts(t *testing.T, r release) chartCerts {
	t.Helper()
	cfg := parseGatewayConfig(t, gatewayYAML(t, r))
	c := chartCerts{
		ca:        secretData(t, r, releaseName+"-brainstem-ca")["tls.crt"],
		gw:        secretData(t, r, mountedSecret(t, r.one(t, "Deployment"), cfg.Shards.TLS.CertFile)),
		shards:    map[string]map[string][]byte{},
		shardRole: map[string]pki.Role{},
	}
	c.gwRole = pki.RoleOf(parseCert(t, "gateway", c.gw["tls.crt"]))
	for _, s := range r.all("StatefulSet") {
		_, flags := args(t, container(t, s))
		d := secretData(t, r, mountedSecret(t, s, flags["tls-cert"]))
		c.shards[flags["wing"]] = d
		c.shardRole[flags["wing"]] = pki.RoleOf(parseCert(t, flags["wing"], d["tls.crt"]))
	}
	return c
}

// requireRoles fails unless pki.RoleOf gives every chart certificate its
// role (the chart's generated certificates carry it in the CommonName).
func requireRoles(t *testing.T, c chartCerts) {
	t.Helper()
	if c.gwRole != pki.RoleGateway {
		t.Errorf(`pki.RoleOf(chart gateway certificate, CN "gateway") = %q, want %q`, c.gwRole, pki.RoleGateway)
	}
	for wing, r := range c.shardRole {
		if r != pki.RoleShard {
			t.Errorf(`pki.RoleOf(chart shard certificate, CN "shard:%s") = %q, want %q`, wing, r, pki.RoleShard)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestChartCertsWithPKI: the product's own TLS configurations (pki.ServerTLS
// for a shard, pki.ClientTLS for the gateway, with their role checks) accept
// the certificates the chart generates, for each wing's server_name.
func TestChartCertsWithPKI(t *testing.T) {
	t.Parallel()
	r := render(t, []string{defaultValues, valuesFile(t, `wings:
  - {name: payments, policy: {readers: ["*"]}}
  - {name: platform, policy: {readers: ["*"]}}`)})
	c := loadChartCerts(t, r)
	requireRoles(t, c)
	cfg := parseGatewayConfig(t, gatewayYAML(t, r))
	for _, w := range cfg.Wings {
		sd := c.shards[w.Name]
		server, err := pki.ServerTLS(sd["ca.crt"], sd["tls.crt"], sd["tls.key"])
		if err != nil {
			t.Fatalf("wing %s: pki.ServerTLS: %v", w.Name, err)
		}
		client, err := pki.ClientTLS(c.gw["ca.crt"], c.gw["tls.crt"], c.gw["tls.key"], w.ServerName)
		if err != nil {
			t.Fatalf("pki.ClientTLS: %v", err)
		}
		ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		peerRole := make(chan pki.Role, 1)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				peerRole <- "accept failed: " + pki.Role(err.Error())
				return
			}
			defer conn.Close()
			tc := conn.(*tls.Conn)
			if err := tc.HandshakeContext(context.Background()); err != nil {
				peerRole <- "handshake failed: " + pki.Role(err.Error())
				return
			}
			peerRole <- pki.RoleOf(tc.ConnectionState().PeerCertificates[0])
		}()
		conn, err := tls.Dial("tcp", ln.Addr().String(), client)
		if err != nil {
			t.Fatalf("wing %s: gateway → shard with pki's TLS configs: %v", w.Name, err)
		}
		conn.Close()
		if got := <-peerRole; got != pki.RoleGateway {
			t.Errorf("wing %s: the shard sees the gateway as %q, want %q (the role that may mint)", w.Name, got, pki.RoleGateway)
		}
	}
}
