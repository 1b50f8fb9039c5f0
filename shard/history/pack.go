package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// Packing policy: loose objects are packed once there are this many
// (each commit writes a blob, the trees on its path and itself), with
// deltas searched in a window of packWindow objects; then the smallest
// packs are merged while the next is less than twice their sum
// (git's geometric repacking, factor 2), which keeps the number of packs
// logarithmic in the number of objects.
const (
	defaultPackEvery = 1000
	packWindow       = 10
	geometricFactor  = 2
)

// packLoose packs every loose object of the repository into one new pack
// (go-git's encoder, with deltas), makes it durable, deletes the loose
// objects it holds, then merges small packs. Another process packing at
// the same time makes it skip a round. writeMu is held.
func (h *History) packLoose() error {
	lock, err := acquireLock(context.Background(), filepath.Join(h.repo.common, "brainstem-packing"), lockTimes{stale: time.Hour})
	if err != nil {
		return nil // someone else is packing
	}
	defer lock.release()
	loose, err := listLoose(h.objs.dir)
	if err != nil || len(loose) == 0 {
		return err
	}
	start := time.Now()
	hashes := make([]plumbing.Hash, len(loose))
	for i, l := range loose {
		hashes[i] = l.hash
	}
	if _, err := h.encodePack(hashes); err != nil {
		return err
	}
	for _, l := range loose {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("history: could not delete a packed loose object", "path", l.path, "err", err)
		}
	}
	h.loose.Store(0)
	h.log.Debug("history: packed loose objects", "objects", len(loose), "took_seconds", time.Since(start).Seconds())
	return h.mergePacks()
}

// looseObject is a loose object file.
type looseObject struct {
	hash plumbing.Hash
	path string
}

// listLoose lists the loose objects under the objects directory.
func listLoose(dir string) ([]looseObject, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("history: list loose objects: %w", err)
	}
	var out []looseObject
	for _, d := range ents {
		if len(d.Name()) != 2 || !d.IsDir() || !isHex(d.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, d.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if n := d.Name() + f.Name(); len(n) == 40 && isHex(n) {
				out = append(out, looseObject{hash: plumbing.NewHash(n), path: filepath.Join(dir, d.Name(), f.Name())})
			} else if strings.HasPrefix(f.Name(), "tmp_obj_") {
				removeIfOld(filepath.Join(dir, d.Name(), f.Name()))
			}
		}
	}
	return out, nil
}

// staleTemp is the age past which a temporary object or pack file is
// taken for one a crashed writer left (git's own writers finish in
// seconds).
const staleTemp = time.Hour

// removeIfOld removes a temporary file older than staleTemp.
func removeIfOld(path string) {
	if fi, err := os.Lstat(path); err == nil && time.Since(fi.ModTime()) > staleTemp {
		os.Remove(path)
	}
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// packStorage is a go-git storage of its own for the packer, so that
// encoding a pack does not hold the readers' storage.
func (h *History) packStorage() *filesystem.Storage {
	var fsys = osfs.New(h.repo.gitDir)
	if h.repo.common != h.repo.gitDir {
		return filesystem.NewStorageWithOptions(dotgit.NewRepositoryFilesystem(fsys, osfs.New(h.repo.common)), cache.NewObjectLRU(objectCacheBytes), filesystem.Options{})
	}
	return filesystem.NewStorageWithOptions(fsys, cache.NewObjectLRU(objectCacheBytes), filesystem.Options{})
}

// encodePack writes the objects hashes into a new pack with go-git's
// encoder (deltas within packWindow), builds its index by parsing it,
// makes both durable and moves them into place (index first).
func (h *History) encodePack(hashes []plumbing.Hash) (plumbing.Hash, error) {
	dir := filepath.Join(h.objs.dir, "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("history: %w", err)
	}
	f, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("history: pack: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	st := h.packStorage()
	defer st.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	packHash, err := packfile.NewEncoder(bw, st, false).Encode(hashes, packWindow)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("history: pack: %w", err)
	}
	idxPath, err := indexPack(f, dir)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	base := filepath.Join(dir, "pack-"+packHash.String())
	if err := os.Rename(idxPath, base+".idx"); err != nil {
		os.Remove(idxPath)
		return plumbing.ZeroHash, fmt.Errorf("history: pack: %w", err)
	}
	if err := os.Rename(f.Name(), base+".pack"); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("history: pack: %w", err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("history: pack: %w", err)
	}
	h.objs.reindex()
	return packHash, nil
}

// indexPack parses the pack in f (go-git's parser) and writes its index
// to a durable temporary file in dir, whose name it returns.
func indexPack(f *os.File, dir string) (string, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("history: index the pack: %w", err)
	}
	w := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(f), w)
	if err != nil {
		return "", fmt.Errorf("history: index the pack: %w", err)
	}
	if _, err := p.Parse(); err != nil {
		return "", fmt.Errorf("history: index the pack: %w", err)
	}
	idx, err := w.Index()
	if err != nil {
		return "", fmt.Errorf("history: index the pack: %w", err)
	}
	out, err := os.CreateTemp(dir, "tmp_idx_")
	if err != nil {
		return "", fmt.Errorf("history: index the pack: %w", err)
	}
	obw := bufio.NewWriter(out)
	_, err = idxfile.NewEncoder(obw).Encode(idx)
	if err == nil {
		err = obw.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("history: index the pack: %w", err)
	}
	return out.Name(), nil
}

// packInfo is one pack of objects/pack.
type packInfo struct {
	base  string // path without .pack / .idx
	count int64
}

// listPacks lists the packs (those with an index; none with a .keep).
func listPacks(dir string) ([]packInfo, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: list packs: %w", err)
	}
	var out []packInfo
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "tmp_pack_") || strings.HasPrefix(n, "tmp_idx_") {
			removeIfOld(filepath.Join(dir, n))
		}
		if !strings.HasPrefix(n, "pack-") || !strings.HasSuffix(n, ".idx") {
			continue
		}
		base := filepath.Join(dir, strings.TrimSuffix(n, ".idx"))
		if _, err := os.Stat(base + ".keep"); err == nil {
			continue
		}
		if _, err := os.Stat(base + ".pack"); err != nil {
			continue
		}
		idx, err := readIdx(base + ".idx")
		if err != nil {
			return nil, err
		}
		c, _ := idx.Count()
		out = append(out, packInfo{base: base, count: c})
	}
	return out, nil
}

func readIdx(path string) (*idxfile.MemoryIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	return idx, nil
}

// geometricSplit returns how many of the smallest packs (counts sorted
// ascending) to merge: they are rolled up while the next pack holds
// fewer than geometricFactor times their sum.
func geometricSplit(counts []int64) int {
	if len(counts) < 2 {
		return 0
	}
	sum, k := counts[0], 1
	for k < len(counts) && counts[k] < geometricFactor*sum {
		sum += counts[k]
		k++
	}
	if k < 2 {
		return 0
	}
	return k
}

// mergePacks merges the small packs geometricSplit picks into one.
func (h *History) mergePacks() error {
	dir := filepath.Join(h.objs.dir, "pack")
	packs, err := listPacks(dir)
	if err != nil {
		return err
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].count < packs[j].count })
	counts := make([]int64, len(packs))
	for i, p := range packs {
		counts[i] = p.count
	}
	k := geometricSplit(counts)
	if k < 2 {
		return nil
	}
	seen := map[plumbing.Hash]bool{}
	var hashes []plumbing.Hash
	for _, p := range packs[:k] {
		idx, err := readIdx(p.base + ".idx")
		if err != nil {
			return err
		}
		it, err := idx.Entries()
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		for {
			e, err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("history: %w", err)
			}
			if !seen[e.Hash] {
				seen[e.Hash] = true
				hashes = append(hashes, e.Hash)
			}
		}
		it.Close()
	}
	packHash, err := h.encodePack(hashes)
	if err != nil {
		return err
	}
	for _, p := range packs[:k] {
		if strings.HasSuffix(p.base, packHash.String()) {
			continue
		}
		removePack(p.base)
	}
	h.objs.reindex()
	return nil
}

// removePack deletes a pack and its companion files, the pack first (git
// then skips its index; go-git lists packs by their .pack file).
func removePack(base string) {
	for _, ext := range []string{".pack", ".idx", ".rev", ".bitmap", ".mtimes", ".promisor"} {
		os.Remove(base + ext)
	}
}
