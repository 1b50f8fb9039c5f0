package gitstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// geometricFactor is the factor of git's geometric repacking: the
// smallest packs are merged while the next is less than twice their sum,
// which keeps the number of packs logarithmic in the number of objects.
const geometricFactor = 2

// PackingLock takes the repository's packing lock, or returns nil when
// another process packs: one packer at a time.
func (o *Store) PackingLock() *Lock {
	lock, err := AcquireLock(context.Background(), filepath.Join(o.common, "brainstem-packing"), LockTimes{Stale: time.Hour})
	if err != nil {
		return nil
	}
	return lock
}

// LooseObject is a loose object file.
type LooseObject struct {
	Hash plumbing.Hash
	Path string
}

// ListLoose lists the loose objects of the repository.
func (o *Store) ListLoose() ([]LooseObject, error) {
	dir := o.dir
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("gitstore: list loose objects: %w", err)
	}
	var out []LooseObject
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
				out = append(out, LooseObject{Hash: plumbing.NewHash(n), Path: filepath.Join(dir, d.Name(), f.Name())})
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

// maxDepth bounds a chain of deltas the packer makes (git's default).
const maxDepth = 50

// EncodePack writes the objects hashes into a new pack with the engine's
// own pack writer, makes it and its index durable and moves them into
// place. An object with a delta hint (the committer's note of the
// object it replaced at the same path) whose base is in the pack becomes
// a delta on it, in chains of at most maxDepth; an object already stored
// as a delta on another of the pack keeps that delta; every other object
// is whole. Measured at 100,000 notes, go-git's encoder spent about
// three minutes and 15 GB of allocations searching deltas among a
// thousand 2 MB hall trees; the committer knows each tree's base, and a
// delta of one changed entry is a comparison of the two trees' bytes.
func (o *Store) EncodePack(hashes []plumbing.Hash, hints map[plumbing.Hash]plumbing.Hash) (plumbing.Hash, error) {
	pk := &packer{st: o.storage(), set: map[plumbing.Hash]bool{}, kids: map[plumbing.Hash][]plumbing.Hash{}, baseOf: map[plumbing.Hash]plumbing.Hash{}}
	defer pk.st.Close()
	for _, id := range hashes {
		pk.set[id] = true
	}
	hinted := map[plumbing.Hash]bool{}
	for _, id := range hashes {
		if base, ok := hints[id]; ok && pk.set[base] && base != id {
			pk.kids[base] = append(pk.kids[base], id)
			hinted[id] = true
		}
	}
	var err error
	if pk.pw, err = o.NewPackWriter(); err != nil {
		return plumbing.ZeroHash, err
	}
	// Roots first (their chains follow them), then whatever a cycle of
	// hints left unwritten.
	for pass := range 2 {
		for _, id := range hashes {
			if pk.pw.seen[id] || pass == 0 && hinted[id] {
				continue
			}
			if err := pk.chain(id); err != nil {
				pk.pw.Abort()
				return plumbing.ZeroHash, err
			}
		}
	}
	return pk.pw.Finish()
}

// packer writes one pack.
type packer struct {
	st     *filesystem.Storage
	pw     *PackWriter
	set    map[plumbing.Hash]bool
	kids   map[plumbing.Hash][]plumbing.Hash // hinted objects by base
	baseOf map[plumbing.Hash]plumbing.Hash   // the base of every delta written
}

// chain writes root, then the objects hinted on it, each a delta on the
// one it replaced, keeping only the current base's bytes in memory along
// a straight chain (a second child starts a chain of its own).
func (pk *packer) chain(root plumbing.Hash) error {
	data, err := pk.first(root)
	if err != nil {
		return err
	}
	cur, depth := root, 0
	for {
		var next plumbing.Hash
		var nextData []byte
		for _, k := range pk.kids[cur] {
			if pk.pw.seen[k] {
				continue
			}
			if !next.IsZero() {
				if err := pk.chainFrom(k, cur, data, depth); err != nil {
					return err
				}
				continue
			}
			kd, err := pk.content(k)
			if err != nil {
				return err
			}
			if err := pk.write(k, kd, cur, data, depth); err != nil {
				return err
			}
			next, nextData = k, kd
		}
		if next.IsZero() {
			return nil
		}
		depth++
		if pk.baseOf[next].IsZero() {
			depth = 0
		}
		cur, data = next, nextData
	}
}

// chainFrom writes k as a delta on base (whose bytes are data), then its
// own chain.
func (pk *packer) chainFrom(k, base plumbing.Hash, data []byte, depth int) error {
	kd, err := pk.content(k)
	if err != nil {
		return err
	}
	if err := pk.write(k, kd, base, data, depth); err != nil {
		return err
	}
	next := depth + 1
	if pk.baseOf[k].IsZero() {
		next = 0
	}
	for _, g := range pk.kids[k] {
		if !pk.pw.seen[g] {
			if err := pk.chainFrom(g, k, kd, next); err != nil {
				return err
			}
		}
	}
	return nil
}

// write stores object id (bytes data) as a delta on base (bytes
// baseData) when that is much smaller and the chain not too deep, else
// whole.
func (pk *packer) write(id plumbing.Hash, data []byte, base plumbing.Hash, baseData []byte, depth int) error {
	if depth < maxDepth && !pk.cycle(id, base) {
		if delta := prefixSuffixDelta(baseData, data); delta != nil {
			pk.baseOf[id] = base
			return pk.pw.putDelta(id, base, delta)
		}
	}
	obj, err := pk.st.EncodedObject(plumbing.AnyObject, id)
	if err != nil {
		return fmt.Errorf("gitstore: pack %s: %w", id, err)
	}
	return pk.pw.putKnown(id, obj.Type(), data)
}

// first writes a chain's root: its stored delta when its base is in the
// pack, else whole; it returns the object's bytes (nil when nothing is
// based on it).
func (pk *packer) first(id plumbing.Hash) ([]byte, error) {
	obj, err := pk.st.DeltaObject(plumbing.AnyObject, id)
	if err != nil {
		return nil, fmt.Errorf("gitstore: pack %s: %w", id, err)
	}
	if do, ok := obj.(plumbing.DeltaObject); ok && pk.set[do.BaseHash()] && !pk.cycle(id, do.BaseHash()) {
		delta, err := ReadAll(do)
		if err != nil {
			return nil, err
		}
		pk.baseOf[id] = do.BaseHash()
		if err := pk.pw.putDelta(id, do.BaseHash(), delta); err != nil {
			return nil, err
		}
		if len(pk.kids[id]) == 0 {
			return nil, nil
		}
		return pk.content(id)
	}
	typ, data, err := pk.load(id)
	if err != nil {
		return nil, err
	}
	return data, pk.pw.putKnown(id, typ, data)
}

func (pk *packer) content(id plumbing.Hash) ([]byte, error) {
	_, data, err := pk.load(id)
	return data, err
}

func (pk *packer) load(id plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	obj, err := pk.st.EncodedObject(plumbing.AnyObject, id)
	if err != nil {
		return 0, nil, fmt.Errorf("gitstore: pack %s: %w", id, err)
	}
	data, err := ReadAll(obj)
	return obj.Type(), data, err
}

// cycle reports whether making id a delta on base would close a loop of
// delta bases (objects present in two packs with their deltas the other
// way round).
func (pk *packer) cycle(id, base plumbing.Hash) bool {
	for i, b := 0, base; i <= 4*maxDepth && !b.IsZero(); i++ {
		if b == id {
			return true
		}
		b = pk.baseOf[b]
	}
	return false
}

// PackInfo is one pack of objects/pack.
type PackInfo struct {
	Base  string // path without .pack / .idx
	Count int64
}

// ListPacks lists the packs (those with an index; none with a .keep).
func (o *Store) ListPacks() ([]PackInfo, error) {
	dir := filepath.Join(o.dir, "pack")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitstore: list packs: %w", err)
	}
	var out []PackInfo
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
		c, _, err := readIdx(base+".idx", false)
		if err != nil {
			return nil, err
		}
		out = append(out, PackInfo{Base: base, Count: c})
	}
	return out, nil
}

// readIdx reads a pack index (version 2): the number of its objects (the
// last entry of its fan-out table) and, when names is set, their ids (the
// table after it).
func readIdx(path string, names bool) (int64, []plumbing.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("gitstore: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var hdr [8 + 256*4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("gitstore: read %s: %w", path, err)
	}
	if string(hdr[:4]) != "\xfftOc" || binary.BigEndian.Uint32(hdr[4:8]) != 2 {
		return 0, nil, fmt.Errorf("gitstore: %s is not a version 2 pack index", path)
	}
	n := int64(binary.BigEndian.Uint32(hdr[len(hdr)-4:]))
	if !names {
		return n, nil, nil
	}
	ids := make([]plumbing.Hash, n)
	for i := range ids {
		if _, err := io.ReadFull(br, ids[i][:]); err != nil {
			return 0, nil, fmt.Errorf("gitstore: read %s: %w", path, err)
		}
	}
	return n, ids, nil
}

// GeometricSplit returns how many of the smallest packs (counts sorted
// ascending) to merge: they are rolled up while the next pack holds
// fewer than geometricFactor times their sum.
func GeometricSplit(counts []int64) int {
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

// MergeSmall merges the small packs GeometricSplit picks into one (the
// caller holds the packing lock), with the delta hints of EncodePack.
func (o *Store) MergeSmall(hints map[plumbing.Hash]plumbing.Hash) error {
	packs, err := o.ListPacks()
	if err != nil {
		return err
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].Count < packs[j].Count })
	counts := make([]int64, len(packs))
	for i, p := range packs {
		counts[i] = p.Count
	}
	k := GeometricSplit(counts)
	if k < 2 {
		return nil
	}
	seen := map[plumbing.Hash]bool{}
	var hashes []plumbing.Hash
	for _, p := range packs[:k] {
		_, ids, err := readIdx(p.Base+".idx", true)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				hashes = append(hashes, id)
			}
		}
	}
	packHash, err := o.EncodePack(hashes, hints)
	if err != nil {
		return err
	}
	for _, p := range packs[:k] {
		if strings.HasSuffix(p.Base, packHash.String()) {
			continue
		}
		RemovePack(p.Base)
	}
	o.Reindex()
	return nil
}

// RemovePack deletes a pack and its companion files, the pack first (git
// then skips its index; go-git lists packs by their .pack file).
func RemovePack(base string) {
	for _, ext := range []string{".pack", ".idx", ".rev", ".bitmap", ".mtimes", ".promisor"} {
		os.Remove(base + ext)
	}
}
