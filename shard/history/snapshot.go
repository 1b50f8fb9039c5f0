package history

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/internal/durable"
)

// The version-index snapshot, in internal/codec's encoding:
//
//	8 bytes  snapshotMagic
//	u32      snapshotVersion (little-endian)
//	str      wing · str prefix · str branch
//	20 bytes head (the commit the index reflects)
//	uvarint  last sequence number committed
//	uvarint  commits; per commit: 20 bytes id · time at · str author ·
//	         str action · str tool · str reason · str key · uvarint seq
//	uvarint  lineages; per lineage: uvarint versions; per version:
//	         uvarint commit (its position above) · str path · str from ·
//	         20 bytes blob · 32 bytes sha256 · byte flags (1 removed, 2 purged)
//	u32      CRC-32C of everything before (internal/durable's trailer)
//
// It is derived data: a missing, corrupt or foreign snapshot only costs a
// rebuild of the index from git.
const (
	snapshotMagic   = "BSHIST\x00\x01"
	snapshotVersion = 1
	snapshotName    = "history.snapshot"
	maxSnapCount    = 1 << 28
)

// errSnapshot wraps every reason a snapshot is refused.
var errSnapshot = errors.New("history: not a version-index snapshot of this wing")

func (h *History) snapshotPath() string { return filepath.Join(h.opt.StateDir, snapshotName) }

// snapKey is what a snapshot must match to be used.
type snapKey struct{ wing, prefix, branch string }

func (h *History) snapKey() snapKey {
	return snapKey{h.opt.Wing, h.repo.prefix, string(h.repo.currentBranch())}
}

// saveSnapshot writes the snapshot durably. writeMu is held (so that the
// index does not move under the committer), and h.mu is read-held while
// encoding.
func (h *History) saveSnapshot() error {
	var dirty int
	err := durable.WriteSnapshot(h.snapshotPath(), 0o600, func(w io.Writer) error {
		h.mu.RLock()
		defer h.mu.RUnlock()
		dirty = h.snapDirty
		return encodeSnapshot(w, h.snapKey(), h.ix)
	})
	if err != nil {
		return fmt.Errorf("history: save the snapshot: %w", err)
	}
	h.mu.Lock()
	h.snapDirty -= dirty
	h.mu.Unlock()
	h.snapLast = time.Now()
	return nil
}

// encodeSnapshot writes everything but the checksum.
func encodeSnapshot(w io.Writer, k snapKey, ix *versionIndex) error {
	b := make([]byte, 0, 64<<10)
	b = append(b, snapshotMagic...)
	b = codec.AppendUint32(b, snapshotVersion)
	b = codec.AppendString(b, k.wing)
	b = codec.AppendString(b, k.prefix)
	b = codec.AppendString(b, k.branch)
	b = append(b, ix.head[:]...)
	b = codec.AppendUvarint(b, ix.lastSeq)
	commits := ix.allCommits()
	sort.Slice(commits, func(i, j int) bool { return commits[i].id.String() < commits[j].id.String() })
	pos := make(map[*commitInfo]uint64, len(commits))
	b = codec.AppendUvarint(b, uint64(len(commits)))
	flush := func() error {
		if len(b) < 48<<10 {
			return nil
		}
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	for i, c := range commits {
		pos[c] = uint64(i)
		b = append(b, c.id[:]...)
		b = codec.AppendTime(b, c.at)
		for _, s := range []string{c.author, c.action, c.tool, c.reason, c.key} {
			b = codec.AppendString(b, s)
		}
		b = codec.AppendUvarint(b, c.seq)
		if err := flush(); err != nil {
			return err
		}
	}
	ls := ix.lineages()
	sort.Slice(ls, func(i, j int) bool { return ls[i].newest().path < ls[j].newest().path })
	b = codec.AppendUvarint(b, uint64(len(ls)))
	for _, l := range ls {
		b = codec.AppendUvarint(b, uint64(len(l.vs)))
		for i := range l.vs {
			v := &l.vs[i]
			b = codec.AppendUvarint(b, pos[v.c])
			b = codec.AppendString(b, v.path)
			b = codec.AppendString(b, v.from)
			b = append(b, v.blob[:]...)
			b = append(b, v.sum[:]...)
			var flags byte
			if v.removed {
				flags |= 1
			}
			if v.purged {
				flags |= 2
			}
			b = append(b, flags)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	_, err := w.Write(b)
	return err
}

// loadSnapshot restores the version index from the snapshot, or returns
// an empty one (which Open rebuilds from git) when there is none or it
// cannot be used.
func (h *History) loadSnapshot() *versionIndex {
	f, err := os.Open(h.snapshotPath())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("history: cannot open the version-index snapshot; rebuilding it from git", "err", err)
		}
		return newVersionIndex()
	}
	defer f.Close()
	ix, err := decodeSnapshot(f, h.snapKey())
	if err != nil {
		h.log.Warn("history: the version-index snapshot is unusable; rebuilding it from git", "err", err)
		return newVersionIndex()
	}
	return ix
}

// laterLineage reports whether a, rather than b, holds the path both
// end at: the live one, else the one changed last.
func laterLineage(a, b *lineage) bool {
	an, bn := a.newest(), b.newest()
	if an.removed != bn.removed {
		return !an.removed
	}
	return an.c.at.After(bn.c.at)
}

// decodeSnapshot reads a snapshot, verifying its key and checksum.
func decodeSnapshot(r io.Reader, k snapKey) (*versionIndex, error) {
	cr := durable.NewSnapshotReader(r)
	s := codec.NewStream(cr)
	if string(s.Fixed("magic", len(snapshotMagic))) != snapshotMagic || s.Uint32("version") != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown header (%v)", errSnapshot, s.Err())
	}
	got := snapKey{s.String("wing", maxFieldBytes), s.String("prefix", maxPathBytes), s.String("branch", maxPathBytes)}
	if s.Err() == nil && got != k {
		return nil, fmt.Errorf("%w: it is of %+v", errSnapshot, got)
	}
	ix := newVersionIndex()
	copy(ix.head[:], s.Fixed("head", 20))
	ix.lastSeq = s.Uvarint("last seq", 1<<63)
	commits, err := decodeCommits(s)
	if err != nil {
		return nil, err
	}
	if err := decodeLineages(s, ix, commits); err != nil {
		return nil, err
	}
	if err := cr.Verify(); err != nil {
		return nil, fmt.Errorf("%w: %w", errSnapshot, err)
	}
	return ix, nil
}

func decodeCommits(s *codec.Stream) ([]*commitInfo, error) {
	n := s.Uvarint("commits", maxSnapCount)
	var out []*commitInfo
	for i := uint64(0); i < n && s.Err() == nil; i++ {
		c := &commitInfo{}
		copy(c.id[:], s.Fixed("commit id", 20))
		c.at = s.Time("at")
		c.author = s.String("author", maxFieldBytes)
		c.action = s.String("action", maxFieldBytes)
		c.tool = s.String("tool", maxFieldBytes)
		c.reason = s.String("reason", maxTextBytes)
		c.key = s.String("key", maxFieldBytes)
		c.seq = s.Uvarint("seq", 1<<63)
		out = append(out, c)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", errSnapshot, err)
	}
	return out, nil
}

func decodeLineages(s *codec.Stream, ix *versionIndex, commits []*commitInfo) error {
	n := s.Uvarint("lineages", maxSnapCount)
	var ls []*lineage
	for i := uint64(0); i < n && s.Err() == nil; i++ {
		l := &lineage{}
		nv := s.Uvarint("versions", maxSnapCount)
		for j := uint64(0); j < nv && s.Err() == nil; j++ {
			ci := s.Uvarint("commit", maxSnapCount)
			v := version{path: s.String("path", maxPathBytes), from: s.String("from", maxPathBytes)}
			copy(v.blob[:], s.Fixed("blob", 20))
			copy(v.sum[:], s.Fixed("sum", 32))
			flags := s.Byte("flags")
			if s.Err() != nil {
				break
			}
			if ci >= uint64(len(commits)) || flags > 3 || v.path == "" {
				s.Fail("version %d of lineage %d: commit %d of %d, flags %d", j, i, ci, len(commits), flags)
				break
			}
			v.c, v.removed, v.purged = commits[ci], flags&1 != 0, flags&2 != 0
			l.vs = append(l.vs, v)
		}
		if s.Err() != nil {
			break
		}
		if len(l.vs) == 0 {
			s.Fail("lineage %d without versions", i)
			break
		}
		ls = append(ls, l)
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("%w: %w", errSnapshot, err)
	}
	ix.restore(ls)
	return nil
}

// restore files restored lineages under their newest paths, and under
// the paths they were moved away from (the latest move wins).
func (ix *versionIndex) restore(ls []*lineage) {
	for _, l := range ls {
		p := l.newest().path
		old := ix.byPath[p]
		if old != nil && !laterLineage(l, old) {
			ix.buried = append(ix.buried, l)
			continue
		}
		if old != nil {
			ix.buried = append(ix.buried, old)
		}
		ix.byPath[p] = l
	}
	movedAt := map[string]time.Time{}
	for _, l := range ls {
		for i := range l.vs {
			v := &l.vs[i]
			ix.commits[v.c.id] = v.c
			if v.from == "" || ix.byPath[v.from] != nil {
				continue
			}
			if at, ok := movedAt[v.from]; !ok || !v.c.at.Before(at) {
				ix.moved[v.from], movedAt[v.from] = l, v.c.at
			}
		}
	}
}
