package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/store/watch"
)

// startWatch watches the wing's wiki directory, its halls and its inbox,
// so that an outside change reaches the index within milliseconds instead
// of at the next rescan.
func (s *Store) startWatch(ctx context.Context, after func()) error {
	w, err := watch.New()
	if err != nil {
		return err
	}
	if err := s.addWatches(w); err != nil {
		w.Close()
		return err
	}
	s.watcher = w
	failed := func(err error) {
		s.log.Warn("store: watching the wing's directories failed; the rescanner still runs", "err", err)
	}
	watch.Follow(ctx, w, s.wing, &s.wg, failed, func(c watch.Changes) {
		s.applyChanges(ctx, c)
		if after != nil {
			after()
		}
	})
	return nil
}

// addWatches (re)watches the wing's wiki directory, every hall that
// exists and the inbox (adding a watch twice is harmless).
func (s *Store) addWatches(w watch.Watcher) error {
	wingDir, err := s.dirOf(brain.WingDir(brain.TopWiki, s.wing))
	if err != nil {
		return err
	}
	if err := w.Add(wingDir, ""); err != nil {
		return err
	}
	for _, h := range brain.Halls() {
		dir, err := s.hallDir(h)
		if err != nil {
			continue // missing or replaced: the rescanner reports it
		}
		if err := w.Add(dir, h); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if dir, err := s.dirOf(brain.WingDir(brain.TopInbox, s.wing)); err == nil {
		if err := w.Add(dir, watch.InboxTag); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// applyChanges refreshes the notes a batch of events named, or rescans
// the whole wing when they say its structure changed or some were lost.
func (s *Store) applyChanges(ctx context.Context, c watch.Changes) {
	if s.closed.Load() {
		return
	}
	if c.Rescan {
		if s.watcher != nil {
			if err := s.addWatches(s.watcher); err != nil {
				s.log.Warn("store: re-watching the wing's directories failed", "err", err)
			}
		}
		if err := s.Rescan(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("store: rescan after a change failed", "err", err)
		}
		return
	}
	if c.Inbox {
		if err := s.syncInbox(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("store: following the inbox failed", "err", err)
		}
	}
	changed := false
	for id := range c.Notes {
		if ctx.Err() != nil {
			return
		}
		if s.refreshIfChanged(id) {
			changed = true
		}
	}
	if changed || c.TOC {
		if err := s.syncTOCAfterChange(c.TOC); err != nil {
			s.log.Warn("store: rewriting _index.md failed", "err", err)
		}
	}
}

// syncTOCAfterChange brings _index.md up to date after outside changes:
// at once when someone else edited it, else as the write mode says.
func (s *Store) syncTOCAfterChange(edited bool) error {
	if edited {
		return s.syncTOC(s.tocTouched())
	}
	return s.tocChanged()
}

// refreshIfChanged refreshes note id unless its file is the version
// indexed; it reports whether it looked at the file's bytes.
func (s *Store) refreshIfChanged(id brain.ID) bool {
	p := filepath.Join(s.root, filepath.FromSlash(id.Path()))
	fi, err := os.Lstat(p)
	m := s.metaOf(id.String())
	switch {
	case err != nil && m == nil:
		return false // a file that came and went
	case err == nil && m != nil && m.sig == sigOf(fi) && trusted(m.sig, m.readAt):
		return false
	case err == nil && !fi.Mode().IsRegular():
		// Not a note file: the scan reports it.
		if rerr := s.Rescan(context.Background()); rerr != nil && !errors.Is(rerr, ErrClosed) {
			s.log.Warn("store: rescan failed", "err", rerr)
		}
		return false
	}
	s.refresh(id)
	return true
}
