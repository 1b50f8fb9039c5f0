package store

import (
	"io/fs"
	"os"
	"sync"

	"github.com/brainstem/brainstem/brain"
)

// hallDirs remembers the hall directories layout.Resolve has verified
// (no symbolic link on the way, no escape), each with the identity, device
// and inode, it had then. Rendering search hits needs a hall's directory
// for every query; resolving it again costs a path validation and one
// lstat per segment, and on a cross-wing query every shard pays it. A
// remembered directory costs one lstat: when that still names the same
// directory, the files read from it are those the verified path held. Any
// change (the directory removed, replaced, or a link put in its place)
// makes the identities differ, and the path is resolved again.
type hallDirs struct {
	mu   sync.Mutex
	dirs map[string]verifiedDir // brain-relative hall directory → what Resolve verified
}

type verifiedDir struct {
	path string
	fi   fs.FileInfo
}

// verifiedHallDir returns the absolute directory of a hall of the wing, verified
// as Store.abs verifies any path.
func (s *Store) verifiedHallDir(wing, hall string) (string, error) {
	rel := brain.HallDir(wing, hall)
	s.halls.mu.Lock()
	v, ok := s.halls.dirs[rel]
	s.halls.mu.Unlock()
	if ok {
		if fi, err := os.Lstat(v.path); err == nil && fi.IsDir() && os.SameFile(fi, v.fi) {
			return v.path, nil
		}
	}
	p, err := s.abs(rel)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(p)
	s.halls.mu.Lock()
	defer s.halls.mu.Unlock()
	if err != nil || !fi.IsDir() {
		delete(s.halls.dirs, rel) // nothing to remember: resolved again next time
		return p, nil
	}
	if s.halls.dirs == nil {
		s.halls.dirs = map[string]verifiedDir{}
	}
	s.halls.dirs[rel] = verifiedDir{path: p, fi: fi}
	return p, nil
}
