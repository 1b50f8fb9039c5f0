package remote

import (
	"fmt"
	"maps"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// entry is a file of a flattened tree.
type entry struct {
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// flatten lists every non-tree entry of the tree h by its slash path. The
// names are joined as they are (never cleaned), so that an entry named
// ".." shows as such.
func flatten(s storer.EncodedObjectStorer, h plumbing.Hash) (map[string]entry, error) {
	out := map[string]entry{}
	if h.IsZero() {
		return out, nil
	}
	return out, walk(s, h, "", out, 0)
}

// maxDepth bounds the nesting of a tree read from the remote.
const maxDepth = 64

func walk(s storer.EncodedObjectStorer, h plumbing.Hash, base string, out map[string]entry, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("remote: tree nested deeper than %d at %s", maxDepth, base)
	}
	raw, err := gitstore.ReadRaw(s, plumbing.TreeObject, h, nil)
	var es []object.TreeEntry
	if err == nil {
		es, err = gitstore.DecodeTree(raw)
	}
	if err != nil {
		return fmt.Errorf("remote: read tree %s: %w", base, err)
	}
	for _, e := range es {
		p := base + e.Name
		if e.Mode == filemode.Dir {
			if err := walk(s, e.Hash, p+"/", out, depth+1); err != nil {
				return err
			}
			continue
		}
		out[p] = entry{Mode: e.Mode, Hash: e.Hash}
	}
	return nil
}

// writeTree puts the nested trees of the flat files into b (through
// gitstore's tree model) and returns the root's hash.
func writeTree(b gitstore.Sink, files map[string]entry) (plumbing.Hash, error) {
	if len(files) == 0 {
		return b.PutTree(nil, plumbing.ZeroHash) // the model knows the empty tree without writing it
	}
	t := gitstore.NewTree(nil)
	for _, p := range slices.Sorted(maps.Keys(files)) { // mostly appended in order
		if err := t.Set(p, files[p].Hash, files[p].Mode); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("remote: encode tree: %w", err)
		}
	}
	return t.Write(b)
}
