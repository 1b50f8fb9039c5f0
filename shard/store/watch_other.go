//go:build !linux

package store

import (
	"errors"
	"runtime"
)

func newDirWatcher() (dirWatcher, error) {
	return nil, errors.New("watching directories is implemented with inotify, which " + runtime.GOOS + " does not have")
}
