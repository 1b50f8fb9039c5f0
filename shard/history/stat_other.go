//go:build !linux

package history

import (
	"io/fs"
)

func statOf(fi fs.FileInfo) statInfo {
	return statInfo{mtime: fi.ModTime(), ctime: fi.ModTime(), size: uint32(fi.Size())}
}
