//go:build linux

package history

import (
	"io/fs"
	"syscall"
	"time"
)

func statOf(fi fs.FileInfo) statInfo {
	s := statInfo{mtime: fi.ModTime(), ctime: fi.ModTime(), size: uint32(fi.Size())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime = time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
		s.dev, s.ino = uint32(st.Dev), uint32(st.Ino)
		s.uid, s.gid = st.Uid, st.Gid
	}
	return s
}
