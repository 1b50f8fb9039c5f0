package remote

import (
	"fmt"
	"strings"

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

// writeTree puts the nested trees of the flat files into b and returns
// the root's hash.
func writeTree(b gitstore.Sink, files map[string]entry) (plumbing.Hash, error) {
	type dir struct {
		files map[string]entry
		dirs  map[string]bool
	}
	dirs := map[string]*dir{"": {files: map[string]entry{}, dirs: map[string]bool{}}}
	var ensure func(p string) *dir
	ensure = func(p string) *dir {
		if d, ok := dirs[p]; ok {
			return d
		}
		d := &dir{files: map[string]entry{}, dirs: map[string]bool{}}
		dirs[p] = d
		parent, name := splitDir(p)
		ensure(parent).dirs[name] = true
		return d
	}
	for p, e := range files {
		parent, name := splitDir(p)
		ensure(parent).files[name] = e
	}
	var build func(p string) (plumbing.Hash, error)
	build = func(p string) (plumbing.Hash, error) {
		d := dirs[p]
		var es []object.TreeEntry
		for name, e := range d.files {
			es = append(es, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
		for name := range d.dirs {
			h, err := build(strings.TrimPrefix(p+"/"+name, "/"))
			if err != nil {
				return plumbing.ZeroHash, err
			}
			es = append(es, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		raw, err := gitstore.EncodeTree(es)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("remote: encode tree: %w", err)
		}
		return b.PutTree(raw, plumbing.ZeroHash)
	}
	return build("")
}

func splitDir(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}
