// Package clients is who a client of the gateway's authorization server
// (gateway/oauth) is: the Client the core works with, and client ID
// metadata documents, fetched with SSRF protection (Fetcher). Registered
// clients' signed ids are the core's (it holds the keys).
package clients

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on clients.
const (
	// MaxRedirectURIs bounds the redirect URIs of one client.
	MaxRedirectURIs = 10
	// MaxRedirectURIBytes bounds one redirect URI.
	MaxRedirectURIBytes = 1024
	// MaxClientNameRunes bounds a client's display name.
	MaxClientNameRunes = 100
	// MaxClientIDBytes bounds a client id (a registered one carries its
	// redirect URIs, a metadata document's is its URL).
	MaxClientIDBytes = 4096
	// MaxRegistrationBytes bounds a registration request body.
	MaxRegistrationBytes = 64 << 10
)

// Client is a client the facade knows: registered dynamically (its id is a
// signed description of it) or described by a metadata document at its id.
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	// Dynamic is true for a dynamically registered client: anyone could
	// have registered it, so the consent page says so.
	Dynamic bool
	// MetadataHost is the host of a metadata document client.
	MetadataHost string
	// Device is true for a client that may use the device authorization
	// grant: it registered the grant type, or its document lists it.
	Device bool
	// NoCodeFlow is true for a registered client that registered only the
	// device grant (and the refresh token): it has no redirect URI.
	NoCodeFlow bool
}

// GrantTypeDevice is the device authorization grant type (RFC 8628),
// which a client registers (or its metadata document lists) to use the
// device flow (gateway/oauth/device).
const GrantTypeDevice = "urn:ietf:params:oauth:grant-type:device_code"

// IsMetadataURL reports whether a client id names a metadata document.
func IsMetadataURL(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// CleanName trims a client name and refuses control characters and
// over-long names; an empty name is allowed (the consent page says so).
func CleanName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", errors.New("client_name is not valid UTF-8")
	}
	if utf8.RuneCountInString(s) > MaxClientNameRunes {
		return "", fmt.Errorf("client_name is longer than %d characters", MaxClientNameRunes)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
		return "", errors.New("client_name holds control or formatting characters")
	}
	return s, nil
}
