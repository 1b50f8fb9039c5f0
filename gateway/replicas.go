package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/brainstem/brainstem/gateway/config"
	oauthcfg "github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/device"
)

// peersOf is the facade's view of the other replicas; nil when off.
func peersOf(c config.Config, resolver *net.Resolver, addrs func() ([]net.Addr, error)) (*device.Peers, error) {
	pc := c.Peers
	if !pc.Enabled() {
		return nil, nil
	}
	adminHost, adminPort, _ := net.SplitHostPort(c.AdminListen)
	port := pc.Port
	if port == 0 {
		port, _ = strconv.Atoi(adminPort)
	}
	self := pc.Advertise
	if self == "" {
		host, err := advertiseHost(adminHost, addrs)
		if err != nil {
			return nil, err
		}
		self = net.JoinHostPort(host, adminPort)
	}
	list := func(context.Context) ([]string, error) { return pc.Addresses, nil }
	if pc.DNS != "" {
		list = func(ctx context.Context) ([]string, error) {
			ips, err := resolver.LookupHost(ctx, pc.DNS)
			if err != nil {
				return nil, fmt.Errorf("gateway: peers.dns %s: %w", pc.DNS, err)
			}
			out := make([]string, 0, min(len(ips), oauthcfg.MaxPeers))
			for _, ip := range ips[:min(len(ips), oauthcfg.MaxPeers)] {
				out = append(out, net.JoinHostPort(ip, strconv.Itoa(port)))
			}
			return out, nil
		}
	}
	return &device.Peers{Self: self, List: list}, nil
}

// advertiseHost is the address the other replicas reach this one at:
// admin_listen's host when it names one, else the first non-loopback
// address of this host (IPv4 first).
func advertiseHost(adminHost string, addrs func() ([]net.Addr, error)) (string, error) {
	if ip := net.ParseIP(adminHost); ip != nil && !ip.IsUnspecified() {
		return adminHost, nil
	}
	as, err := addrs()
	if err != nil {
		return "", fmt.Errorf("gateway: peers: this host's addresses: %w; set peers.advertise", err)
	}
	var v6 string
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP.String(), nil
		}
		if v6 == "" {
			v6 = n.IP.String()
		}
	}
	if v6 == "" {
		return "", errors.New("gateway: peers: this host has no address but loopback; set peers.advertise")
	}
	return v6, nil
}
