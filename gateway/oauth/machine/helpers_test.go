package machine

// The machine grant's tests run on the shared harness (tooling/oauthtest):
// each replica's server has the device grant and this package's added.

import (
	"context"
	"testing"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/gateway/oauth/device"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// The core's and the harness's names, as this package's tests use them.
type (
	Config         = oauth.Config
	UpstreamConfig = oauth.UpstreamConfig
	ServiceAccount = oauth.ServiceAccount
	Credential     = oauth.Credential
	Options        = oauth.Options
	testEnv        = oauthtest.Env
	replica        = oauthtest.Replica
)

const (
	PathToken                     = oauth.PathToken
	Scope                         = oauth.Scope
	DefaultServiceAccountTokenTTL = config.DefaultServiceAccountTokenTTL
	AccessClockSkew               = oauth.AccessClockSkew
	GrantTypeDevice               = oauth.GrantTypeDevice
)

// grants adds the device grant and the machine grant to a replica's server.
func grants(_ context.Context, srv *oauth.Server) ([]oauth.Grant, error) {
	dev, err := device.New(srv, nil)
	if err != nil {
		return nil, err
	}
	mach, err := New(srv)
	return []oauth.Grant{dev, mach}, err
}

// machOf is the machine grant of r.
func machOf(r *replica) *Grant {
	for _, g := range r.Grants {
		if m, ok := g.(*Grant); ok {
			return m
		}
	}
	return nil
}

// newEnv starts the IdP and n replicas with the grants; mutate adjusts
// each replica's configuration.
func newEnv(t *testing.T, n int, mutate func(*Config)) *testEnv {
	t.Helper()
	return oauthtest.NewEnv(t, n, mutate, grants)
}
