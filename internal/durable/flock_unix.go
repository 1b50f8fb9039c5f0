//go:build unix

package durable

import (
	"os"
	"syscall"
)

// TryFlock takes an exclusive advisory lock on f, failing at once if
// another process holds one: how a second process is kept off a journal,
// a state directory or a git lock file.
func TryFlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// Flock takes an exclusive advisory lock on f, waiting while another
// process holds one.
func Flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}
