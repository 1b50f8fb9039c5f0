package gitstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// FuzzWalkTree: on any bytes, WalkTree agrees with go-git's tree
// decoder: it reads every tree go-git reads (the same kinds by mode, the
// same ids, in order), and refuses only with ErrTreeFormat.
func FuzzWalkTree(f *testing.F) {
	for _, entries := range [][]object.TreeEntry{
		nil,
		{{Name: "a.md", Mode: filemode.Regular, Hash: plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")}},
		{{Name: "facts", Mode: filemode.Dir, Hash: plumbing.NewHash("89abcdef0123456789abcdef0123456789abcdef")},
			{Name: "mod", Mode: filemode.Submodule, Hash: plumbing.NewHash("fedcba9876543210fedcba9876543210fedcba98")},
			{Name: "x", Mode: filemode.Executable}},
	} {
		f.Add(encodeTree(f, entries))
	}
	f.Add([]byte("100644 a\x00short"))
	f.Add([]byte("10a644 a\x00" + string(make([]byte, 20))))
	f.Fuzz(func(t *testing.T, b []byte) {
		type entry struct {
			kind entryKind
			id   plumbing.Hash
		}
		var got []entry
		err := WalkTree(b, func(m filemode.FileMode, _ []byte, id plumbing.Hash) error {
			got = append(got, entry{kindOf(m), id})
			return nil
		})
		if err != nil && !errors.Is(err, ErrTreeFormat) {
			t.Fatalf("unnamed error %v", err)
		}
		var want object.Tree
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.TreeObject)
		o.Write(b)
		if want.Decode(o) != nil {
			return
		}
		if err != nil {
			t.Fatalf("go-git reads the tree, WalkTree refuses it: %v", err)
		}
		if len(got) != len(want.Entries) {
			t.Fatalf("%d entries, go-git %d", len(got), len(want.Entries))
		}
		kinds := map[filemode.FileMode]entryKind{filemode.Dir: entryTree, filemode.Submodule: entryGitlink}
		for i, e := range want.Entries {
			if got[i].kind != kinds[e.Mode] || got[i].id != e.Hash {
				t.Fatalf("entry %d: %v %v, go-git %v %v", i, got[i].kind, got[i].id, e.Mode, e.Hash)
			}
		}
	})
}

// Kinds of a tree's entries, as a push reads them: a tree, a blob (a file
// or a symbolic link), or a gitlink (a submodule's commit).
type entryKind uint8

const (
	entryBlob entryKind = iota
	entryTree
	entryGitlink
)

func kindOf(m filemode.FileMode) entryKind {
	switch m {
	case filemode.Dir:
		return entryTree
	case filemode.Submodule:
		return entryGitlink
	}
	return entryBlob
}

func encodeTree(tb testing.TB, entries []object.TreeEntry) []byte {
	tb.Helper()
	st := memory.NewStorage()
	o := st.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		tb.Fatal(err)
	}
	rd, _ := o.Reader()
	var b bytes.Buffer
	b.ReadFrom(rd)
	return b.Bytes()
}
