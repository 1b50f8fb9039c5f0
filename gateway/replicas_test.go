package gateway

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestAdvertiseHost: the address a replica tells its peers, from
// admin_listen or this host's addresses.
func TestAdvertiseHost(t *testing.T) {
	nets := func(cidrs ...string) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) {
			var out []net.Addr
			for _, c := range cidrs {
				ip, n, err := net.ParseCIDR(c)
				if err != nil {
					t.Fatal(err)
				}
				n.IP = ip
				out = append(out, n)
			}
			return out, nil
		}
	}
	for _, c := range []struct {
		name, admin string
		addrs       func() ([]net.Addr, error)
		want, err   string
	}{
		{"admin_listen names it", "10.1.2.3", nets("10.9.9.9/8"), "10.1.2.3", ""},
		{"the pod's address", "", nets("127.0.0.1/8", "::1/128", "10.244.0.7/24"), "10.244.0.7", ""},
		{"IPv4 first", "0.0.0.0", nets("fd00::7/64", "10.244.0.7/24"), "10.244.0.7", ""},
		{"IPv6 only", "::", nets("::1/128", "fd00::7/64"), "fd00::7", ""},
		{"loopback only", "", nets("127.0.0.1/8"), "", "set peers.advertise"},
		{"no addresses", "", func() ([]net.Addr, error) { return nil, errors.New("boom") }, "", "set peers.advertise"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := advertiseHost(c.admin, c.addrs)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("%q %v, want %q", got, err, c.want)
			}
		})
	}
}
