package device

// The device grant's tests run on the shared harness (tooling/oauthtest):
// each replica's server has this package's grant added.

import (
	"context"
	"net"
	"testing"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// The core's and the harness's names, as this package's tests use them.
type (
	Config  = oauth.Config
	replica = oauthtest.Replica
)

const (
	PathToken     = oauth.PathToken
	PathRegister  = oauth.PathRegister
	PathAuthorize = oauth.PathAuthorize
	PathCallback  = oauth.PathCallback
	Scope         = oauth.Scope
	LoginTTL      = config.LoginTTL
)

// Options are the server's options and the device grant's peers.
type Options struct {
	oauth.Options
	Peers *Peers
}

// grants adds the device grant, with peers, to a replica's server.
func grants(peers *Peers) oauthtest.Grants {
	return func(_ context.Context, srv *oauth.Server) ([]oauth.Grant, error) {
		g, err := New(srv, peers)
		return []oauth.Grant{g}, err
	}
}

// testEnv is the harness's environment, with this package's grant.
type testEnv struct {
	*oauthtest.Env
	t *testing.T
}

// devOf is the device grant of r.
func devOf(r *replica) *Grant { return r.Grants[0].(*Grant) }

// newEnv starts the IdP and n replicas with the device grant; mutate
// adjusts each replica's configuration.
func newEnv(t *testing.T, n int, mutate func(*Config)) *testEnv {
	t.Helper()
	return &testEnv{Env: oauthtest.NewEnv(t, n, mutate, grants(nil)), t: t}
}

// replicaAt starts a replica of e serving on ln with issuer u, its options
// (and the grant's peers) adjusted by opts.
func replicaAt(e *testEnv, ln net.Listener, u string, mutate func(*Config), opts func(*Options)) *replica {
	var o Options
	var peers *Peers
	set := func(oo *oauth.Options) {
		o.Options = *oo
		if opts != nil {
			opts(&o)
		}
		*oo, peers = o.Options, o.Peers
	}
	return e.ReplicaAt(ln, u, mutate, set, func(ctx context.Context, srv *oauth.Server) ([]oauth.Grant, error) {
		return grants(peers)(ctx, srv)
	})
}
