package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// ErrTreeFormat: a tree object is not in git's tree format.
var ErrTreeFormat = errors.New("gitstore: a tree object is not in git's tree format")

// WalkTree calls f with the mode, name and id of each entry of the raw
// tree b, git's format: "<octal mode> <name>\x00<20-byte id>" again and
// again. The mode is the one git and go-git read: by its type bits a
// tree (filemode.Dir), a regular or executable file, a symbolic link, or
// a gitlink (filemode.Submodule, also for any other type). The name is a
// slice of b. It reads the bytes itself: go-git's decoding, a string and
// a struct per entry, was a push's largest cost beside the writes.
func WalkTree(b []byte, f func(mode filemode.FileMode, name []byte, id plumbing.Hash) error) error {
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp <= 0 || nul < sp+2 || len(b) < nul+1+len(plumbing.Hash{}) {
			return ErrTreeFormat
		}
		var mode uint32
		for _, d := range b[:sp] {
			if d < '0' || d > '7' || mode > math.MaxUint32>>3 {
				return ErrTreeFormat
			}
			mode = mode<<3 | uint32(d-'0')
		}
		name := b[sp+1 : nul]
		var id plumbing.Hash
		b = b[nul+1:]
		b = b[copy(id[:], b):]
		if err := f(canonicalMode(mode), name, id); err != nil {
			return err
		}
	}
	return nil
}

// canonicalMode is the mode git and go-git read from an entry's bits.
func canonicalMode(mode uint32) filemode.FileMode {
	switch mode & 0o170000 {
	case 0o040000:
		return filemode.Dir
	case 0o100000:
		if mode&0o111 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	case 0o120000:
		return filemode.Symlink
	default:
		return filemode.Submodule
	}
}

// DecodeTree returns the entries of the raw tree b.
func DecodeTree(b []byte) ([]object.TreeEntry, error) {
	var es []object.TreeEntry
	err := WalkTree(b, func(mode filemode.FileMode, name []byte, id plumbing.Hash) error {
		es = append(es, object.TreeEntry{Name: string(name), Mode: mode, Hash: id})
		return nil
	})
	return es, err
}

// AppendTreeEntry appends one entry in git's tree format to b.
func AppendTreeEntry(b []byte, mode filemode.FileMode, name string, id plumbing.Hash) []byte {
	b = strconv.AppendUint(b, uint64(mode), 8)
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, 0)
	return append(b, id[:]...)
}

// EntryLess is git's order of tree entries: by name, a tree's name
// compared as if it ended in "/".
func EntryLess(a string, aDir bool, b string, bDir bool) bool {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c < 0
	}
	ca, cb := byte(0), byte(0)
	if len(a) > n {
		ca = a[n]
	} else if aDir {
		ca = '/'
	}
	if len(b) > n {
		cb = b[n]
	} else if bDir {
		cb = '/'
	}
	return ca < cb
}

// ReadRaw returns the bytes of object h of type want from s, in buf
// (grown when too small; the result may be reused by the next read).
func ReadRaw(s storer.EncodedObjectStorer, want plumbing.ObjectType, h plumbing.Hash, buf []byte) ([]byte, error) {
	o, err := s.EncodedObject(want, h)
	if err != nil {
		return nil, fmt.Errorf("gitstore: read %s %s: %w", want, h, err)
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("gitstore: read %s %s: %w", want, h, err)
	}
	defer rd.Close()
	if int64(cap(buf)) < o.Size() {
		buf = make([]byte, o.Size())
	}
	buf = buf[:o.Size()]
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, fmt.Errorf("gitstore: read %s %s: %w", want, h, err)
	}
	return buf, nil
}
