//go:build !unix

package gitstore

import (
	"os"
)

// TryFlock does nothing where there is no flock: every lock older than
// the stale age is taken for a crashed writer's.
func TryFlock(*os.File) error { return nil }

// flockWait does nothing where there is no flock.
func flockWait(*os.File) error { return nil }
