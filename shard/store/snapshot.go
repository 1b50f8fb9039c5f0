package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/internal/codec"
	"github.com/brainstem/brainstem/internal/durable"
	"github.com/brainstem/brainstem/shard/index"
)

// stateDirName is the default state directory, at the top of the brain. It
// is hidden (so it is never taken for part of the brain) and holds a
// .gitignore that ignores it, so it never reaches a brain's repository.
const stateDirName = ".brainstem"

// The snapshot file: snapshotMagic, a little-endian uint32 version, the
// injection audit's version (injection.Version, a uint32), the wing, the
// notes' metadata (with the audit's findings), the index (index.Save), and
// a CRC-32C of everything before it (internal/durable's snapshot trailer). snapshotVersion changes with the
// format and with anything that changes what the store derives from a file
// (parsing, titles, links), and injection.Version with the audit's rules,
// so that another version's snapshot is rebuilt, not misread.
const (
	snapshotMagic   = "BSSNAP\x00\x00\x01"
	snapshotVersion = 2
)

// Snapshot policy: after a change, save at most this often while running;
// always at Close; and at once after an Open that had to read many notes.
const (
	snapshotEvery       = 10 * time.Minute
	snapshotRereadNotes = 1000
)

// snapshotState is the store's persisted index: a snapshot of the index
// and of every note's metadata (signature, hash, title, links), saved at
// Close and now and then, from which Open restores the wing and re-reads
// only the files whose signature changed. It is derived data: a missing,
// corrupt, foreign or stale snapshot only costs a full read of the wing.
type snapshotState struct {
	dir      string       // the state directory; "" disables snapshots
	dirty    atomic.Int64 // changes not in the saved snapshot
	mu       sync.Mutex   // one save at a time; guards the fields below
	lastSave time.Time
	loaded   bool // Open restored the wing from a snapshot
}

func (s *Store) snapshotPath() string {
	return filepath.Join(s.snap.dir, "snapshots", s.wing+".snapshot")
}

// afterOpen saves a snapshot in the background when Open had to read many
// notes (there was no usable snapshot, or many files changed since), so
// that the next start is fast even if this run does not end cleanly. Open's
// own reads counted as changes: fewer of them are saved later.
func (st *snapshotState) afterOpen(s *Store) {
	if st.dir == "" || st.loaded && st.dirty.Load() < snapshotRereadNotes {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.saveSnapshot(); err != nil {
			s.log.Warn("store: could not save the index snapshot; the next start re-reads the wing", "err", err)
		}
	}()
}

// maybeSaveSnapshot saves the snapshot if it is behind and the last save
// is older than snapshotEvery. The background loops call it.
func (s *Store) maybeSaveSnapshot() {
	if s.snap.dir == "" || s.snap.dirty.Load() == 0 {
		return
	}
	s.snap.mu.Lock()
	recent := time.Since(s.snap.lastSave) < snapshotEvery
	s.snap.mu.Unlock()
	if recent {
		return
	}
	if err := s.saveSnapshot(); err != nil {
		s.log.Warn("store: could not save the index snapshot; the next start re-reads more notes", "err", err)
	}
}

// snapMeta is one note's metadata as the snapshot holds it.
type snapMeta struct {
	id string
	m  *meta
}

// saveSnapshot writes the snapshot durably (durable.WriteSnapshot:
// temporary file, fsync, rename) if anything changed since the last one. The notes' metadata is copied
// first, then the index is written (holding its read lock); a change that
// lands in between is in the index but not in the metadata, which only
// makes the next Open re-read that note.
func (s *Store) saveSnapshot() error {
	if s.snap.dir == "" {
		return nil
	}
	s.snap.mu.Lock()
	defer s.snap.mu.Unlock()
	dirty := s.snap.dirty.Load()
	if dirty == 0 && !s.snap.lastSave.IsZero() {
		return nil
	}
	if err := s.prepareStateDir(); err != nil {
		return err
	}
	s.mu.RLock()
	metas := make([]snapMeta, 0, len(s.notes))
	for id, m := range s.notes {
		metas = append(metas, snapMeta{id, m})
	}
	s.mu.RUnlock()
	sort.Slice(metas, func(i, j int) bool { return metas[i].id < metas[j].id })

	if err := durable.WriteSnapshot(s.snapshotPath(), 0o600, func(w io.Writer) error {
		if err := writeSnapshotHeader(w, s.wing, metas); err != nil {
			return err
		}
		return s.ix.Save(w)
	}); err != nil {
		return err
	}
	s.snap.dirty.Add(-dirty)
	s.snap.lastSave = time.Now()
	return nil
}

// prepareStateDir creates the state directory (with a .gitignore that
// ignores it when it is the default one inside the brain) and its
// snapshots directory.
func (s *Store) prepareStateDir() error {
	dir := filepath.Join(s.snap.dir, "snapshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The default state directory (<brain>/.brainstem, or a wing's
	// directory below it) ignores itself in git: it is never part of the
	// brain.
	top := filepath.Join(s.root, stateDirName)
	if s.snap.dir == top || strings.HasPrefix(s.snap.dir, top+string(filepath.Separator)) {
		if err := os.MkdirAll(top, 0o755); err != nil {
			return err
		}
		ign := filepath.Join(top, ".gitignore")
		if _, err := os.Lstat(ign); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(ign, []byte("# Written by brainstem: the shards' state, never part of the brain.\n*\n"), filePerm); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeSnapshotHeader(w io.Writer, wing string, metas []snapMeta) error {
	b := make([]byte, 0, 64<<10)
	b = append(b, snapshotMagic...)
	b = codec.AppendUint32(b, snapshotVersion)
	b = codec.AppendUint32(b, injection.Version)
	b = codec.AppendString(b, wing)
	b = codec.AppendUvarint(b, uint64(len(metas)))
	for _, sm := range metas {
		m := sm.m
		b = codec.AppendString(b, sm.id)
		b = codec.AppendString(b, m.title)
		b = codec.AppendString(b, m.updatedAt)
		b = codec.AppendUvarint(b, uint64(len(m.links)))
		for _, l := range m.links {
			b = codec.AppendString(b, l)
		}
		b = codec.AppendVarint(b, m.sig.size)
		b = codec.AppendVarint(b, m.sig.mtime)
		b = codec.AppendUvarint(b, m.sig.ino)
		b = append(b, m.hash[:]...)
		b = codec.AppendUvarint(b, uint64(m.bodyOff))
		b = codec.AppendVarint(b, m.readAt)
		b = codec.AppendUvarint(b, uint64(len(m.flags)))
		for _, f := range m.flags {
			b = codec.AppendString(b, f.Rule)
			b = codec.AppendString(b, f.Why)
			b = codec.AppendUvarint(b, uint64(f.At))
		}
		if len(b) > 48<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

// loadSnapshot restores the index and the notes' metadata from the wing's
// snapshot. It reports false, leaving the store empty, when there is no
// snapshot or it cannot be used (logged as a warning, with the reason).
func (s *Store) loadSnapshot() bool {
	if s.snap.dir == "" {
		return false
	}
	path := s.snapshotPath()
	f, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("store: cannot open the index snapshot; reading every note", "err", err)
		}
		return false
	}
	defer f.Close()
	start := time.Now()
	ix, notes, err := readSnapshot(f, s.wing)
	if err != nil {
		s.log.Warn("store: the index snapshot is unusable; reading every note (it is rebuilt)", "path", path, "err", err)
		return false
	}
	s.ix = ix
	s.notes = notes
	s.ids = make([]string, 0, len(notes))
	for id, m := range notes {
		s.ids = append(s.ids, id)
		s.linkLocked(id, m.links)
	}
	sort.Strings(s.ids)
	s.tocGen++
	s.snap.loaded = true
	s.snap.lastSave = time.Now() // the file on disk is current
	s.log.Info("store: loaded the index snapshot", "notes", len(notes), "took_seconds", time.Since(start).Seconds())
	return true
}

// errSnapshot wraps every reason a snapshot is refused.
var errSnapshot = errors.New("not a snapshot of this wing by this version")

// maxSnapString bounds a string of the snapshot (an id, a title, a link).
const maxSnapString = brain.MaxPathLen * 64

// readSnapshot decodes a snapshot, verifying its checksum: every byte
// before the trailer is read through cr, which hashes it (the stream and
// index.Load read through cr itself, cr being an io.ByteReader), and
// cr.Verify reads the trailer.
func readSnapshot(r io.Reader, wing string) (*index.Index, map[string]*meta, error) {
	cr := durable.NewSnapshotReader(r)
	d := codec.NewStream(cr)
	magic := string(d.Fixed("magic", len(snapshotMagic)))
	version := d.Uint32("version")
	audit := d.Uint32("injection audit version")
	if d.Err() == nil && (magic != snapshotMagic || version != snapshotVersion || audit != injection.Version) {
		return nil, nil, fmt.Errorf("%w: unknown header", errSnapshot)
	}
	if w := d.String("wing", maxSnapString); d.Err() == nil && w != wing {
		return nil, nil, fmt.Errorf("%w: it is of wing %q", errSnapshot, w)
	}
	notes, err := readSnapshotNotes(d, wing)
	if err != nil {
		return nil, nil, err
	}
	ix, err := index.Load(cr)
	if err != nil {
		return nil, nil, err
	}
	if err := cr.Verify(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errSnapshot, err)
	}
	return ix, notes, nil
}

// readSnapshotNotes reads the notes' metadata of a snapshot of wing.
func readSnapshotNotes(d *codec.Stream, wing string) (map[string]*meta, error) {
	n := d.Uvarint("notes", math.MaxInt32)
	if err := d.Err(); err != nil {
		return nil, snapshotErr(err)
	}
	notes := make(map[string]*meta, min(n, 1<<10))
	for range n {
		id := d.String("note id", maxSnapString)
		m := &meta{title: d.String("title", maxSnapString), updatedAt: d.String("updated_at", maxSnapString)}
		if nl := d.Uvarint("links", 1<<20); nl > 0 {
			m.links = make([]string, 0, min(nl, 64))
			for range nl {
				m.links = append(m.links, d.String("link", maxSnapString))
			}
		}
		m.sig.size = d.Varint("size")
		m.sig.mtime = d.Varint("mtime")
		m.sig.ino = d.Uvarint("inode", math.MaxUint64)
		copy(m.hash[:], d.Fixed("hash", len(m.hash)))
		m.bodyOff = uint32(d.Uvarint("body offset", math.MaxUint32))
		m.readAt = d.Varint("read at")
		m.flags = readSnapshotFlags(d)
		if err := d.Err(); err != nil {
			return nil, snapshotErr(err)
		}
		pid, err := brain.ParseID(id)
		if err != nil || pid.Wing != wing || notes[id] != nil {
			return nil, fmt.Errorf("%w: bad note id %q", errSnapshot, id)
		}
		m.hall = pid.Hall
		notes[id] = m
	}
	return notes, nil
}

// readSnapshotFlags reads a note's injection findings (at most one per
// rule); nil for none.
func readSnapshotFlags(d *codec.Stream) []injection.Finding {
	n := d.Uvarint("flags", uint64(len(injection.Rules())))
	if n == 0 || d.Err() != nil {
		return nil
	}
	out := make([]injection.Finding, 0, n)
	for range n {
		f := injection.Finding{Rule: d.String("flag rule", maxSnapString), Why: d.String("flag why", maxSnapString)}
		f.At = int(d.Uvarint("flag offset", math.MaxInt32))
		out = append(out, f)
	}
	return out
}

// snapshotErr wraps a decoding error in errSnapshot; an error of the
// reader itself is returned as it is.
func snapshotErr(err error) error {
	if errors.Is(err, codec.ErrMalformed) || errors.Is(err, codec.ErrTooLong) {
		return fmt.Errorf("%w: %w", errSnapshot, err)
	}
	return err
}
