//go:build !unix

package durable

import "os"

// TryFlock does nothing where there is no flock(2): run one shard per
// wing (the Helm chart's StatefulSet does), and every git lock older than
// the stale age is taken for a crashed writer's.
func TryFlock(*os.File) error { return nil }

// Flock does nothing where there is no flock.
func Flock(*os.File) error { return nil }
