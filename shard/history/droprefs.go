package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// droppable reports whether a purge with PurgeRequest.DropRefs drop may
// delete ref name: it lies under one of the prefixes and is a loose ref
// only (a packed one stays, so it still refuses the purge).
func (r *repo) droppable(name plumbing.ReferenceName, drop []string) bool {
	for _, p := range drop {
		if p == "" || !strings.HasPrefix(string(name), p) {
			continue
		}
		if _, err := os.Stat(r.refPath(name)); err != nil {
			return false
		}
		packed, err := r.packedRefs()
		_, isPacked := packed[name]
		return err == nil && !isPacked
	}
	return false
}

// dropRefs deletes the loose refs under the prefixes drop, before the
// repack, so that what only they reach leaves the disk with the purge.
func (r *repo) dropRefs(drop []string) error {
	if len(drop) == 0 {
		return nil
	}
	refs, err := r.allRefs()
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for name := range refs {
		if !r.droppable(name, drop) {
			continue
		}
		p := r.refPath(name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("history: drop %s for the purge: %w", name, err)
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	return nil
}
