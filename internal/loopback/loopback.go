// Package loopback tells whether a host names this computer: the one rule
// by which an http:// URL (an issuer, a redirect, a gateway) is allowed
// instead of https:// during development.
package loopback

import (
	"net"
	"strings"
)

// Is reports whether host (a name or an address, without a port) is
// localhost, in any case, or a loopback address.
func Is(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
