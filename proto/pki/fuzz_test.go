package pki

import (
	"testing"
	"time"
)

// FuzzParseCA feeds arbitrary PEM input to the CA loader: it must refuse
// cleanly (never panic) and anything it accepts must be a usable CA.
func FuzzParseCA(f *testing.F) {
	ca, err := NewCA("seed", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.CertPEM(), keyPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"), []byte("-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n"))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, certPEM, keyPEM []byte) {
		got, err := ParseCA(certPEM, keyPEM)
		if err != nil {
			return
		}
		if !got.Certificate().IsCA {
			t.Fatal("accepted a non-CA certificate")
		}
		if _, err := got.KeyPEM(); err != nil {
			t.Fatalf("accepted CA has an unusable key: %v", err)
		}
	})
}
