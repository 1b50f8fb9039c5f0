package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/store/toc"
)

// tocChanged is called after a change: it rewrites _index.md now
// (write-through) or wakes the background writer (write-behind).
func (s *Store) tocChanged() error {
	if s.tocDelay <= 0 {
		return s.syncTOC(false)
	}
	select {
	case s.tocKick <- struct{}{}:
	default: // a rewrite is already pending
	}
	return nil
}

// tocLoop is the write-behind writer of _index.md: a change starts a wait
// of IndexDelay, then one rewrite covers every change made meanwhile. So
// _index.md lags a change by at most IndexDelay (plus the rewrite), and is
// rewritten at most once per IndexDelay however fast notes are written.
func (s *Store) tocLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.tocKick:
		}
		t.Reset(s.tocDelay)
		select {
		case <-ctx.Done():
			return // Close writes what is pending
		case <-t.C:
		}
		if err := s.syncTOC(false); err != nil {
			s.log.Warn("store: rewriting _index.md failed; retrying after the next change", "err", err)
		}
	}
}

// syncTOC rewrites _index.md durably if the wing's (id, title) set changed
// since it was last written, or unconditionally when force is set (in which
// case an identical file is left alone). Concurrent writers coalesce: a
// writer whose change another writer's rewrite already covers returns at
// once.
func (s *Store) syncTOC(force bool) error {
	s.mu.RLock()
	want := s.tocGen
	s.mu.RUnlock()
	s.tocMu.Lock()
	defer s.tocMu.Unlock()
	if !force && s.tocDone >= want {
		return nil
	}
	s.mu.RLock()
	gen := s.tocGen
	content := toc.Render(s.wing, s.ids, func(id string) string { return s.notes[id].title })
	s.mu.RUnlock()
	rel := brain.IndexPath(s.wing)
	p, err := s.abs(rel)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if force {
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, content) {
			if fi, err := os.Lstat(p); err == nil {
				s.tocSig, s.tocDone = sigOf(fi), gen
				return nil
			}
		}
	}
	if err := atomicfile.WriteFile(p, content, filePerm); err != nil {
		return fmt.Errorf("store: write %s: %w", rel, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("store: stat %s: %w", rel, err)
	}
	s.tocSig, s.tocDone = sigOf(fi), gen
	return nil
}
