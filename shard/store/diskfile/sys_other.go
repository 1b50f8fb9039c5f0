//go:build !unix

package diskfile

import "io/fs"

// NoFollow is 0 here: the system has no O_NOFOLLOW.
const NoFollow = 0

// Inode returns the inode number of fi (0 where there is none).
func Inode(fs.FileInfo) uint64 { return 0 }
