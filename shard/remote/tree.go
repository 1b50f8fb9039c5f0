package remote

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
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
	t, err := object.GetTree(s, h)
	if err != nil {
		return fmt.Errorf("remote: read tree %s: %w", base, err)
	}
	for _, e := range t.Entries {
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

// writeTree stores the nested trees of the flat files and returns the
// root's hash.
func writeTree(s storer.EncodedObjectStorer, files map[string]entry) (plumbing.Hash, error) {
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
		var t object.Tree
		for name, e := range d.files {
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
		for name := range d.dirs {
			h, err := build(strings.TrimPrefix(p+"/"+name, "/"))
			if err != nil {
				return plumbing.ZeroHash, err
			}
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		sort.Slice(t.Entries, func(i, j int) bool { return gitName(t.Entries[i]) < gitName(t.Entries[j]) })
		obj := s.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("remote: encode tree: %w", err)
		}
		return s.SetEncodedObject(obj)
	}
	return build("")
}

// gitName is the sort key of a tree entry: git orders a directory as if
// its name ended with '/'.
func gitName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func splitDir(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}
