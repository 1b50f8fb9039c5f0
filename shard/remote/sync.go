package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// Backoff bounds of a failing sync: the wait doubles from the first to
// the last.
const (
	BackoffMin = time.Second
	BackoffMax = time.Minute
	// maxRounds bounds fetch-integrate-push attempts in one round while
	// the remote keeps moving.
	maxRounds = 3
	// maxCount bounds the walk that counts the commits not yet pushed.
	maxCount = 10000
	// maxRecent bounds the conflicts a Status lists.
	maxRecent = 100
)

// Status is what a Syncer knows of its remote, for metrics, logs and
// `brainstem check`. No field holds a secret.
type Status struct {
	// LastSync is when a round last ended with the remote holding every
	// local commit (zero: never); LastError is the error of the last round
	// (empty when it succeeded), scrubbed of secrets.
	LastSync  time.Time
	LastError string
	// Unpushed is the number of local commits the remote lacks (at most
	// maxCount), as of the last round.
	Unpushed int
	// Conflicts counts the notes settled by the conflict rule since start;
	// Recent lists the last ones (and Rejected the bad files of the last
	// integration), for `brainstem check`.
	Conflicts int
	Recent    []ConflictRecord
	Rejected  []Rejected
	Pushes    int
	// ForcePushPending is set while the force push of a purge's rewritten
	// history has not reached the remote (the rounds retry it).
	ForcePushPending bool
}

// Syncer runs the rounds of one wing's remote: fetch, integrate what the
// remote has that the wing lacks, push.
type Syncer struct {
	r     *Remote
	log   *slog.Logger
	by    Identity
	after func(time.Duration) <-chan time.Time
	wake  chan struct{}

	// hold is held by a round and by a purge, from its sync to its force
	// push: no round runs between.
	hold sync.Mutex

	mu sync.Mutex
	st Status
}

// NewSyncer returns the syncer of r; merges are made by by. after is the
// clock of waits (nil: time.After); tests inject theirs.
func NewSyncer(r *Remote, by Identity, log *slog.Logger, after func(time.Duration) <-chan time.Time) *Syncer {
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	if after == nil {
		after = time.After
	}
	s := &Syncer{r: r, log: log, by: by, after: after, wake: make(chan struct{}, 1)}
	if path := r.statusPath(); path != "" {
		// The conflicts listed before a restart stay listed.
		if rep, ok, err := ReadReport(filepath.Dir(filepath.Dir(path))); err == nil && ok {
			s.st.Recent = rep.Conflicts
		}
	}
	_, s.st.ForcePushPending, _ = r.pendingForcePush()
	return s
}

// Trigger asks for a round now (a webhook call, a batch of commits); it
// never blocks.
func (s *Syncer) Trigger() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Status returns a copy of the syncer's status.
func (s *Syncer) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Recent = append([]ConflictRecord(nil), st.Recent...)
	st.Rejected = append([]Rejected(nil), st.Rejected...)
	return st
}

// Run runs rounds until ctx ends: every pull interval, at each Trigger,
// after a failure with a backoff doubling from BackoffMin to BackoffMax,
// and when the wing has commits the remote lacks, in the first quiet
// gap: once its head did not move over a whole push delay, or once they
// have waited PushMaxDelay while commits keep coming. A push then runs
// beside as few writes as it can, and a burst of writes is one push.
func (s *Syncer) Run(ctx context.Context) {
	cfg := s.r.cfg
	tick := min(cfg.PushDelay, cfg.PullInterval)
	var since, backoff time.Duration // since the last round; 0: not failing
	var p pending
	p.head, _ = s.ahead()
	for {
		wait := cmp.Or(backoff, tick)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			since = cfg.PullInterval
		case <-s.after(wait):
			since += wait
		}
		push := p.due(s, wait, cfg.PushMaxDelay)
		if backoff == 0 && since < cfg.PullInterval && !push {
			continue
		}
		since, p.age = 0, 0
		if err := s.Round(ctx); err != nil && ctx.Err() == nil {
			backoff = min(max(2*backoff, BackoffMin), BackoffMax)
			continue
		}
		backoff = 0
	}
}

// pending is what Run knows of the commits the remote lacks: the wing's
// head at the last check, and how long they have waited.
type pending struct {
	head plumbing.Hash
	age  time.Duration
}

// due reports whether the wing's commits should be pushed now, after a
// wait of waited: the wing is ahead of the remote and either its head
// did not move during the wait or the commits have waited maxDelay.
func (p *pending) due(s *Syncer, waited, maxDelay time.Duration) bool {
	head, ahead := s.ahead()
	quiet := head == p.head
	p.head = head
	if !ahead {
		p.age = 0
		return false
	}
	p.age += waited
	return quiet || p.age >= maxDelay
}

// Round fetches, integrates and pushes once (again, up to maxRounds
// times, while the remote moves in between).
func (s *Syncer) Round(ctx context.Context) error {
	s.hold.Lock()
	defer s.hold.Unlock()
	ctx, cancel := s.r.roundContext(ctx)
	defer cancel()
	err := s.round(ctx)
	if err != nil {
		s.failed(err)
	}
	return err
}

// attempts pushes, integrating what the remote gained in between, up to
// maxRounds times.
func (s *Syncer) attempts(ctx context.Context) error {
	for range maxRounds {
		p, err := s.r.Push(ctx)
		if err == nil {
			s.succeeded(p)
			return nil
		}
		if !errors.Is(err, ErrRemoteMoved) {
			return err
		}
		if err := s.integrate(ctx); err != nil && !errors.Is(err, ErrLocalMoved) {
			return err
		}
	}
	return fmt.Errorf("%w (still after %d attempts in one round)", ErrRemoteMoved, maxRounds)
}

func (s *Syncer) integrate(ctx context.Context) error {
	remote, err := s.r.Fetch(ctx)
	if err != nil {
		return err
	}
	local, err := s.r.head()
	if err != nil {
		return err
	}
	in, err := s.r.Integrate(local, remote, s.by, 0)
	if err != nil {
		return err
	}
	if err := s.r.Apply(local, in); err != nil {
		return err
	}
	for _, c := range in.Conflicts {
		s.log.Warn("remote: conflict: the remote's version is current, the wing's stays in history (brain_restore settles it)",
			"path", c.Path, "local", c.Local, "remote", c.Remote, "merge", in.Commit)
	}
	for _, rej := range in.Rejected {
		s.log.Warn("remote: file not loaded", "path", rej.Path, "kind", rej.Kind, "reason", rej.Reason)
	}
	s.log.Info("remote: integrated", "merge", in.Commit, "changed", len(in.Changed), "conflicts", len(in.Conflicts), "rejected", len(in.Rejected))
	when := s.r.now().UTC()
	s.mu.Lock()
	s.st.Conflicts += len(in.Conflicts)
	for _, c := range in.Conflicts {
		rec := ConflictRecord{Path: c.Path, Local: c.Local.String(), Merge: in.Commit.String(), When: when}
		if !c.Remote.IsZero() {
			rec.Remote = c.Remote.String()
		}
		s.st.Recent = append(s.st.Recent, rec)
	}
	if n := len(s.st.Recent); n > maxRecent {
		s.st.Recent = s.st.Recent[n-maxRecent:]
	}
	s.st.Rejected = in.Rejected
	s.mu.Unlock()
	return nil
}

func (s *Syncer) succeeded(p Pushed) {
	s.mu.Lock()
	if s.st.LastError != "" {
		s.log.Info("remote: in sync again", "url", s.r.cfg.Redacted(), "head", p.To)
	}
	if p.From != p.To {
		s.st.Pushes++
	}
	s.st.LastSync, s.st.LastError, s.st.Unpushed = s.r.now(), "", 0
	rep := s.r.report(s.st, nil)
	s.mu.Unlock()
	s.r.saveReport(rep)
}

func (s *Syncer) failed(err error) {
	n, cerr := s.r.unpushed()
	s.mu.Lock()
	if cerr == nil {
		s.st.Unpushed = n
	}
	if s.st.LastError != err.Error() {
		s.log.Warn("remote: sync failed; writes go on locally and the push is retried", "url", s.r.cfg.Redacted(), "err", err, "hint", Hint(err))
	}
	s.st.LastError = err.Error()
	rep := s.r.report(s.st, err)
	s.mu.Unlock()
	s.r.saveReport(rep)
}

// head reads the wing's branch. go-git lists the repository's packs once
// and never again, so that the history engine's commits since, each in a
// pack of its own, would stay unseen ("object not found"); head makes it
// list them again, after the read, so that the commit read is seen.
func (r *Remote) head() (plumbing.Hash, error) {
	defer r.store.Reindex()
	return r.git.Read(r.local) // zero: no commit yet
}

// ahead returns the wing's head and whether it differs from the last
// remote head seen (true too when either cannot be read).
func (r *Remote) ahead() (plumbing.Hash, bool) {
	head, err := r.head()
	if err != nil {
		return plumbing.ZeroHash, true
	}
	ref, err := r.repo.Storer.Reference(r.track)
	return head, err != nil || ref.Hash() != head
}

// unpushed counts the commits reachable from the wing's head and not
// from the last remote head seen (at most maxCount).
func (r *Remote) unpushed() (int, error) {
	head, err := r.head()
	if err != nil {
		return 0, err
	}
	stop, _ := r.git.Read(r.track) // zero: never fetched or pushed
	if head.IsZero() {
		return 0, nil
	}
	w, err := gitstore.NewCommits(r.repo.CommitObject, head, stop, maxCount)
	if errors.Is(err, gitstore.ErrOldMissing) { // the head last seen is gone (a purge rewrote it)
		w, err = gitstore.NewCommits(r.repo.CommitObject, head, plumbing.ZeroHash, maxCount)
	}
	if err != nil {
		return 0, fmt.Errorf("remote: %w", err)
	}
	return min(len(w.Fresh), maxCount), nil
}

// Collectors are the syncer's Prometheus series (label-free; the last
// error's text is in the log and `brainstem check`, never in a label).
func (s *Syncer) Collectors() []prometheus.Collector {
	const ns = "brainstem_remote"
	g := func(name, help string, f func(Status) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, func() float64 { return f(s.Status()) })
	}
	return []prometheus.Collector{
		g("unpushed_commits", "Local commits the remote does not hold yet (as of the last sync round).", func(st Status) float64 { return float64(st.Unpushed) }),
		g("last_sync_timestamp_seconds", "When the remote last held every local commit (Unix seconds; 0: never).", func(st Status) float64 {
			if st.LastSync.IsZero() {
				return 0
			}
			return float64(st.LastSync.UnixNano()) / 1e9
		}),
		g("last_sync_failed", "1 when the last sync round failed (the error is logged and listed by brainstem check), else 0.", func(st Status) float64 {
			if st.LastError != "" {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "conflicts_total", Help: "Notes changed on both sides, settled by the conflict rule (the remote's version is current)."},
			func() float64 { return float64(s.Status().Conflicts) }),
		g("rejected_files", "Files of the remote reported and not loaded at the last integration.", func(st Status) float64 { return float64(len(st.Rejected)) }),
		g("force_push_pending", "1 while a purge's rewritten history has not been force pushed to the remote (retried at each round), else 0.", func(st Status) float64 {
			if st.ForcePushPending {
				return 1
			}
			return 0
		}),
	}
}
