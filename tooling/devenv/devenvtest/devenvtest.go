// Package devenvtest starts a development environment (package devenv) for
// a test: every test that drives the whole product on loopback — the
// identity provider, the shards and the gateway — starts it the same way.
package devenvtest

import (
	"context"
	"testing"

	"github.com/brainstem/brainstem/tooling/devenv"
)

// Start starts cfg on ports the kernel picks, its state in a directory of
// the test (unless cfg.Data is set), fails the test if it cannot, and
// closes it when the test ends, failing the test if closing fails.
func Start(t testing.TB, cfg devenv.Config) *devenv.Env {
	t.Helper()
	if cfg.Data == "" {
		cfg.Data = t.TempDir()
	}
	env, err := devenv.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("closing the dev environment: %v", err)
		}
	})
	return env
}
