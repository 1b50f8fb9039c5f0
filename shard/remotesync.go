package shard

import (
	"context"
	"fmt"

	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
)

// remoteSync is the wing's link to its git remote, when Config.Remote is
// set: its syncer runs until Close.
type remoteSync struct {
	syncer *remote.Syncer
	stop   context.CancelFunc
	done   chan struct{}
}

// startRemote connects the wing's repository to Config.Remote and starts
// its syncer; merges are made by the history's service identity.
func (s *Service) startRemote() error {
	if s.cfg.Remote == nil {
		return nil
	}
	cfg := *s.cfg.Remote
	cfg.Wing = s.cfg.Wing
	if err := purgeAllowed(s.cfg.History.AllowPurge, cfg); err != nil {
		return err
	}
	r, err := remote.Open(s.cfg.Brain, cfg, s.log)
	if err != nil {
		return fmt.Errorf("shard: remote of wing %q: %w", s.cfg.Wing, err)
	}
	by := remote.Identity{Name: s.cfg.History.Service.Name, Email: s.cfg.History.Service.Email}
	if by.Name == "" {
		by = remote.Identity{Name: history.DefaultServiceName, Email: history.DefaultServiceEmail}
	}
	syncer := remote.NewSyncer(r, by, s.log, nil)
	if s.cfg.Metrics != nil {
		for _, c := range syncer.Collectors() {
			if err := s.cfg.Metrics.Register(c); err != nil {
				return fmt.Errorf("shard: remote metrics: %w", err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.remote = &remoteSync{syncer: syncer, stop: cancel, done: make(chan struct{})}
	if l, ok := s.cfg.History.Remote.(*purgeLink); ok {
		l.syncer = syncer
	}
	go func() {
		defer close(s.remote.done)
		syncer.Run(ctx)
	}()
	s.log.Info("remote: syncing", "url", cfg.Redacted(), "branch", cfg.WithDefaults().Branch, "prefix", cfg.Prefix())
	return nil
}

// purgeAllowed refuses purge with a remote unless the operator allowed
// the force push a purge then needs: purged content must never be pushed,
// and the remote's old history must be replaced.
func purgeAllowed(allowPurge bool, cfg remote.Config) error {
	if allowPurge && !cfg.ForcePushOnPurge {
		return fmt.Errorf("shard: wing %q: %w", cfg.Wing, remote.ErrPurgeNeedsForcePush)
	}
	return nil
}

// purgeLink is the wing's remote as the store's purge meets it
// (store.RemotePurge): the syncer, once startRemote made it.
type purgeLink struct{ syncer *remote.Syncer }

func (l *purgeLink) HoldForPurge(ctx context.Context) (store.PurgeHold, error) {
	if l.syncer == nil {
		return nil, nil
	}
	h, err := l.syncer.HoldForPurge(ctx)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Remote returns the wing's syncer (nil without a remote): the webhook
// triggers it, `brainstem check` reads its status.
func (s *Service) Remote() *remote.Syncer {
	if s.remote == nil {
		return nil
	}
	return s.remote.syncer
}

func (s *Service) stopRemote() {
	if s.remote != nil {
		s.remote.stop()
		<-s.remote.done
	}
}
