//go:build unix

package diskfile

import (
	"io/fs"
	"syscall"
)

// NoFollow makes opening a symlink fail instead of following it.
const NoFollow = syscall.O_NOFOLLOW

// Inode returns the inode number of fi (0 where there is none).
func Inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
