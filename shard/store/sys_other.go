//go:build !unix

package store

import "io/fs"

const oNoFollow = 0

func inodeOf(fs.FileInfo) uint64 { return 0 }
