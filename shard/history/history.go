package history

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/durable"
	"github.com/brainstem/brainstem/shard/gitstore"
)

// Committer bounds: one batch commits at most maxBatch changes and about
// maxBatchBytes of content, in one ref update.
const (
	maxBatch      = 64
	maxBatchBytes = 32 << 20
	// indexEvery is how often .git/index is rewritten at most while
	// changes keep coming (or five times as long as the last rewrite
	// took: 10 MB at 100,000 notes); it is rewritten at once when the
	// committer is idle.
	indexEvery = time.Second
	// snapshotEvery is how often the version-index snapshot is saved at
	// most while running (always at Close).
	snapshotEvery = time.Minute
	// retryMax bounds the wait between two attempts of a failed batch.
	retryMax = 5 * time.Second
	// While changes keep coming (the last batch was less than
	// gatherAfter ago), the committer waits up to gatherWait for more
	// before committing, unless a batch is full or a caller waits (a
	// read, Flush, Outside): at 100,000 notes one commit writes a 2 MB
	// hall tree, a batch writes it once and deltas after.
	gatherAfter = 200 * time.Millisecond
	gatherWait  = 25 * time.Millisecond
)

// History is one wing's history in the brain's git repository. It is safe
// for concurrent use.
type History struct {
	opt   Options
	log   *slog.Logger
	repo  *repo
	objs  *gitstore.Store
	trees treeCache
	state *os.File // flock of StateDir

	// writeMu is held by whatever writes commits (the committer, Outside,
	// Purge, Open); it guards the fields below.
	writeMu   sync.Mutex
	tree      *gitstore.Tree
	idxDirty  map[string]bool // brain paths whose .git/index entry is behind
	idxAll    bool            // every wing entry of .git/index must be rewritten
	idxLast   time.Time
	idxTook   time.Duration       // how long the last .git/index rewrite took
	lastBatch time.Time           // when the committer last committed (its goroutine only)
	idxWarn   bool                // the skipped index was logged once
	seen      map[string]seenFile // files read since the last index update
	snapLast  time.Time

	// idxMu guards the .git/index entries that commits by others changed
	// (read by catch-ups, which hold mu but not writeMu): the committer
	// rewrites them when idle, so that a pull never leaves the index
	// behind (a person's `git commit -a` would revert it).
	idxMu        sync.Mutex
	idxOthers    map[string]bool
	idxOthersAll bool

	mu        sync.RWMutex // guards ix and snapDirty
	ix        *versionIndex
	snapDirty int

	plog       *pendingLog
	q          *queue
	loose      atomic.Int64 // loose objects written since the last pack
	looseBytes atomic.Int64 // and their uncompressed bytes
	newPacks   atomic.Int64 // packs of commit batches since the last merge

	stuck atomic.Pointer[Stuck] // the committer's permanent failure

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open opens the wing's history: it finds (or creates) the repository,
// restores the version index (from its snapshot, or from git), reads the
// commits made since, recovers the changes a crash left in the pending
// log, and records what changed on disk behind the shard's back (or, for
// a brain without history, makes the initial commit). Then the committer
// runs until Close.
func Open(ctx context.Context, opt Options) (*History, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &History{opt: opt, log: opt.Logger, idxDirty: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := h.lockState(); err != nil {
		return nil, err
	}
	if err := h.open(ctx); err != nil {
		h.state.Close()
		if h.plog != nil {
			h.plog.close(0)
		}
		return nil, err
	}
	go h.run()
	return h, nil
}

// lockState takes the lock of the state directory: one History per wing.
func (h *History) lockState() error {
	if err := os.MkdirAll(h.opt.StateDir, 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(h.opt.StateDir, "history.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := durable.TryFlock(f); err != nil {
		f.Close()
		return fmt.Errorf("history: the state directory %s is in use by another process (one shard per wing): %w", h.opt.StateDir, err)
	}
	h.state = f
	return nil
}

func (h *History) open(ctx context.Context) error {
	start := time.Now()
	var err error
	if h.repo, err = openRepo(h.opt); err != nil {
		return err
	}
	h.objs = gitstore.Open(h.repo.gitDir, h.repo.common)
	h.tree = gitstore.NewTree(h.objs)
	if err := h.repo.ensureExclude(); err != nil {
		return err
	}
	h.ix = h.loadSnapshot()
	restored := !h.ix.head.IsZero()
	h.log.Debug("history: snapshot", "restored", restored, "took_seconds", time.Since(start).Seconds())
	head, err := h.repo.refs.Read(h.repo.currentBranch())
	if err != nil {
		return err
	}
	h.mu.Lock()
	err = h.catchUpLocked(head)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	rec, err := readPendingLog(h.pendingDir(), h.log)
	if err != nil {
		return err
	}
	next := max(h.ix.lastSeq, rec.maxSeq) + 1
	h.q = newQueue(next - 1)
	if h.plog, err = openPendingLog(h.pendingDir(), next, h.log); err != nil {
		return err
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	if err := h.settle(ctx, rec); err != nil {
		return err
	}
	h.log.Debug("history: settled", "took_seconds", time.Since(start).Seconds())
	if err := h.writeIndex(ctx); err != nil {
		h.log.Warn("history: could not update .git/index; git status may show the wing's files as changed until the next commit", "err", err)
	}
	if !restored || h.snapDirty > 0 {
		if err := h.saveSnapshot(); err != nil {
			h.log.Warn("history: could not save the version-index snapshot", "err", err)
		}
	}
	h.log.Info("history: open", "head", h.ix.head, "versions_restored", restored, "took_seconds", time.Since(start).Seconds())
	return nil
}

// settle brings the history in step with the disk at Open: the initial
// commit of a wing without history, the changes a crash left in the
// pending log, then the files changed behind the shard's back (which the
// initial commit has just read).
func (h *History) settle(ctx context.Context, rec *recovered) error {
	h.mu.RLock()
	initial := len(h.ix.byPath) == 0
	h.mu.RUnlock()
	if initial {
		made, err := h.initialCommit(ctx)
		if err != nil {
			return h.startStuck(err)
		}
		initial = made
	}
	if err := h.recover(ctx, rec); err != nil {
		return h.startStuck(err) // the segments stay for the next start
	}
	if err := dropSegments(rec.segments); err != nil {
		return err
	}
	if initial {
		return nil
	}
	return h.startStuck(h.reconcile(ctx))
}

// startStuck lets Open go on after a permanent error (the shard starts,
// serves reads and says why: Stuck); any other error fails Open.
func (h *History) startStuck(err error) error {
	if err == nil || !h.stopIfPermanent(err) {
		return err
	}
	return nil
}

func (h *History) pendingDir() string { return filepath.Join(h.opt.StateDir, "pending") }

// run is the committer: it commits landed changes in sequence order, in
// batches, and, when idle, rewrites .git/index, packs loose objects and
// saves the snapshot.
func (h *History) run() {
	defer close(h.done)
	backoff := time.Duration(0)
	for {
		worked, err := h.commitPending()
		if err != nil && h.stopIfPermanent(err) {
			h.q.fail(err)
			<-h.stop
			return
		}
		if err != nil {
			h.q.fail(err)
			backoff = min(max(2*backoff, 50*time.Millisecond), retryMax)
			h.log.Error("history: could not commit; retrying", "err", err, "retry_in_seconds", backoff.Seconds())
			if !h.pause(backoff) {
				h.drain()
				return
			}
			continue
		}
		backoff = 0
		if worked {
			continue
		}
		h.idle()
		select {
		case <-h.q.wake:
		case <-h.stop:
			h.drain()
			return
		}
	}
}

// stopIfPermanent reports whether err is permanent; if so the committer stops
// there (Stuck), and says so once.
func (h *History) stopIfPermanent(err error) bool {
	st := stuckOf(err, h.repo.currentBranch().Short(), h.opt.Now())
	if st == nil {
		return false
	}
	h.stuck.Store(st)
	h.q.stop(st)
	h.log.Error("history: the committer stopped: a change can never be committed; the wing serves reads and refuses writes", "path", st.Path, "err", err, "fix", st.Fix)
	return true
}

// pause waits d, or until Close; it reports false on Close.
func (h *History) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.stop:
		return false
	}
}

// gather waits, while changes keep coming, for a fuller batch.
func (h *History) gather() {
	if time.Since(h.lastBatch) > gatherAfter {
		return
	}
	t := time.NewTimer(gatherWait)
	defer t.Stop()
	for {
		if n, rush := h.q.ready(maxBatch); n == 0 || n >= maxBatch || rush {
			return
		}
		select {
		case <-h.q.wake:
		case <-t.C:
			return
		case <-h.stop:
			return
		}
	}
}

// commitPending commits the next batch of landed changes.
func (h *History) commitPending() (bool, error) {
	h.gather()
	ps := h.q.take(maxBatch, maxBatchBytes)
	if len(ps) == 0 {
		return false, nil
	}
	var plans []plan
	for _, p := range ps {
		if p.state == landed {
			plans = append(plans, h.planOf(p))
		}
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	if len(plans) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*h.opt.LockTimeout)
		_, _, err := h.commitPlans(ctx, plans)
		cancel()
		if err != nil {
			return false, err
		}
	}
	h.q.finish(ps)
	h.lastBatch = time.Now()
	h.plog.dropThrough(h.q.doneSeq())
	if time.Since(h.idxLast) >= max(indexEvery, 5*h.idxTook) {
		h.indexNow()
	}
	return true, nil
}

// idle does the committer's background work.
func (h *History) idle() {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.indexNow()
	if h.loose.Load() >= int64(h.opt.packEvery) || h.looseBytes.Load() >= packBytes {
		if err := h.packLoose(); err != nil {
			h.log.Warn("history: could not pack loose objects; retrying later", "err", err)
		}
	} else if h.newPacks.Load() >= mergeEvery {
		if err := h.mergePacks(); err != nil {
			h.log.Warn("history: could not merge packs; retrying later", "err", err)
		}
	}
	h.snapshotDirty(snapshotEvery)
}

// snapshotDirty saves the version-index snapshot when commits were read
// since the last save, at least age ago; a failure is logged (the next
// save retries).
func (h *History) snapshotDirty(age time.Duration) {
	h.mu.RLock()
	dirty := h.snapDirty
	h.mu.RUnlock()
	if dirty > 0 && time.Since(h.snapLast) >= age {
		if err := h.saveSnapshot(); err != nil {
			h.log.Warn("history: could not save the version-index snapshot", "err", err)
		}
	}
}

// indexNow rewrites .git/index if it is behind. writeMu is held.
func (h *History) indexNow() {
	if err := h.takeOthers(); err != nil {
		h.log.Warn("history: could not read the branch head for .git/index; retrying after the next commit", "err", err)
	}
	if len(h.idxDirty) == 0 && !h.idxAll {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opt.LockTimeout)
	defer cancel()
	if err := h.writeIndex(ctx); err != nil {
		h.log.Warn("history: could not update .git/index; retrying after the next commit", "err", err)
	}
}

// drain commits what landed before Close, then writes what is behind.
func (h *History) drain() {
	for {
		worked, err := h.commitPending()
		if err != nil {
			h.log.Error("history: could not commit at close; the pending log keeps the changes for the next start", "err", err)
			break
		}
		if !worked {
			break
		}
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.indexNow()
	h.snapshotDirty(0)
}

// Close commits what landed, rewrites .git/index, saves the snapshot and
// stops the committer. Changes still in flight stay in the pending log
// for the next Open, which settles them from the files.
func (h *History) Close() error {
	h.closeOnce.Do(func() {
		close(h.stop)
		<-h.done
		h.closeErr = h.plog.close(h.q.doneSeq())
		h.objs.Close()
		if err := h.state.Close(); h.closeErr == nil {
			h.closeErr = err
		}
	})
	return h.closeErr
}

func (q *queue) doneSeq() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done
}

// Flush waits until every change that landed before the call is
// committed (or ctx ends, or the committer fails).
func (h *History) Flush(ctx context.Context) error {
	h.q.mu.Lock()
	target := h.q.lastLand
	h.q.mu.Unlock()
	return h.q.wait(ctx, target)
}

func (h *History) closed() error {
	select {
	case <-h.stop:
		return errClosed
	default:
		return nil
	}
}

// fresh makes the index current for a read: what landed is committed,
// and commits made by others are read.
func (h *History) fresh(ctx context.Context) error {
	if err := h.closed(); err != nil {
		return err
	}
	if err := h.Flush(ctx); err != nil && h.Stuck() == nil {
		return err // stuck: reads are served from what is committed
	}
	if err := h.followHEAD(); err != nil {
		return err
	}
	head, err := h.repo.refs.Read(h.repo.currentBranch())
	if err != nil {
		return err
	}
	h.mu.RLock()
	same := h.ix.head == head
	h.mu.RUnlock()
	if same {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.catchUpLocked(head)
}

// followHEAD re-reads HEAD: a person may have checked out another branch
// in the brain, which history then follows.
func (h *History) followHEAD() error {
	b, err := h.repo.headBranch()
	if err != nil {
		return err
	}
	h.repo.mu.Lock()
	old := h.repo.branch
	h.repo.branch = b
	h.repo.mu.Unlock()
	if old != b {
		h.log.Warn("history: HEAD names another branch now; history follows it", "from", old, "to", b)
	}
	return nil
}

// Versions lists the versions of the note at path, newest first,
// following its renames back: at most limit (0: 20, at most 1,000),
// before cursor ("" for the newest; next is the cursor of the following
// page, "" after the oldest).
func (h *History) Versions(ctx context.Context, path, cursor string, limit int) ([]Version, string, error) {
	if err := h.fresh(ctx); err != nil {
		return nil, "", err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.ix.page(path, cursor, limit)
}

// Read returns a version of the note at path and its bytes; version must
// be in path's lineage.
func (h *History) Read(ctx context.Context, path, version string) (Version, []byte, error) {
	if err := h.fresh(ctx); err != nil {
		return Version{}, nil, err
	}
	h.mu.RLock()
	v, err := h.ix.find(path, version)
	var pv Version
	var blob plumbing.Hash
	if err == nil {
		pv, blob = v.public(), v.blob
	}
	h.mu.RUnlock()
	if err != nil {
		return Version{}, nil, err
	}
	if pv.Removed {
		return pv, nil, brain.Errorf(brain.CodeInvalidArgument, "version %s removed %s: it has no content; read the version before it", version, pv.Path)
	}
	b, err := h.objs.Blob(blob)
	if err != nil {
		return pv, nil, err
	}
	return pv, b, nil
}

// Latest returns the newest version of the lineage ending at path (which
// may be a removal), from the index as it is: call Flush first to read
// one's own writes.
func (h *History) Latest(path string) (Version, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	l := h.ix.byPath[path]
	if l == nil {
		return Version{}, false
	}
	return l.newest().public(), true
}

// MovedTo reports, for a path a note was renamed away from (and where no
// note lives now), the path the note has now and its newest version.
func (h *History) MovedTo(path string) (string, Version, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.ix.movedTo(path)
}

// Removed lists the notes below prefix (a brain-relative path prefix)
// whose newest version removes them, in no particular order.
func (h *History) Removed(prefix string) []Version {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.ix.removed(prefix)
}
