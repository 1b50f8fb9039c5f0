package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/store/diskfile"
)

// The inbox is searchable: notes waiting for a curator are found by a
// search whose scope includes them, marked unreviewed. They live in an
// index of their own, keyed by path (inbox/<wing>/<name>.md), so the
// wiki's statistics, and so every wiki-only ranking, are untouched; a
// search over the wiki and the inbox scores both with the same summed
// statistics. The index follows the directory: the store's own writes
// update it, and syncInbox, run by the watcher's inbox events, by every
// rescan and at Open, brings it in line with what is on disk (only files
// whose signature changed are read).

// inboxState is the wing's inbox as search sees it.
type inboxState struct {
	mu    sync.Mutex // one sync at a time; guards files
	files map[string]inboxFile
	ix    *index.Index
}

// inboxFile is what the inbox index holds of one file.
type inboxFile struct {
	sig     fileSig
	readAt  int64
	title   string
	hall    string
	hash    [sha256.Size]byte
	bodyOff uint32
	flags   []injection.Finding // the injection audit's, nil for none
}

// syncInbox brings the inbox index in line with the inbox directory.
func (s *Store) syncInbox(ctx context.Context) error {
	dir, err := s.dirOf(brain.WingDir(brain.TopInbox, s.wing))
	if err != nil {
		return fmt.Errorf("store: inbox: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store: inbox: %w", err)
	}
	in := &s.inbox
	in.mu.Lock()
	defer in.mu.Unlock()
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), brain.NoteExt)
		if !ok || strings.HasPrefix(name, ".") || !e.Type().IsRegular() || brain.ValidInboxName(name) != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		seen[name] = true
		s.syncInboxFile(filepath.Join(dir, e.Name()), name)
	}
	for name := range in.files {
		if !seen[name] {
			in.ix.Delete(brain.InboxPath(s.wing, name))
			delete(in.files, name)
			s.noteOutside(brain.InboxPath(s.wing, name))
		}
	}
	return nil
}

// syncInboxFile re-reads one inbox file unless the indexed version is the
// one on disk. Callers hold inbox.mu.
func (s *Store) syncInboxFile(abs, name string) {
	in := &s.inbox
	fi, err := os.Lstat(abs)
	if f, ok := in.files[name]; ok && err == nil && f.sig == sigOf(fi) && trusted(f.sig, f.readAt) {
		return
	}
	at := s.wallNow()
	raw, sig, err := readFileLimit(abs, s.maxNote)
	rel := brain.InboxPath(s.wing, name)
	if err != nil {
		in.ix.Delete(rel)
		delete(in.files, name)
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("store: inbox note not searchable", "path", rel, "err", err)
		}
		s.noteOutside(rel)
		return
	}
	f, ok := in.files[name]
	changed := !ok || f.hash != sha256.Sum256(raw)
	if changed {
		s.noteOutside(rel)
	}
	s.indexInboxNote(name, raw, sig, at.UnixNano())
	if changed {
		s.warnFlagged(rel, in.files[name].flags)
	}
}

// indexInboxNote indexes the bytes of inbox note name. Callers hold
// inbox.mu.
func (s *Store) indexInboxNote(name string, raw []byte, sig fileSig, readAt int64) {
	p := parseNote(raw, name)
	f := inboxFile{sig: sig, readAt: readAt, title: p.title, hall: fieldValue(p.fields, KeyHall), hash: sha256.Sum256(raw), flags: injection.Scan(raw)}
	if off := len(raw) - len(p.body); off >= 0 && off <= math.MaxUint32 {
		f.bodyOff = uint32(off)
	}
	s.inbox.files[name] = f
	s.inbox.ix.Put(index.Doc{ID: brain.InboxPath(s.wing, name), Title: p.title, Body: p.body})
}

// inboxWritten updates the inbox index after the store wrote (or removed,
// raw nil) inbox note name.
func (s *Store) inboxWritten(name string, raw []byte, abs string) {
	in := &s.inbox
	in.mu.Lock()
	defer in.mu.Unlock()
	if raw == nil {
		in.ix.Delete(brain.InboxPath(s.wing, name))
		delete(in.files, name)
		return
	}
	at := s.wallNow()
	fi, err := os.Lstat(abs)
	if err != nil {
		return // gone already: the next sync sees it
	}
	s.indexInboxNote(name, raw, sigOf(fi), at.UnixNano())
}

// renderInboxHit renders the hit of an inbox note from its current bytes,
// as renderHit does for a wiki note: the indexed version when the file is
// still the one read, else the file read whole (and the index repaired).
func (s *Store) renderInboxHit(ctx context.Context, h index.Hit, runes int) (search.Hit, bool) {
	top, _, err := brain.ValidPath(h.ID)
	name := strings.TrimSuffix(h.ID[strings.LastIndexByte(h.ID, '/')+1:], brain.NoteExt)
	if err != nil || top != brain.TopInbox {
		return search.Hit{}, false
	}
	abs, err := s.abs(h.ID)
	if err != nil {
		return search.Hit{}, false
	}
	f, fi, err := diskfile.Open(abs, s.maxNote)
	if err != nil {
		s.inboxWritten(name, nil, abs)
		return search.Hit{}, false
	}
	defer f.Close()
	hit := search.Hit{Wing: s.wing, Path: h.ID, Score: h.Score, Unreviewed: true}
	s.inbox.mu.Lock()
	m, ok := s.inbox.files[name]
	s.inbox.mu.Unlock()
	if ok && m.sig == sigOf(fi) && trusted(m.sig, m.readAt) {
		size := fi.Size() - int64(m.bodyOff)
		if snip, err := index.SnippetAt(io.NewSectionReader(f, int64(m.bodyOff), size), size, int64(h.Offset), runes); err == nil {
			hit.Title, hit.Hall, hit.ContentHash, hit.Snippet, hit.Flags = m.title, m.hall, hex.EncodeToString(m.hash[:]), snip, injection.Flags(m.flags)
			return hit, true
		}
	}
	raw, err := diskfile.ReadAll(f, fi.Size(), s.maxNote)
	if err != nil {
		return search.Hit{}, false
	}
	s.inbox.mu.Lock()
	s.indexInboxNote(name, raw, sigOf(fi), s.wallNow().UnixNano())
	s.inbox.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return search.Hit{}, false
	}
	p := parseNote(raw, name)
	sum := sha256.Sum256(raw)
	hit.Title, hit.Hall, hit.ContentHash, hit.Snippet = p.title, fieldValue(p.fields, KeyHall), hex.EncodeToString(sum[:]), index.Snippet(p.body, h.Terms, runes)
	hit.Flags = injection.Flags(injection.Scan(raw))
	return hit, true
}
