package history

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/brainstem/brainstem/brain"
)

// errClosed: the History was closed.
var errClosed = errors.New("history: closed")

// States of a pending change.
const (
	inFlight = iota
	landed
	abandoned
)

// Pending is a change recorded in the pending log whose files the caller
// is changing: it ends with Landed (the files hold the change, durably)
// or Abandon (they were not changed).
type Pending struct {
	h     *History
	seq   uint64
	rec   *record
	state int // guarded by h.q.mu
	// synced is closed once the record is durable (or its fsync failed,
	// syncErr).
	synced  chan struct{}
	syncErr error
}

// Seq is the change's sequence number in the wing's pending log (the
// Brainstem-Seq trailer of its commit).
func (p *Pending) Seq() uint64 { return p.seq }

// queue is the changes between Begin and their commit, by sequence number.
type queue struct {
	mu       sync.Mutex
	recs     map[uint64]*Pending // in flight, or landed or abandoned and not yet taken
	done     uint64              // every change up to done is committed or abandoned
	last     uint64              // the highest sequence number assigned
	lastLand uint64              // the highest sequence number that landed
	progress chan struct{}       // closed and replaced when done or err changes
	err      error               // the committer's last failure, nil after a success
	errGen   uint64              // counts failures
	wake     chan struct{}       // tells the committer there is work (buffered 1)
	rush     bool                // a caller waits: commit what is there now
	stuck    *Stuck              // the committer stopped for good
}

func newQueue(done uint64) *queue {
	return &queue{recs: map[uint64]*Pending{}, done: done, last: done, lastLand: done, progress: make(chan struct{}), wake: make(chan struct{}, 1)}
}

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// ready reports how many changes the committer could take now (landed or
// abandoned, in order from done+1), up to max, and whether a caller is
// waiting.
func (q *queue) ready(max int) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for s := q.done + 1; n < max; s++ {
		p := q.recs[s]
		if p == nil || p.state == inFlight {
			break
		}
		n++
	}
	return n, q.rush
}

// advanceLocked reports progress to the waiters.
func (q *queue) advanceLocked() {
	close(q.progress)
	q.progress = make(chan struct{})
}

// take returns the changes the committer may commit next, in order: the
// landed and abandoned ones from done+1 up to the first still in flight,
// at most max of them (abandoned ones do not count) and about maxBytes of
// content.
func (q *queue) take(max, maxBytes int) []*Pending {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rush = false
	var out []*Pending
	n, size := 0, 0
	for s := q.done + 1; n < max && size < maxBytes; s++ {
		p := q.recs[s]
		if p == nil || p.state == inFlight {
			break
		}
		out = append(out, p)
		if p.state == landed {
			n++
			for _, op := range p.rec.change.Ops {
				size += len(op.Content)
			}
		}
	}
	return out
}

// finish records that the changes taken are committed (or were skipped).
func (q *queue) finish(ps []*Pending) {
	if len(ps) == 0 {
		return
	}
	q.mu.Lock()
	for _, p := range ps {
		delete(q.recs, p.seq)
	}
	q.done = ps[len(ps)-1].seq
	q.err = nil
	q.advanceLocked()
	q.mu.Unlock()
}

func (q *queue) fail(err error) {
	q.mu.Lock()
	q.err = err
	q.errGen++
	q.advanceLocked()
	q.mu.Unlock()
}

// stop records that the committer stopped for good: waiters return.
func (q *queue) stop(st *Stuck) {
	q.mu.Lock()
	q.stuck = st
	q.advanceLocked()
	q.mu.Unlock()
}

// wait blocks until every change up to target is committed, the
// committer fails after the call began, or ctx ends.
func (q *queue) wait(ctx context.Context, target uint64) error {
	q.mu.Lock()
	if q.done < target {
		q.rush = true
		q.poke()
	}
	gen := q.errGen
	for q.done < target {
		if q.stuck != nil {
			q.mu.Unlock()
			return fmt.Errorf("history: the committer stopped: %s", q.stuck)
		}
		if q.errGen != gen {
			err := q.err
			q.mu.Unlock()
			return fmt.Errorf("history: the committer failed: %w", err)
		}
		ch := q.progress
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("history: waiting for the committer: %w", ctx.Err())
		case <-ch:
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
	return nil
}

// busyPaths returns the tracked paths of changes not yet committed.
func (q *queue) busyPaths() map[string]bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	busy := map[string]bool{}
	for _, p := range q.recs {
		if p.state == abandoned {
			continue
		}
		for _, op := range p.rec.change.Ops {
			busy[op.Path] = true
			if op.From != "" {
				busy[op.From] = true
			}
		}
	}
	return busy
}

// Begin records c in the pending log before the caller changes the files,
// and starts making the record durable: its fsync (shared by concurrent
// Begins) runs while the caller makes the files hold the change, durably,
// and Landed returns once both are. The caller calls Landed before it
// acknowledges the change, or Abandon if it did not change the files.
// Changes are committed in the order of their Begin, one commit each.
func (h *History) Begin(c Change) (*Pending, error) {
	if st := h.Stuck(); st != nil {
		return nil, brain.Errorf(brain.CodeUnavailable, "the wing refuses writes: its %s; reads go on", st)
	}
	if err := h.checkChange(&c); err != nil {
		return nil, err
	}
	r := &record{kind: kindChange, at: h.opt.Now(), change: c}
	l := h.plog
	l.mu.Lock()
	r.seq = l.next
	seg, off, err := l.appendLocked(r)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	l.next++
	p := &Pending{h: h, seq: r.seq, rec: r, synced: make(chan struct{})}
	h.q.mu.Lock()
	h.q.recs[p.seq] = p
	h.q.last = p.seq
	h.q.mu.Unlock()
	l.mu.Unlock()
	go func() {
		if err := seg.SyncTo(off); err != nil {
			p.syncErr = fmt.Errorf("history: fsync the pending log: %w", err)
		}
		close(p.synced)
	}()
	return p, nil
}

// Landed queues the change for its commit: the files hold it durably. It
// returns once the change's record is durable too, so that the caller
// acknowledges a change only when a crash can no longer lose its author.
// It appends a marker to the pending log without waiting for that to be
// durable (recovery settles a lost marker from the files).
func (p *Pending) Landed() {
	<-p.synced
	if p.syncErr != nil {
		p.h.log.Error("history: a change's record may not be durable; after a crash now its files would be recorded as an outside edit", "seq", p.seq, "err", p.syncErr)
	}
	p.end(landed, kindLanded)
}

// Abandon drops the change: the files were not changed.
func (p *Pending) Abandon() { p.end(abandoned, kindAbandon) }

func (p *Pending) end(state int, kind byte) {
	q := p.h.q
	q.mu.Lock()
	if p.state != inFlight {
		q.mu.Unlock()
		return
	}
	p.state = state
	if state == landed {
		q.lastLand = max(q.lastLand, p.seq)
	}
	q.mu.Unlock()
	p.h.plog.appendMarker(kind, p.seq)
	q.poke()
}

// checkChange validates a change before it is recorded, and fills its
// defaults. These are the caller's mistakes, reported as internal errors.
func (h *History) checkChange(c *Change) error {
	if len(c.Ops) == 0 {
		return errors.New("history: a change without operations")
	}
	if len(c.Ops) > maxOps {
		return fmt.Errorf("history: a change of %d operations, over the limit of %d", len(c.Ops), maxOps)
	}
	if c.Author = oneLine(c.Author); c.Author == "" || strings.ContainsAny(c.Author, "<>") {
		return fmt.Errorf("history: a change needs its author's email, got %q", c.Author)
	}
	if c.Action = oneLine(c.Action); c.Action == "" {
		return errors.New("history: a change needs an action")
	}
	for _, f := range []string{c.Author, c.Action, c.Tool, c.Key} {
		if len(f) > maxFieldBytes {
			return fmt.Errorf("history: a change's author, action, tool or key is over %d bytes", maxFieldBytes)
		}
	}
	if len(c.Subject) > maxTextBytes || len(c.Reason) > maxTextBytes {
		return fmt.Errorf("history: a change's subject or reason is over %d bytes", maxTextBytes)
	}
	seen := map[string]bool{}
	for i := range c.Ops {
		if err := h.checkOp(&c.Ops[i], seen); err != nil {
			return err
		}
	}
	c.Subject = cmp.Or(oneLine(c.Subject), c.Action+" "+c.Ops[0].Path)
	return nil
}

func (h *History) checkOp(op *Op, seen map[string]bool) error {
	for _, p := range []string{op.Path, op.From} {
		if p == "" && p == op.From {
			continue
		}
		if len(p) > maxPathBytes || !h.opt.Tracked(p) {
			return fmt.Errorf("history: %q is not a tracked path of wing %s", p, h.opt.Wing)
		}
		if seen[p] {
			return fmt.Errorf("history: %s appears twice in one change", p)
		}
		seen[p] = true
	}
	switch {
	case op.Remove && (op.Content != nil || op.From != ""):
		return fmt.Errorf("history: the removal of %s carries content or a source", op.Path)
	case !op.Remove && op.Content == nil:
		op.Content = []byte{}
	case len(op.Content) > maxContentBytes:
		return fmt.Errorf("history: %s is %d bytes, over the %d-byte limit of history", op.Path, len(op.Content), maxContentBytes)
	}
	return nil
}

func sumOf(b []byte) [32]byte { return sha256.Sum256(b) }
