package gitstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// The go-git comparison of docs/decisions.md ("Issue 17: history on
// git"): why the engine writes objects and packs itself.
//
//	go test -run='^$' -bench=. -benchmem ./shard/gitstore/
//	BRAINSTEM_GITSTORE_BENCH_COMMITS=1000 go test -run='^$' -bench=Pack -benchmem ./shard/gitstore/

// benchNotes is the number of notes of the benchmarks' hall tree.
const benchNotes = 20000

// benchCommits is how many commits BenchmarkPack packs:
// BRAINSTEM_GITSTORE_BENCH_COMMITS, else 50 (the record's figure is for
// 1,000; go-git's encoder then allocates about 15 GB).
func benchCommits(b *testing.B) int {
	if s := os.Getenv("BRAINSTEM_GITSTORE_BENCH_COMMITS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("BRAINSTEM_GITSTORE_BENCH_COMMITS=%q: want a positive count", s)
		}
		return n
	}
	return 50
}

// hall is a tree of benchNotes notes whose blobs the benchmarks change.
type hall struct {
	names []string
	blobs []plumbing.Hash
}

func newHall() *hall {
	h := &hall{names: make([]string, benchNotes), blobs: make([]plumbing.Hash, benchNotes)}
	for i := range h.names {
		h.names[i] = fmt.Sprintf("note-%05d.md", i) // already in git's order
		h.blobs[i] = Hash(plumbing.BlobObject, noteBody(i, 0))
	}
	return h
}

// raw is the hall's tree.
func (h *hall) raw() []byte {
	buf := make([]byte, 0, benchNotes*(len(h.names[0])+28))
	for i, n := range h.names {
		buf = AppendTreeEntry(buf, filemode.Regular, n, h.blobs[i])
	}
	return buf
}

// noteBody is version v of note i: about 2 KB, as the record's notes.
func noteBody(i, v int) []byte {
	b := fmt.Appendf(nil, "---\ntitle: note %d\n---\nversion %d\n", i, v)
	for len(b) < 2000 {
		b = append(b, "a sentence of the note's body, which changes a little at each version. "...)
	}
	return b
}

// benchRepo is an empty repository's git directory.
func benchRepo(b *testing.B) string {
	dir := b.TempDir()
	for _, d := range []string{"objects/pack", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkTree stores one 20,000-entry tree (each iteration a new
// version): go-git's Storer.SetEncodedObject (not durable: no fsync)
// against the engine's loose batch (fsynced, with its directory).
func BenchmarkTree(b *testing.B) {
	h := newHall()
	version := 0
	next := func() []byte {
		version++
		h.blobs[version%benchNotes] = Hash(plumbing.BlobObject, noteBody(version%benchNotes, version))
		return h.raw()
	}
	b.Run("go-git-SetEncodedObject", func(b *testing.B) {
		st := filesystem.NewStorage(osfs.New(benchRepo(b)), cache.NewObjectLRUDefault())
		defer st.Close()
		for b.Loop() {
			raw := next()
			obj := st.NewEncodedObject()
			obj.SetType(plumbing.TreeObject)
			w, _ := obj.Writer()
			w.Write(raw)
			w.Close()
			if _, err := st.SetEncodedObject(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gitstore-LooseBatch", func(b *testing.B) {
		dir := benchRepo(b)
		s := Open(dir, dir)
		defer s.Close()
		for b.Loop() {
			raw := next()
			lb := s.Batch()
			if _, err := lb.PutTree(raw, plumbing.ZeroHash); err != nil {
				b.Fatal(err)
			}
			if err := lb.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// notesPerCommit is how many notes each commit of BenchmarkPack changes:
// one, as a commit of the history engine records one change.
const notesPerCommit = 1

// packCase is a repository holding a packed hall of 20,000 notes and,
// loose, the objects of n commits that each change a note (its blob, the
// hall's tree, the root tree, the commit), with the delta hints the
// committer leaves (each object → the one it replaced).
type packCase struct {
	dir   string
	loose []plumbing.Hash
	hints map[plumbing.Hash]plumbing.Hash
}

func newPackCase(b *testing.B, n int) *packCase {
	b.Helper()
	pc := &packCase{dir: benchRepo(b), hints: map[plumbing.Hash]plumbing.Hash{}}
	s := Open(pc.dir, pc.dir)
	defer s.Close()
	h := newHall()
	pw, err := s.NewPackWriter()
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchNotes {
		if _, err := pw.Put(plumbing.BlobObject, noteBody(i, 0)); err != nil {
			b.Fatal(err)
		}
	}
	hallID, _ := pw.PutTree(h.raw(), plumbing.ZeroHash)
	rootOf := func(hallID plumbing.Hash) []byte {
		return AppendTreeEntry(nil, filemode.Dir, "facts", hallID)
	}
	rootID, _ := pw.PutTree(rootOf(hallID), plumbing.ZeroHash)
	if _, err := pw.Finish(); err != nil {
		b.Fatal(err)
	}
	parent := plumbing.ZeroHash
	for c := 1; c <= n; c++ {
		lb := s.Batch()
		for k := range notesPerCommit {
			i := (c*7919 + k*104729) % benchNotes
			id, err := lb.Put(plumbing.BlobObject, noteBody(i, c))
			if err != nil {
				b.Fatal(err)
			}
			pc.add(id, h.blobs[i])
			h.blobs[i] = id
		}
		newHall, _ := lb.PutTree(h.raw(), hallID)
		pc.add(newHall, hallID)
		newRoot, _ := lb.PutTree(rootOf(newHall), rootID)
		pc.add(newRoot, rootID)
		hallID, rootID = newHall, newRoot
		sig := object.Signature{Name: "bench", Email: "bench@example.com"}
		cm := &object.Commit{Author: sig, Committer: sig, Message: fmt.Sprintf("commit %d\n", c), TreeHash: rootID}
		if !parent.IsZero() {
			cm.ParentHashes = []plumbing.Hash{parent}
		}
		if parent, err = PutCommit(lb, cm); err != nil {
			b.Fatal(err)
		}
		pc.loose = append(pc.loose, parent)
		if err := lb.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return pc
}

func (pc *packCase) add(id, base plumbing.Hash) {
	pc.loose = append(pc.loose, id)
	pc.hints[id] = base
}

// BenchmarkPack packs the loose objects of BRAINSTEM_GITSTORE_BENCH_COMMITS
// commits (50 by default) on a hall of 20,000 notes: go-git's packfile
// encoder (git's window of 10 delta candidates, written to a file it does
// not sync) against the engine's packer (each object a delta on the one
// it replaced, the pack and its index fsynced).
func BenchmarkPack(b *testing.B) {
	pc := newPackCase(b, benchCommits(b))
	b.Run("go-git-encoder", func(b *testing.B) {
		st := filesystem.NewStorage(osfs.New(pc.dir), cache.NewObjectLRUDefault())
		defer st.Close()
		for b.Loop() {
			f, err := os.CreateTemp(pc.dir, "go-git-pack-")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := packfile.NewEncoder(f, st, false).Encode(pc.loose, 10); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fileSize(f)), "pack-bytes")
			f.Close()
			os.Remove(f.Name())
		}
	})
	b.Run("gitstore-EncodePack", func(b *testing.B) {
		s := Open(pc.dir, pc.dir)
		defer s.Close()
		for b.Loop() {
			id, err := s.EncodePack(pc.loose, pc.hints)
			if err != nil {
				b.Fatal(err)
			}
			base := filepath.Join(pc.dir, "objects", "pack", "pack-"+id.String())
			if fi, err := os.Stat(base + ".pack"); err == nil {
				b.ReportMetric(float64(fi.Size()), "pack-bytes")
			}
			RemovePack(base)
		}
	})
}

func fileSize(f *os.File) int64 {
	n, _ := f.Seek(0, io.SeekCurrent)
	return n
}
