package clients

import (
	"net/netip"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "1.1.1.1": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "255.255.255.255": false,
		"::1": false, "fe80::1": false, "fc00::1": false, "::ffff:10.0.0.1": false, "::ffff:8.8.8.8": true,
		"64:ff9b::a00:1": false, "2002:a00:1::": false, "224.0.0.1": false, "ff02::1": false, "198.18.0.1": false,
	} {
		ip := mustAddr(t, addr)
		if got := publicAddr(ip); got != want {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
