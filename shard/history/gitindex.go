package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// statInfo is what git's index records of a file: its stat cache.
type statInfo struct {
	ctime, mtime time.Time
	dev, ino     uint32
	uid, gid     uint32
	size         uint32
}

// markIndex notes the paths whose .git/index entries the commits ms
// changed. writeMu is held.
func (h *History) markIndex(ms []made) {
	for _, m := range ms {
		for _, c := range m.changes {
			h.idxDirty[c.path] = true
			if c.from != "" {
				h.idxDirty[c.from] = true
			}
		}
	}
}

// markOthers notes the paths that commits by others changed (a pull, a
// person's commit, another shard) and wakes the committer, which
// rewrites their .git/index entries when idle. mu is held.
func (h *History) markOthers(changes []pathChange, all bool) {
	h.idxMu.Lock()
	if h.idxOthers == nil {
		h.idxOthers = map[string]bool{}
	}
	for _, c := range changes {
		h.idxOthers[c.path] = true
		if c.from != "" {
			h.idxOthers[c.from] = true
		}
	}
	h.idxOthersAll = h.idxOthersAll || all
	h.idxMu.Unlock()
	if h.q != nil {
		h.q.poke()
	}
}

// takeOthers moves the paths commits by others changed into idxDirty,
// with the tree model brought to the branch head that holds them.
// writeMu is held.
func (h *History) takeOthers() error {
	h.idxMu.Lock()
	others, all := h.idxOthers, h.idxOthersAll
	h.idxOthers, h.idxOthersAll = nil, false
	h.idxMu.Unlock()
	if len(others) == 0 && !all {
		return nil
	}
	for p := range others {
		h.idxDirty[p] = true
	}
	h.idxAll = h.idxAll || all
	head, err := h.repo.refs.Read(h.repo.currentBranch())
	if err != nil {
		return err
	}
	return h.syncModel(head)
}

func (h *History) indexPath() string { return filepath.Join(h.repo.gitDir, "index") }

// readIndex decodes .git/index (a missing one is empty, version 2).
func (h *History) readIndex() (*index.Index, time.Time, error) {
	f, err := os.Open(h.indexPath())
	if errors.Is(err, fs.ErrNotExist) {
		return &index.Index{Version: 2}, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("history: %w", err)
	}
	idx := &index.Index{}
	if err := index.NewDecoder(bufio.NewReaderSize(f, 256<<10)).Decode(idx); err != nil {
		return nil, time.Time{}, fmt.Errorf("history: read .git/index: %w", err)
	}
	return idx, fi.ModTime(), nil
}

// writeIndex brings the wing's entries of .git/index in step with the
// tree model: each changed path gets the committed blob and the stat data
// of its worktree file (when the file holds that blob; otherwise stat data
// that makes git look at the content), so `git status` is clean. Entries
// of other paths are kept as they are. It works under git's index.lock,
// and leaves the index alone while a merge is in progress. writeMu is
// held.
func (h *History) writeIndex(ctx context.Context) error {
	if len(h.idxDirty) == 0 && !h.idxAll {
		return nil
	}
	start := time.Now()
	lock, err := gitstore.AcquireLock(ctx, h.indexPath(), h.repo.refs.Locks)
	if err != nil {
		return err
	}
	defer lock.Release()
	idx, _, err := h.readIndex()
	if err != nil {
		return err
	}
	for _, e := range idx.Entries {
		if e.Stage != 0 {
			if !h.idxWarn {
				h.log.Warn("history: .git/index has unmerged entries (a merge is in progress); it is left alone until they are resolved")
				h.idxWarn = true
			}
			return nil
		}
	}
	paths, err := h.indexPaths(idx)
	if err != nil {
		return err
	}
	byName := make(map[string]int, len(idx.Entries))
	for i, e := range idx.Entries {
		byName[e.Name] = i
	}
	drop := map[int]bool{}
	for _, p := range paths {
		if err := h.indexEntry(idx, byName, drop, p); err != nil {
			return err
		}
	}
	if len(drop) > 0 {
		kept := idx.Entries[:0]
		for i, e := range idx.Entries {
			if !drop[i] {
				kept = append(kept, e)
			}
		}
		idx.Entries = kept
	}
	idx.Cache = nil // the tree cache describes the old entries
	idx.EndOfIndexEntry = nil
	if err := lock.CommitFunc(func(w io.Writer) error { return index.NewEncoder(w).Encode(idx) }); err != nil {
		return err
	}
	h.idxDirty = map[string]bool{}
	h.idxAll = false
	h.seen = nil
	h.idxLast = time.Now()
	h.idxTook = h.idxLast.Sub(start)
	return nil
}

// seenFile is the stat data of a file whose bytes the engine read (and
// found unchanged while reading) and the blob they make.
type seenFile struct {
	st   statInfo
	blob plumbing.Hash
}

// sawFile remembers that the file rel, of info before (taken before it
// was read), holds blob, if it did not change while it was read, so that
// the next .git/index update need not read it again. writeMu is held.
func (h *History) sawFile(rel string, before fs.FileInfo, blob plumbing.Hash) {
	after, err := os.Lstat(h.abs(rel))
	if before == nil || err != nil || statOf(before) != statOf(after) {
		return
	}
	if h.seen == nil {
		h.seen = map[string]seenFile{}
	}
	h.seen[rel] = seenFile{st: statOf(after), blob: blob}
}

// indexPaths are the brain paths whose entries writeIndex rewrites.
func (h *History) indexPaths(idx *index.Index) ([]string, error) {
	set := h.idxDirty
	if h.idxAll {
		set = map[string]bool{}
		for p := range h.idxDirty {
			set[p] = true
		}
		known, err := h.headPaths()
		if err != nil {
			return nil, err
		}
		for _, p := range known {
			set[p] = true
		}
		for _, e := range idx.Entries {
			if rel, ok := h.repo.brainPath(e.Name); ok && h.opt.Tracked(rel) {
				set[rel] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// indexEntry sets (or marks for removal) the entry of brain path p.
func (h *History) indexEntry(idx *index.Index, byName map[string]int, drop map[int]bool, p string) error {
	tp := h.repo.treePath(p)
	blob, mode, had, err := h.tree.Lookup(tp)
	if err != nil {
		return err
	}
	i, exists := byName[tp]
	if !had {
		if exists {
			drop[i] = true
		}
		return nil
	}
	if !exists {
		idx.Entries = append(idx.Entries, &index.Entry{Name: tp})
		i = len(idx.Entries) - 1
		byName[tp] = i
	}
	e := idx.Entries[i]
	*e = index.Entry{Name: tp, Hash: blob, Mode: mode}
	fi, err := os.Lstat(h.abs(p))
	if err != nil || !fi.Mode().IsRegular() {
		return nil // no file: git sees it deleted, as it is
	}
	st := statOf(fi)
	if seen, ok := h.seen[p]; !ok || seen.blob != blob || seen.st != st {
		b, err := os.ReadFile(h.abs(p))
		if err != nil || gitstore.Hash(plumbing.BlobObject, b) != blob {
			return nil // other bytes than committed (a change in flight): git compares the content
		}
	}
	e.CreatedAt, e.ModifiedAt = st.ctime, st.mtime
	e.Dev, e.Inode, e.UID, e.GID, e.Size = st.dev, st.ino, st.uid, st.gid, st.size
	return nil
}

// statCache is .git/index read as git's stat cache: an entry whose stat
// data matches the file says the file holds the entry's blob.
type statCache struct {
	entries map[string]*index.Entry
	mtime   time.Time // the index file's: entries not older are racy
}

// loadStatCache reads .git/index as a stat cache (nil if unusable).
func (h *History) loadStatCache() *statCache {
	idx, mtime, err := h.readIndex()
	if err != nil {
		h.log.Warn("history: .git/index is unreadable; every tracked file is read at open", "err", err)
		return nil
	}
	c := &statCache{entries: make(map[string]*index.Entry, len(idx.Entries)), mtime: mtime}
	for _, e := range idx.Entries {
		if e.Stage == 0 {
			c.entries[e.Name] = e
		}
	}
	return c
}

// clean reports whether the file at tree path tp, whose info is fi, holds
// blob, as git decides it: the index entry records that blob and the
// file's size, mtime, ctime and inode, and the entry is not "racily
// clean" (its mtime not older than the index file itself, when the file
// may have changed again within the same timestamp).
func (c *statCache) clean(tp string, fi fs.FileInfo, blob plumbing.Hash) bool {
	e := c.entries[tp]
	if e == nil || e.Hash != blob || !fi.Mode().IsRegular() {
		return false
	}
	st := statOf(fi)
	if e.Size != st.size || !e.ModifiedAt.Equal(st.mtime) || !e.CreatedAt.Equal(st.ctime) || e.Inode != st.ino {
		return false
	}
	return e.ModifiedAt.Before(c.mtime)
}
