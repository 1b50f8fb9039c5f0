//go:build !linux

package history

import (
	"io/fs"
	"time"
)

// statInfo is what git's index records of a file: its stat cache.
type statInfo struct {
	ctime, mtime time.Time
	dev, ino     uint32
	uid, gid     uint32
	size         uint32
}

func statOf(fi fs.FileInfo) statInfo {
	return statInfo{mtime: fi.ModTime(), ctime: fi.ModTime(), size: uint32(fi.Size())}
}
