package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/layout"
)

// dirWatcher reports changes to the entries of watched directories.
type dirWatcher interface {
	// add watches dir; its events carry tag.
	add(dir, tag string) error
	// next blocks until events arrive; it fails once closed.
	next() ([]watchEvent, error)
	close() error
}

// watchEvent is one change: entry name of the directory tagged tag (the
// hall, or "" for the wing's wiki directory), or the directory itself gone,
// or events lost.
type watchEvent struct {
	tag, name string
	isDir     bool // the entry is a directory
	dirGone   bool // the watched directory was removed or moved
	overflow  bool // events were lost: rescan everything
}

// watchState is the store's directory watcher, when one runs.
type watchState struct {
	w dirWatcher
}

func (ws *watchState) active() bool { return ws.w != nil }

// watchDebounce lets a burst of events (an editor's save, a git checkout)
// finish before the batch is applied.
const watchDebounce = 20 * time.Millisecond

// startWatch watches the wing's wiki directory and its halls, so that an
// outside change reaches the index within milliseconds instead of at the
// next rescan.
func (s *Store) startWatch(ctx context.Context, after func()) error {
	w, err := newDirWatcher()
	if err != nil {
		return err
	}
	if err := s.addWatches(w); err != nil {
		w.close()
		return err
	}
	s.watch.w = w
	batches := make(chan []watchEvent, 64)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer close(batches)
		for {
			evs, err := w.next()
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("store: watching the wing's directories failed; the rescanner still runs", "err", err)
				}
				return
			}
			select {
			case batches <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		s.watchLoop(ctx, batches, after)
	}()
	go func() { // unblock the reader when the store closes
		<-ctx.Done()
		w.close()
	}()
	return nil
}

// addWatches (re)watches the wing's wiki directory and every hall that
// exists (adding a watch twice is harmless).
func (s *Store) addWatches(w dirWatcher) error {
	wingDir, err := s.dirOf(brain.WingDir(brain.TopWiki, s.wing))
	if err != nil {
		return err
	}
	if err := w.add(wingDir, ""); err != nil {
		return err
	}
	for _, h := range brain.Halls() {
		dir, err := s.hallDir(h)
		if err != nil {
			continue // missing or replaced: the rescanner reports it
		}
		if err := w.add(dir, h); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if dir, err := s.dirOf(brain.WingDir(brain.TopInbox, s.wing)); err == nil {
		if err := w.add(dir, inboxTag); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// inboxTag tags the events of the inbox directory (no hall has the name).
const inboxTag = "inbox"

// watchLoop applies batches of events until ctx ends or the reader stops.
func (s *Store) watchLoop(ctx context.Context, batches <-chan []watchEvent, after func()) {
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	for {
		var evs []watchEvent
		select {
		case <-ctx.Done():
			return
		case b, ok := <-batches:
			if !ok {
				return
			}
			evs = b
		}
		debounce.Reset(watchDebounce)
	gather:
		for {
			select {
			case <-ctx.Done():
				return
			case b, ok := <-batches:
				if !ok {
					break gather
				}
				evs = append(evs, b...)
			case <-debounce.C:
				break gather
			}
		}
		s.applyEvents(ctx, evs)
		if after != nil {
			after()
		}
	}
}

// applyEvents refreshes the notes named by evs, or rescans the whole wing
// when the events say its structure changed or some were lost.
func (s *Store) applyEvents(ctx context.Context, evs []watchEvent) {
	if s.closed.Load() {
		return
	}
	rescan, toc, inbox := false, false, false
	notes := map[brain.ID]bool{}
	for _, ev := range evs {
		switch {
		case ev.overflow || ev.dirGone:
			rescan = true
		case layout.Hidden(ev.name):
		case ev.tag == inboxTag:
			inbox = true
		case ev.tag == "":
			if ev.name == brain.IndexSlug+brain.NoteExt {
				toc = true
			} else {
				rescan = true // a hall (or a stray entry) appeared or went
			}
		case ev.isDir:
			rescan = true
		default:
			slug, err := layout.NoteFile(ev.name)
			if err != nil {
				rescan = true // reported as skipped by the scan
				continue
			}
			notes[brain.ID{Wing: s.wing, Hall: ev.tag, Slug: slug}] = true
		}
	}
	if rescan {
		if s.watch.w != nil {
			if err := s.addWatches(s.watch.w); err != nil {
				s.log.Warn("store: re-watching the wing's directories failed", "err", err)
			}
		}
		if err := s.Rescan(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("store: rescan after a change failed", "err", err)
		}
		return
	}
	if inbox {
		if err := s.syncInbox(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("store: following the inbox failed", "err", err)
		}
	}
	changed := false
	for id := range notes {
		if ctx.Err() != nil {
			return
		}
		if s.refreshIfChanged(id) {
			changed = true
		}
	}
	if changed || toc {
		if err := s.syncTOCAfterChange(toc); err != nil {
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
