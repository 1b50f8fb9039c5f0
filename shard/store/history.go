package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/layout"
)

// History. Every change the store makes to the wing's notes and inbox
// notes is recorded in the wing's history (shard/history) as one commit,
// with its author and Provenance: the store begins the record once every
// check has passed and right before the change touches the disk, marks it
// landed once the change is durable, and abandons it when the change did
// not happen. Files changed behind the store's back (the watcher, the
// rescanner, Open) are recorded as outside edits. Session logs and
// _index.md are not history (docs/history.md).

// Provenance is what history records of a change besides its files and
// author: the tool that made it, why, and under which idempotency key.
type Provenance struct {
	Tool, Reason, Key string
}

// The actions the store records; history adds initial, outside and purge.
const (
	ActionCreate  = "create"
	ActionUpdate  = "update"
	ActionPromote = "promote"
	ActionRestore = "restore"
	ActionArchive = "archive"
	ActionMove    = "move"
)

// HistoryOptions configure the wing's history (Options.History).
type HistoryOptions struct {
	// Off keeps no history: the store writes its files only. Tests of
	// the store itself, benchmarks' baselines and a second reader of a
	// brain that a shard already serves use it.
	Off bool
	// AllowPurge enables Purge (an operator's choice; off by default).
	AllowPurge bool
	// Service is the author of the initial commit and of outside edits
	// (zero: history's default).
	Service history.Identity
	// Now is the clock of commit times (nil: the wall clock). Commits
	// carry the time they are made, not the store's Options.Now; tests
	// and the generated docs, whose version ids must not change from run
	// to run, set it.
	Now func() time.Time
	// Remote is the wing's git remote as a purge meets it (nil: none):
	// the shard wires it when the wing has a remote.
	Remote RemotePurge
}

// RemotePurge is the wing's git remote as a purge meets it.
type RemotePurge interface {
	// HoldForPurge stops the remote's syncing and brings the remote and
	// the wing in sync; an error refuses the purge, nothing changed. A
	// nil hold (and error) means there is no remote.
	HoldForPurge(ctx context.Context) (PurgeHold, error)
}

// PurgeHold is a remote held for a purge.
type PurgeHold interface {
	// DropRefs are the ref prefixes the purge drops with its rewrite
	// (history.PurgeRequest.DropRefs).
	DropRefs() []string
	// Finish is called once, with the purged blob ids (nil when the purge
	// did not happen): it force pushes the rewritten history, or leaves
	// that push pending, and resumes syncing.
	Finish(ctx context.Context, purged []string) error
}

// openHistory opens the wing's history once the notes are loaded.
func (s *Store) openHistory(ctx context.Context, opt Options) error {
	if opt.History.Off {
		return nil
	}
	stateDir := cmp.Or(opt.StateDir, filepath.Join(s.root, ".brainstem"))
	h, err := history.Open(ctx, history.Options{
		Root: s.root, Wing: s.wing, StateDir: filepath.Join(stateDir, "history"),
		Tracked: s.tracked, Files: s.trackedFiles, Dirs: []string{brain.WingDir(brain.TopWiki, s.wing), brain.WingDir(brain.TopInbox, s.wing)},
		Logger: s.log, Service: opt.History.Service, AllowPurge: opt.History.AllowPurge, Now: opt.History.Now,
	})
	if err != nil {
		return fmt.Errorf("store: history of wing %q: %w", s.wing, err)
	}
	s.hist, s.purgeOK, s.remote = h, opt.History.AllowPurge, opt.History.Remote
	return nil
}

// History returns the wing's history, nil when it keeps none.
func (s *Store) History() *history.History { return s.hist }

// tracked reports which brain-relative paths are history (layout.Tracked).
func (s *Store) tracked(rel string) bool { return layout.Tracked(rel, s.wing) }

// trackedFiles lists the wing's notes and inbox notes on disk now.
func (s *Store) trackedFiles() ([]string, error) {
	s.mu.RLock()
	out := make([]string, 0, len(s.ids)+len(s.inbox.files))
	for _, id := range s.ids {
		if pid, err := brain.ParseID(id); err == nil {
			out = append(out, pid.Path())
		}
	}
	s.mu.RUnlock()
	s.inbox.mu.Lock()
	for name := range s.inbox.files {
		out = append(out, brain.InboxPath(s.wing, name))
	}
	s.inbox.mu.Unlock()
	return out, nil
}

// record is the history record of one change in flight; a nil record
// (no history) does nothing.
type record struct{ p *history.Pending }

// begin records a change the store is about to make: ops of its files,
// by the author, as action, with its provenance.
func (s *Store) begin(action, by string, prov Provenance, subject string, ops ...history.Op) (record, error) {
	if s.hist == nil {
		return record{}, nil
	}
	p, err := s.hist.Begin(history.Change{Ops: ops, Author: by, Action: action, Tool: prov.Tool, Subject: subject, Reason: prov.Reason, Key: prov.Key})
	if err != nil {
		return record{}, fmt.Errorf("store: record the change in history: %w", err)
	}
	return record{p}, nil
}

// done ends the record: landed when err is nil, else abandoned.
func (r record) done(err error) {
	switch {
	case r.p == nil:
	case err == nil:
		r.p.Landed()
	default:
		r.p.Abandon()
	}
}

// put is the op writing raw at rel over the bytes old (nil: a new file).
func put(rel string, raw, old []byte) history.Op {
	op := history.Op{Path: rel, Content: raw}
	if old != nil {
		op.Base, op.HadBase = sha256.Sum256(old), true
	}
	return op
}

func removeOp(rel string, old []byte) history.Op {
	return history.Op{Path: rel, Remove: true, Base: sha256.Sum256(old), HadBase: true}
}

// subject is the commit subject of a change: what it did, to which note.
func subject(prov Provenance, action, what string) string {
	return cmp.Or(prov.Tool, action) + " " + what
}

// noteOutside queues a path the store saw changed behind its back (a
// refresh read other bytes than it indexed, or the file went) for the
// history to record as an outside edit. The history compares the disk
// with its head, so a path queued for nothing records nothing.
func (s *Store) noteOutside(rel string) {
	if s.hist == nil || s.outKick == nil {
		return
	}
	s.outMu.Lock()
	if s.outPend == nil {
		s.outPend = map[string]bool{}
	}
	s.outPend[rel] = true
	s.outMu.Unlock()
	select {
	case s.outKick <- struct{}{}:
	default:
	}
}

// outsideLoop records the queued outside edits, a batch at a time, until
// ctx ends; Close records what is left.
func (s *Store) outsideLoop(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case <-ctx.Done():
			s.recordOutside(context.Background())
			return
		case <-s.outKick:
			s.recordOutside(ctx)
		}
	}
}

func (s *Store) recordOutside(ctx context.Context) {
	s.outMu.Lock()
	pend := s.outPend
	s.outPend = nil
	s.outMu.Unlock()
	if len(pend) == 0 {
		return
	}
	paths := slices.Collect(maps.Keys(pend))
	if err := s.hist.Outside(ctx, paths); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("store: recording outside edits in history failed; they are recorded at the next start", "paths", len(paths), "err", err)
	}
}

func (s *Store) closeHistory() error {
	if s.hist == nil {
		return nil
	}
	return s.hist.Close()
}
