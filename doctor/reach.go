package doctor

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/brainstem/brainstem/internal/loopback"
)

// fixReach is the fix of a failure to reach the gateway whose cause is
// not known more precisely.
const fixReach = "Check the URL, and that the gateway is running and reachable from this computer (DNS, proxy, firewall)."

// ReachFix is the fix, in one sentence, for err when it is a failure to
// reach host (host:port) at all: nothing listening, a name that does not
// resolve, no answer in time, plain http where https was asked for. ok is
// false when err is not one of those (the gateway answered).
func ReachFix(err error, host string) (fix string, ok bool) {
	var dnsErr *net.DNSError
	var netErr net.Error
	name, _, _ := strings.Cut(host, ":")
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	switch {
	case err == nil:
		return "", false
	case plainHTTP(err):
		if loopback.Is(name) {
			return fmt.Sprintf("The server at %s speaks plain http: use http://%s (plain http is for `brainstem dev` on this computer).", host, host), true
		}
		return fmt.Sprintf("The server at %s answers plain http, not https: use the gateway's https URL (its Ingress or load balancer), not a plain http port.", host), true
	case errors.Is(err, syscall.ECONNREFUSED):
		if loopback.Is(name) {
			return fmt.Sprintf("Nothing is listening at %s: start the gateway (`brainstem dev` prints its URL) or correct the port in the URL.", host), true
		}
		return fmt.Sprintf("Nothing is listening at %s: check that the gateway is running (its pods, or its admin /readyz) and the port in the URL.", host), true
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("The name %s does not resolve: check the URL, and this computer's DNS or VPN.", name), true
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("%s did not answer in time: check that the gateway is running, and the proxy or firewall between this computer and it.", host), true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fixReach, true
	}
	return "", false
}

// plainHTTP reports whether err is an https request answered in plain
// http (net/http says so in words only).
func plainHTTP(err error) bool {
	var recErr tls.RecordHeaderError
	return errors.As(err, &recErr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// Unreachable adds to err, when it is a failure to reach the gateway of
// mcpURL (ReachFix), the fix and the command that checks every step; any
// other error is returned unchanged. `brainstem login`, `token` and `join`
// return their errors through it.
func Unreachable(err error, mcpURL string) error {
	u, perr := url.Parse(mcpURL)
	if err == nil || perr != nil {
		return err
	}
	fix, ok := ReachFix(err, u.Host)
	if !ok {
		return err
	}
	return fmt.Errorf("%w\nfix: %s (`brainstem doctor %s` checks every step)", err, fix, mcpURL)
}
