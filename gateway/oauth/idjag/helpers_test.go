package idjag

// The ID-JAG grant's tests run on the shared harness (tooling/oauthtest):
// each replica's server has the device, machine and ID-JAG grants added.

import (
	"context"
	"testing"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/device"
	"github.com/brainstem/brainstem/gateway/oauth/machine"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// The core's and the harness's names, as this package's tests use them.
type (
	Config           = oauth.Config
	UpstreamConfig   = oauth.UpstreamConfig
	ServiceAccount   = oauth.ServiceAccount
	Credential       = oauth.Credential
	EnterpriseConfig = oauth.EnterpriseConfig
	EnterpriseIdP    = oauth.EnterpriseIdP
	testEnv          = oauthtest.Env
	replica          = oauthtest.Replica
)

const (
	PathToken = oauth.PathToken
	Scope     = oauth.Scope
)

// grants adds the device, machine and ID-JAG grants to a replica's server.
func grants(ctx context.Context, srv *oauth.Server) ([]oauth.Grant, error) {
	dev, err := device.New(srv, nil)
	if err != nil {
		return nil, err
	}
	machines, err := machine.New(srv)
	if err != nil {
		return nil, err
	}
	jag, err := New(ctx, srv, machines, Options{})
	return []oauth.Grant{dev, machines, jag}, err
}

// newEnv starts the IdP and n replicas with the grants; mutate adjusts
// each replica's configuration.
func newEnv(t *testing.T, n int, mutate func(*Config)) *testEnv {
	t.Helper()
	return oauthtest.NewEnv(t, n, mutate, grants)
}
