//go:build unix

package gitstore

import (
	"os"
	"syscall"
)

// TryFlock takes an exclusive advisory lock on f, failing at once if
// another process holds one.
func TryFlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// flockWait takes an exclusive advisory lock on f, waiting while another
// process holds one.
func flockWait(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}
