//go:build !linux

package watch

import (
	"errors"
	"runtime"
)

// New returns a Watcher of no directory yet.
func New() (Watcher, error) {
	return nil, errors.New("watching directories is implemented with inotify, which " + runtime.GOOS + " does not have")
}
