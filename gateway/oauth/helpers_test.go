package oauth_test

// The core's tests run on the shared harness (tooling/oauthtest), with no
// grant added; the package's names are dot-imported so the tests read as
// the package's own (they were internal tests before the harness moved).

import (
	"testing"

	. "github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// testEnv is the harness's environment.
type testEnv struct {
	*oauthtest.Env
	t *testing.T
}

// newEnv starts the IdP and n replicas; mutate adjusts each replica's
// configuration.
func newEnv(t *testing.T, n int, mutate func(*Config)) *testEnv {
	t.Helper()
	return &testEnv{Env: oauthtest.NewEnv(t, n, mutate, nil), t: t}
}
