package e2e

import (
	"fmt"
	"sync"
	"testing"

	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// TestDisabledToolsUnlisted: tools/list through the gateway (and on every
// path) leaves brain_purge out while purging is off, and lists it when an
// operator enabled it.
func TestDisabledToolsUnlisted(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_purge=%v", allow), func(t *testing.T) {
			env := devenvtest.Start(t, devenv.Config{AllowPurge: allow})
			var keys sync.Map
			for _, p := range []path{gatewayPath(t, env), shardPath(t, env, "payments"), stdioPath(t, env.BrainDir, "payments", &keys)} {
				want := allow && p.name != "stdio" // the stdio path's wing keeps no history (shardTools)
				list := p.list(t)
				if _, listed := list["brain_purge"]; listed != want {
					t.Errorf("%s: brain_purge listed %v, want %v (purging allowed: %v)", p.name, listed, want, allow)
				}
				if _, ok := list["brain_archive"]; !ok {
					t.Errorf("%s: the other curate tools are gone too", p.name)
				}
			}
		})
	}
}
