//go:build unix

package idempotency

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, failing at once if
// another process holds one: two shards of one wing must not share a
// journal.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
