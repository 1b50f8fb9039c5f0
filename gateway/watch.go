package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/errgroup"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
)

// Change notifications.
//
// A client that listens — a session of 2025-06-18 or 2025-11-25 (its GET
// stream), or a 2026-07-28 subscriptions/listen stream asking for
// resourcesListChanged — is told notifications/resources/list_changed when
// a wing it can read changes, however the change was made: through this
// gateway, another replica, or an edit on the shard's disk. Every shard
// already keeps a change generation (the index generation a cross-wing
// search checks its statistics against, search.Source.Generation); while
// anyone listens, the watcher asks every wing for it each
// shards.watch_interval (a Stats request of no terms: no note, no token)
// and notifies the listeners whose grants read a wing whose generation
// moved. Each replica watches for its own listeners, so nothing is shared
// between replicas, and nothing is asked while nobody listens.

// listener is one listening client.
type listener struct {
	session server.ClientSession
	ci      *callInfo // the identity and grant key of whoever opened it
	modern  bool      // a subscriptions/listen stream: deliver only what it asked for
}

// watcher tracks the listeners and the wings' generations.
type watcher struct {
	g         *Gateway
	mu        sync.Mutex
	listeners map[server.ClientSession]*listener
	gens      []uint64 // by wing index (under mu)
	known     []bool   // gens[i] was read (under mu)
	wake      chan struct{}
}

func newWatcher(g *Gateway) *watcher {
	return &watcher{g: g, listeners: map[server.ClientSession]*listener{}, gens: make([]uint64, len(g.wings)),
		known: make([]bool, len(g.wings)), wake: make(chan struct{}, 1)}
}

// hooks registers the watcher with mcp-go: sessions of the session
// protocol when mcp-go registers them (at initialize, or their GET stream
// on another replica), subscriptions/listen streams when they open.
func (wt *watcher) hooks(h *server.Hooks) {
	h.AddOnRegisterSession(func(ctx context.Context, s server.ClientSession) {
		if ci := callInfoFrom(ctx); ci != nil {
			wt.add(ctx, s, ci, false)
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { wt.remove(s) })
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		ci, s := callInfoFrom(ctx), server.ClientSessionFromContext(ctx)
		if ci == nil || s == nil || !req.Params.Notifications.ResourcesListChanged {
			return
		}
		wt.add(ctx, s, ci, true)
		context.AfterFunc(ctx, func() { wt.remove(s) })
	})
}

// add registers a listener. The first one takes the wings' generations
// now, before its stream is acknowledged, so a change made after it
// listens is never taken for the starting point.
func (wt *watcher) add(ctx context.Context, s server.ClientSession, ci *callInfo, modern bool) {
	l := &listener{session: s, modern: modern,
		ci: &callInfo{id: ci.id, key: ci.key, requestID: "watch-" + ci.requestID, base: ci.base}}
	wt.mu.Lock()
	first := len(wt.listeners) == 0
	wt.listeners[s] = l
	wt.mu.Unlock()
	if first {
		wt.poll(ctx, false)
	}
	select {
	case wt.wake <- struct{}{}:
	default:
	}
}

func (wt *watcher) remove(s server.ClientSession) {
	wt.mu.Lock()
	delete(wt.listeners, s)
	wt.mu.Unlock()
}

func (wt *watcher) listening() bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return len(wt.listeners) > 0
}

// loop polls every shards.watch_interval while anyone listens, until ctx
// ends.
func (wt *watcher) loop(ctx context.Context) {
	t := time.NewTicker(wt.g.cfg.Shards.WatchInterval)
	defer t.Stop()
	for {
		if !wt.listening() {
			select {
			case <-ctx.Done():
				return
			case <-wt.wake:
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			wt.poll(ctx, true)
		}
	}
}

// poll reads every reachable wing's generation; with notify, the
// listeners of a wing whose generation moved are told.
func (wt *watcher) poll(ctx context.Context, notify bool) {
	g := wt.g
	ctx, cancel := context.WithTimeout(ctx, min(g.cfg.Shards.CallTimeout, max(g.cfg.Shards.WatchInterval, time.Second)))
	defer cancel()
	gens, read := make([]uint64, len(g.wings)), make([]bool, len(g.wings))
	var eg errgroup.Group
	eg.SetLimit(g.cfg.Limits.FanoutConcurrency)
	for i, w := range g.wings {
		if w.down() {
			continue
		}
		eg.Go(func() error {
			resp, err := w.client.Stats(ctx, &proto.StatsRequest{RequestID: "watch", StatsRequest: search.StatsRequest{Scope: search.ScopeWiki}})
			if err == nil {
				w.markReached()
				gens[i], read[i] = resp.Generation, true
			}
			return nil
		})
	}
	_ = eg.Wait()
	var changed []*wing
	wt.mu.Lock()
	for i, gen := range gens {
		if !read[i] {
			continue // not read this time: keep what was known
		}
		if wt.known[i] && wt.gens[i] != gen {
			changed = append(changed, g.wings[i])
		}
		wt.gens[i], wt.known[i] = gen, true
	}
	ls := make([]*listener, 0, len(wt.listeners))
	for _, l := range wt.listeners {
		ls = append(ls, l)
	}
	wt.mu.Unlock()
	if notify && len(changed) > 0 {
		g.metrics.watchChanges.Add(float64(len(changed)))
		for _, l := range ls {
			wt.notify(ctx, l, changed)
		}
	}
}

// notify tells l that the resource list changed if it can read one of the
// changed wings (its grant, cached or minted: the same as its calls').
func (wt *watcher) notify(ctx context.Context, l *listener, changed []*wing) {
	if l.modern {
		if f, ok := l.session.(server.SessionWithSubscriptionFilter); ok {
			if filter, active := f.SubscriptionFilter(); active && !filter.ResourcesListChanged {
				return
			}
		}
	}
	for _, w := range changed {
		gr, _, err := wt.g.grants.getKey(ctx, l.ci.id, l.ci.key, w, l.ci.requestID)
		if err != nil || !gr.caps.Has(brain.CapRead) {
			continue
		}
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: mcp.MethodNotificationResourcesListChanged}}
		select {
		case l.session.NotificationChannel() <- n:
			wt.g.metrics.notified.Inc()
		default: // the client does not read its stream: it will list again when it does
			wt.g.metrics.notifyDropped.Inc()
		}
		return
	}
}
