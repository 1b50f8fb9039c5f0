package oauth

// The internals the external tests (package oauth_test, which run on
// tooling/oauthtest: it imports this package) look at.

import (
	"time"

	"github.com/brainstem/brainstem/gateway/oauth/clients"
)

const (
	RegisteredPrefix = registeredPrefix
	CodePrefix       = codePrefix
	RegisterPerMin   = registerPerMin
)

func (s *Server) CheckRedirectURI(raw string) error { return s.checkRedirectURI(raw) }

func RedirectAllowed(c *clients.Client, uri string) bool { return redirectAllowed(c, uri) }

func (s *Server) ParseRegisteredClient(id string) (*clients.Client, error) {
	return s.parseRegisteredClient(id)
}

// SetMetadataFetchTimeout bounds the client metadata fetches of s.
func (s *Server) SetMetadataFetchTimeout(d time.Duration) { s.meta.FetchTimeout = d }
