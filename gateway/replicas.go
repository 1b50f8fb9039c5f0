package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/brainstem/brainstem/gateway/oauth/device"
	"github.com/brainstem/brainstem/proto/pki"
)

// PeersConfig lets the replicas of one gateway reach each other on their
// admin listeners, so a device sign-in started at one replica completes
// through any other (gateway/oauth/device, peers.go). Off while DNS and
// Addresses are both empty: each device sign-in then stays on the replica
// that issued it.
type PeersConfig struct {
	// DNS is a name that resolves to the address of every replica (in
	// Kubernetes, the chart's headless Service of the gateway pods),
	// looked up whenever a replica asks its peers for a typed code.
	DNS string `yaml:"dns"`
	// Port is the replicas' admin port, where they answer their peers
	// (0: the port of admin_listen).
	Port int `yaml:"port"`
	// Addresses lists the replicas' admin host:port where there is no DNS
	// name (virtual machines, tests); with DNS it is not used.
	Addresses []string `yaml:"addresses"`
	// Advertise is this replica's admin host:port as the others reach it
	// ("": admin_listen's host if it names one, else this host's first
	// non-loopback address, with the admin port; in Kubernetes the pod's
	// IP). Set it where a host has several addresses.
	Advertise string `yaml:"advertise"`
}

// Enabled reports whether the replicas reach each other.
func (p PeersConfig) Enabled() bool { return p.DNS != "" || len(p.Addresses) > 0 }

// maxPeerAddresses bounds peers.addresses.
const maxPeerAddresses = device.MaxPeers

func (c Config) validatePeers(p *problems) {
	pc := c.Peers
	if !pc.Enabled() {
		if pc.Advertise != "" || pc.Port != 0 {
			p.add("peers", "advertise and port need peers.dns or peers.addresses")
		}
		return
	}
	if !c.OAuth.Enabled {
		p.add("peers", "the replicas reach each other for the device flow of the gateway's authorization server; enable oauth or remove peers")
	}
	if pc.DNS != "" && !pki.ValidHostName(pc.DNS) {
		p.add("peers.dns", "%q is not a DNS name", pc.DNS)
	}
	if pc.Port < 0 || pc.Port > 65535 {
		p.add("peers.port", "%d is not a port", pc.Port)
	}
	if len(pc.Addresses) > maxPeerAddresses {
		p.add("peers.addresses", "%d addresses; at most %d", len(pc.Addresses), maxPeerAddresses)
	}
	for i, a := range pc.Addresses {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" || port == "0" {
			p.add(fmt.Sprintf("peers.addresses[%d]", i), "%q is not host:port", a)
		}
	}
	if pc.Advertise != "" {
		if host, port, err := net.SplitHostPort(pc.Advertise); err != nil || host == "" || port == "" || port == "0" {
			p.add("peers.advertise", "%q must be this replica's admin host:port as the other replicas reach it", pc.Advertise)
		}
	}
}

// peers is the facade's view of the other replicas; nil when off.
func (c Config) peers(resolver *net.Resolver, addrs func() ([]net.Addr, error)) (*device.Peers, error) {
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
			out := make([]string, 0, min(len(ips), maxPeerAddresses))
			for _, ip := range ips[:min(len(ips), maxPeerAddresses)] {
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
