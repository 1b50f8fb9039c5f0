package history

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// objectStore reads the repository's objects through go-git, one call at
// a time (go-git's storage is not safe for concurrent use), and writes
// loose objects itself.
type objectStore struct {
	mu  sync.Mutex
	st  *filesystem.Storage
	dir string          // the objects directory
	zw  [3]*zlib.Writer // by level: default, fastest, none
	buf bytes.Buffer    // a loose object's compressed bytes (one writer at a time)
}

func newObjectStore(r *repo) *objectStore {
	return &objectStore{st: r.st, dir: filepath.Join(r.common, "objects")}
}

// readAttempts bounds how often get reads an object, listing the packs
// anew before each retry. Every shard of a brain directory packs and
// merges packs in the one repository at any time, deleting the packs it
// merged: the packs go-git listed then include deleted ones, and a new
// listing (the pack directory, then each pack's index) fails or misses
// the object while a merge is still renaming and deleting. In the fault
// suite's soak, three shards on one repository, a second attempt failed
// every few seconds; a shard restarted then could not open its history.
const readAttempts = 8

// get returns the object h, of type want (plumbing.AnyObject for any),
// read whole. A failed read lists the packs again and retries, after a
// pause from the third attempt on (1, 2, 4 … 32 ms) that lets a merge
// finish deleting.
func (o *objectStore) get(h plumbing.Hash, want plumbing.ObjectType) (plumbing.EncodedObject, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var err error
	pause := time.Millisecond
	for attempt := 1; ; attempt++ {
		var obj plumbing.EncodedObject
		if obj, err = o.load(h, want); err == nil {
			return obj, nil
		}
		if attempt == readAttempts {
			break
		}
		if attempt > 1 {
			time.Sleep(pause)
			pause *= 2
		}
		o.st.Reindex()
	}
	return nil, fmt.Errorf("history: read %s object %s: %w", want, h, err)
}

// load reads object h into memory. go-git reads an object of over 16 KB
// in a pack only when its bytes are asked for, opening the pack by name
// again, and a merge may have deleted it by then.
func (o *objectStore) load(h plumbing.Hash, want plumbing.ObjectType) (plumbing.EncodedObject, error) {
	obj, err := o.st.EncodedObject(want, h)
	if err != nil {
		return nil, err
	}
	if _, ok := obj.(*plumbing.MemoryObject); ok {
		return obj, nil
	}
	data, err := readAll(obj)
	if err != nil {
		return nil, err
	}
	m := &plumbing.MemoryObject{}
	m.SetType(obj.Type())
	m.Write(data)
	return m, nil
}

// has reports whether the repository holds h (loose or packed).
func (o *objectStore) has(h plumbing.Hash) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.st.HasEncodedObject(h) == nil
}

// reindex makes go-git list the packs again.
func (o *objectStore) reindex() {
	o.mu.Lock()
	o.st.Reindex()
	o.mu.Unlock()
}

// blob returns the bytes of blob h.
func (o *objectStore) blob(h plumbing.Hash) ([]byte, error) {
	obj, err := o.get(h, plumbing.BlobObject)
	if err != nil {
		return nil, err
	}
	return readAll(obj)
}

func readAll(obj plumbing.EncodedObject) ([]byte, error) {
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("history: read object %s: %w", obj.Hash(), err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("history: read object %s: %w", obj.Hash(), err)
	}
	return b, nil
}

// tree returns the entries of tree h.
func (o *objectStore) tree(h plumbing.Hash) ([]object.TreeEntry, error) {
	obj, err := o.get(h, plumbing.TreeObject)
	if err != nil {
		return nil, err
	}
	var t object.Tree
	if err := t.Decode(obj); err != nil {
		return nil, fmt.Errorf("history: decode tree %s: %w", h, err)
	}
	return t.Entries, nil
}

// commit returns commit h.
func (o *objectStore) commit(h plumbing.Hash) (*object.Commit, error) {
	obj, err := o.get(h, plumbing.CommitObject)
	if err != nil {
		return nil, err
	}
	var c object.Commit
	if err := c.Decode(obj); err != nil {
		return nil, fmt.Errorf("history: decode commit %s: %w", h, err)
	}
	return &c, nil
}

// objectHash is git's name of an object: the SHA-1 of "<type> <size>\0"
// and the bytes.
func objectHash(typ plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	h.Write(objectHeader(typ, len(data)))
	h.Write(data)
	var out plumbing.Hash
	h.Sum(out[:0])
	return out
}

func objectHeader(typ plumbing.ObjectType, n int) []byte {
	b := append(typ.Bytes(), ' ')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, 0)
}

// Compression of loose objects, by size: up to smallObject zlib's
// default level, up to largeObject the fastest level, above it none (a
// zlib stream of stored blocks). Measured here: a 2 KB note takes 36 µs
// at level 1 against 77 µs at level 6; a 20,000-entry tree (1.2 MB)
// 15 ms at level 1 and 26–36 ms at level 6, for a ratio of 0.461 against
// 0.458 (tree entries are mostly hashes); a 35,000-entry tree (2.1 MB,
// the largest hall of a 100,000-note wing) 55 ms at level 1 (ratio
// 0.57), 33 ms Huffman-only (0.85) and 4.5 ms stored, against 2.7 ms to
// hash it. Loose objects are packed, with deltas, in the background, so
// their compression only costs the committer time and the disk room
// until the next pack.
const (
	smallObject = 4 << 10
	largeObject = 64 << 10
)

// looseBatch writes loose objects whose durability is settled together:
// each goes to a temporary file in objects/xx/; finish fsyncs them all,
// renames them into place and fsyncs their directories, before the ref
// that reaches them is updated.
type looseBatch struct {
	o       *objectStore
	files   []*os.File
	finals  []string
	seen    map[plumbing.Hash]bool
	dirs    map[string]bool
	newDirs bool
	written int
	bytes   int64 // the uncompressed size of the objects written
}

func (o *objectStore) batch() *looseBatch {
	return &looseBatch{o: o, seen: map[plumbing.Hash]bool{}, dirs: map[string]bool{}}
}

// put stores an object (unless the repository has it) and returns its id.
func (b *looseBatch) put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := objectHash(typ, data)
	if b.seen[h] {
		return h, nil
	}
	b.seen[h] = true
	if b.o.has(h) {
		return h, nil
	}
	hex := h.String()
	dir := filepath.Join(b.o.dir, hex[:2])
	if !b.dirs[dir] {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return h, fmt.Errorf("history: %w", err)
			}
			b.newDirs = true
		}
		b.dirs[dir] = true
	}
	buf := &b.o.buf
	buf.Reset()
	level := 0
	switch {
	case len(data) > largeObject:
		level = 2
	case len(data) > smallObject:
		level = 1
	}
	zw := b.o.zw[level]
	if zw == nil {
		zw, _ = zlib.NewWriterLevel(buf, [3]int{zlib.DefaultCompression, zlib.BestSpeed, zlib.NoCompression}[level])
		b.o.zw[level] = zw
	}
	zw.Reset(buf)
	zw.Write(objectHeader(typ, len(data)))
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return h, fmt.Errorf("history: compress %s: %w", hex, err)
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return h, fmt.Errorf("history: write object %s: %w", hex, err)
	}
	b.files = append(b.files, f)
	b.finals = append(b.finals, filepath.Join(dir, hex[2:]))
	if _, err := f.Write(buf.Bytes()); err != nil {
		return h, fmt.Errorf("history: write object %s: %w", hex, err)
	}
	b.written++
	b.bytes += int64(len(data))
	return h, nil
}

// putTree stores a tree (loose objects are never deltas).
func (b *looseBatch) putTree(data []byte, _ plumbing.Hash) (plumbing.Hash, error) {
	return b.put(plumbing.TreeObject, data)
}

// finish makes every object of the batch durable and visible.
func (b *looseBatch) finish() error {
	if err := parallel(len(b.files), func(i int) error {
		f := b.files[i]
		if err := f.Chmod(0o444); err != nil {
			return err
		}
		return f.Sync()
	}); err != nil {
		b.abort()
		return fmt.Errorf("history: fsync objects: %w", err)
	}
	for i, f := range b.files {
		f.Close()
		if err := os.Rename(f.Name(), b.finals[i]); err != nil {
			b.files = b.files[i:]
			b.abort()
			return fmt.Errorf("history: write object: %w", err)
		}
	}
	b.files = nil
	dirs := make([]string, 0, len(b.dirs)+1)
	for d := range b.dirs {
		dirs = append(dirs, d)
	}
	if b.newDirs {
		dirs = append(dirs, b.o.dir)
	}
	if err := parallel(len(dirs), func(i int) error { return atomicfile.SyncDir(dirs[i]) }); err != nil {
		return fmt.Errorf("history: fsync object directories: %w", err)
	}
	return nil
}

func (b *looseBatch) done() error { return b.finish() }
func (b *looseBatch) drop()       { b.abort() }

// account counts the loose objects left for the packer.
func (b *looseBatch) account(h *History) {
	h.loose.Add(int64(b.written))
	h.looseBytes.Add(b.bytes)
}

// abort removes the temporary files not yet renamed into place.
func (b *looseBatch) abort() {
	for _, f := range b.files {
		f.Close()
		os.Remove(f.Name())
	}
	b.files = nil
}

// parallel runs fn(0…n-1) on up to four goroutines (fsyncs of separate
// files overlap in the filesystem's journal) and returns the first error.
func parallel(n int, fn func(i int) error) error {
	const workers = 4
	if n <= 1 {
		if n == 1 {
			return fn(0)
		}
		return nil
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// close releases go-git's open files.
func (o *objectStore) close() {
	o.mu.Lock()
	o.st.Close()
	o.mu.Unlock()
}
