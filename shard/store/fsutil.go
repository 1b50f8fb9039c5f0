package store

import (
	"io/fs"
	"time"

	"github.com/brainstem/brainstem/shard/store/diskfile"
)

// filePerm is the mode of the files the store writes (diskfile.Perm).
const filePerm = diskfile.Perm

// fileSig identifies one version of a file cheaply: the rescanner compares
// it with the version it indexed to find files edited behind its back.
type fileSig struct {
	size  int64
	mtime int64 // UnixNano
	ino   uint64
}

func sigOf(fi fs.FileInfo) fileSig {
	return fileSig{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: diskfile.Inode(fi)}
}

// readFileLimit reads a regular file of at most limit bytes and returns its
// bytes and the signature of the version read. A larger file fails with an
// error wrapping ErrTooLarge, a non-regular one with ErrInvalid.
func readFileLimit(path string, limit int) ([]byte, fileSig, error) {
	f, fi, err := diskfile.Open(path, limit)
	if err != nil {
		return nil, fileSig{}, err
	}
	defer f.Close()
	data, err := diskfile.ReadAll(f, fi.Size(), limit)
	if err != nil {
		return nil, fileSig{}, err
	}
	return data, sigOf(fi), nil
}

// rfc3339 formats t as the store stamps times: RFC 3339, UTC, seconds.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
