package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// round is one round's work: the force push a purge still owes, else the
// attempts of fetch, integrate and push.
func (s *Syncer) round(ctx context.Context) error {
	lease, pending, err := s.r.pendingForcePush()
	if err != nil {
		return err
	}
	if pending {
		return s.forcePush(ctx, lease)
	}
	return s.attempts(ctx)
}

// forcePush force pushes the rewritten branch with a lease on the remote
// head the purge synced with, and clears the pending state; a failure
// leaves it pending.
func (s *Syncer) forcePush(ctx context.Context, lease plumbing.Hash) error {
	s.setPending(true)
	p, err := s.r.ForcePush(ctx, lease)
	if errors.Is(err, ErrLeaseMoved) {
		if lease, err = s.catchUp(ctx, lease); err == nil {
			p, err = s.r.ForcePush(ctx, lease)
		}
	}
	if err != nil {
		s.log.Warn("remote: the force push of the purged history is pending; the next rounds retry it", "url", s.r.cfg.Redacted(), "lease", lease, "err", err)
		return err
	}
	if err := s.r.setForcePush(plumbing.ZeroHash, false); err != nil {
		return err
	}
	s.setPending(false)
	s.log.Info("remote: force pushed the purged history; clones made before must re-clone (or git fetch && git reset --hard)", "url", s.r.cfg.Redacted(), "from", p.From, "to", p.To)
	s.succeeded(p)
	return nil
}

func (s *Syncer) setPending(on bool) {
	s.mu.Lock()
	s.st.ForcePushPending = on
	s.mu.Unlock()
}

// ForcePush moves the remote branch from lease to the wing's head, which
// need not contain it (a purge rewrote it): the same send-pack as Push,
// where the lease is the old value of the update, checked against the
// advertised head first and by the remote under its ref lock. A remote
// that moved since gives ErrLeaseMoved; nothing is pushed then.
func (r *Remote) ForcePush(ctx context.Context, lease plumbing.Hash) (Pushed, error) {
	sess, ar, remote, err := r.receivePack(ctx, "force push")
	if err != nil {
		return Pushed{}, err
	}
	defer sess.Close()
	if remote != lease {
		return Pushed{}, fmt.Errorf("%w (now at %s, the lease is %s)", ErrLeaseMoved, remote, lease)
	}
	local, err := r.head()
	if err != nil {
		return Pushed{}, err
	}
	p := Pushed{From: remote, To: local}
	if remote != local {
		if err := r.send(ctx, sess, ar, lease, local, plumbing.ZeroHash); err != nil {
			return Pushed{}, r.wrap("force push", err)
		}
	}
	if err := r.git.Set(context.Background(), r.track, local); err != nil {
		return p, fmt.Errorf("remote: record the pushed head: %w", err)
	}
	return p, nil
}

// ahead is Remote.ahead under the hold: go-git's storage is not safe for
// concurrent use, and a purge's sync or force push may be running in
// another goroutine; while one is, it reports false (the purge does the
// round's work).
func (s *Syncer) ahead() (plumbing.Hash, bool) {
	if !s.hold.TryLock() {
		return plumbing.ZeroHash, false
	}
	defer s.hold.Unlock()
	return s.r.ahead()
}
