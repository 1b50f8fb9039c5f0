package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
)

// Rescan compares every note file with the version the store indexed (size,
// mtime, inode) and re-reads the ones that changed (and those whose mtime
// was too recent to trust when they were read), indexes new ones and
// forgets deleted ones, then rewrites _index.md if its content changed or
// the file itself was edited or removed. The background rescanner calls it
// every RescanInterval; tests call it to make a pass deterministic.
func (s *Store) Rescan(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	files, err := s.scanFiles()
	if err != nil {
		return err
	}
	var changed []brain.ID
	key := make([]byte, 0, 256)
	matched := 0
	s.mu.RLock()
	for _, f := range files {
		key = append(append(append(append(append(key[:0], f.id.Wing...), '/'), f.id.Hall...), '/'), f.id.Slug...)
		m := s.notes[string(key)] // no allocation for the lookup
		if m != nil {
			matched++
		}
		if m == nil || m.sig != f.sig || !trusted(m.sig, m.readAt) {
			changed = append(changed, f.id)
		}
	}
	if matched != len(s.notes) {
		// Some indexed notes were not seen: find the deleted ones.
		seen := make(map[string]bool, len(files))
		for _, f := range files {
			seen[f.id.String()] = true
		}
		for k := range s.notes {
			if !seen[k] {
				if id, err := brain.ParseID(k); err == nil {
					changed = append(changed, id)
				}
			}
		}
	}
	s.mu.RUnlock()
	for i, id := range changed {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("store: rescan: %w", err)
			}
		}
		s.refresh(id)
	}
	if len(changed) > 0 {
		s.log.Debug("store: rescan applied changes made outside the store", "notes", len(changed))
	}
	if err := s.syncInbox(ctx); err != nil {
		return err
	}
	return s.syncTOC(s.tocTouched())
}

// refresh re-reads note id from disk under its lock and brings the memory
// state and the index in line with it (or forgets it if it is gone or
// unreadable). A file whose bytes are those already indexed only has its
// read time renewed.
func (s *Store) refresh(id brain.ID) {
	defer s.locks.Lock("w:" + id.String())()
	abs, err := s.abs(id.Path())
	if err != nil {
		s.log.Warn("store: forgetting note", "path", id.Path(), "err", err)
		s.forget(id)
		return
	}
	at := s.wallNow()
	raw, sig, err := readFileLimit(abs, s.maxNote)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.skips.clearRead(id.Path())
		} else {
			s.skipRead(id, err)
		}
		if s.metaOf(id.String()) != nil {
			s.noteOutside(id.Path())
		}
		s.forget(id)
		return
	}
	s.skips.clearRead(id.Path())
	key := id.String()
	if m := s.metaOf(key); m != nil && m.sig == sig && m.hash == sha256.Sum256(raw) {
		s.retrust(key, m, at.UnixNano())
		return
	}
	s.noteOutside(id.Path())
	n := s.prepare(id, raw)
	s.warnFlagged(id.Path(), n.flags)
	s.applyPrepared(id, n, sig, at.UnixNano(), false)
}

// warnFlagged logs a note that changed on disk behind the store's back (a
// pull from the remote, an editor) and that the injection audit flags:
// reads of it carry the flags from now on.
func (s *Store) warnFlagged(rel string, flags []injection.Finding) {
	if len(flags) > 0 {
		s.log.Warn("store: a note changed on disk is flagged by the injection audit; reads show its flags, hooks leave it out",
			"path", rel, "flags", injection.Names(flags), "why", flags[0].Why)
	}
}

// tocTouched reports whether _index.md was changed or removed by someone
// else since the store last wrote it.
func (s *Store) tocTouched() bool {
	p, err := s.abs(brain.IndexPath(s.wing))
	if err != nil {
		return true
	}
	fi, err := os.Lstat(p)
	s.tocMu.Lock()
	defer s.tocMu.Unlock()
	return err != nil || sigOf(fi) != s.tocSig
}

// rescanLoop runs Rescan every interval until ctx is cancelled. A pass over
// a large wing costs one lstat per note, so the loop throttles itself: the
// wait before the next pass is at least maxRescanDuty times the last pass's
// duration, which bounds the rescanner to about 1/maxRescanDuty of a core.
// afterPass, if set, is called after each pass (a test hook).
func (s *Store) rescanLoop(ctx context.Context, interval time.Duration, afterPass func()) {
	defer s.wg.Done()
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			if err := s.Rescan(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				s.log.Warn("store: rescan failed", "err", err)
			}
			s.maybeSaveSnapshot()
			t.Reset(max(interval, maxRescanDuty*time.Since(start)))
			if afterPass != nil {
				afterPass()
			}
		}
	}
}

// maxRescanDuty is the minimum ratio of idle time to rescanning time.
const maxRescanDuty = 10
