package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/errgroup"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/route"
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
	mu      sync.Mutex
	hashes  map[string]string // subscribed URI → the note's content hash when last read ("": none for them); under mu
}

// maxWatchedResources bounds the notes one listener may subscribe to
// (resources/updated); beyond it a subscription is acknowledged but the
// listener hears resources/list_changed only.
const maxWatchedResources = 64

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
	// mcp-go acknowledges resources/subscribe and keeps nothing for a
	// Streamable HTTP session: the listener keeps its subscriptions.
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		wt.baseline(ctx, server.ClientSessionFromContext(ctx), []string{req.Params.URI})
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		wt.mu.Lock()
		l := wt.listeners[server.ClientSessionFromContext(ctx)]
		wt.mu.Unlock()
		if l != nil {
			l.mu.Lock()
			delete(l.hashes, req.Params.URI)
			l.mu.Unlock()
		}
	})
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		ci, s := callInfoFrom(ctx), server.ClientSessionFromContext(ctx)
		f := req.Params.Notifications
		if ci == nil || s == nil || !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0 {
			return
		}
		wt.add(ctx, s, ci, true)
		wt.baseline(ctx, s, f.ResourceSubscriptions)
		context.AfterFunc(ctx, func() { wt.remove(s) })
	})
}

// baseline reads the subscribed notes' content hashes now, before the
// subscription is acknowledged, so a change made after it is told.
func (wt *watcher) baseline(ctx context.Context, s server.ClientSession, uris []string) {
	wt.mu.Lock()
	l := wt.listeners[s]
	wt.mu.Unlock()
	if l == nil {
		return
	}
	for _, uri := range uris {
		l.mu.Lock()
		_, seen := l.hashes[uri]
		full := len(l.hashes) >= maxWatchedResources
		l.mu.Unlock()
		if seen || full {
			continue
		}
		h := wt.noteHash(ctx, l, uri)
		l.mu.Lock()
		l.hashes[uri] = h
		l.mu.Unlock()
	}
}

// noteHash is the content hash of a note URI as the listener's grant reads
// it (brain_get), "" when it does not exist for them.
func (wt *watcher) noteHash(ctx context.Context, l *listener, uri string) string {
	g := wt.g
	id, err := brain.ParseNoteURI(uri)
	w := g.byName[id.Wing]
	if err != nil || w == nil {
		return ""
	}
	args, _ := brain.Marshal(struct {
		ID string `json:"id"`
	}{id.String()}) // a string: cannot fail
	resp, err := g.callWing(ctx, l.ci, w, &proto.CallRequest{RequestID: l.ci.requestID, Tool: "brain_get", Args: args}, g.writes("brain_get"))
	if err != nil || resp.IsError {
		return ""
	}
	var n noteAnswer
	if json.Unmarshal(resp.Result, &n) != nil {
		return ""
	}
	return n.ContentHash
}

// add registers a listener. The first one takes the wings' generations
// now, before its stream is acknowledged, so a change made after it
// listens is never taken for the starting point.
func (wt *watcher) add(ctx context.Context, s server.ClientSession, ci *callInfo, modern bool) {
	l := &listener{session: s, modern: modern, hashes: map[string]string{},
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
		if w.Down() {
			continue
		}
		eg.Go(func() error {
			resp, err := w.Client.Stats(ctx, &proto.StatsRequest{RequestID: "watch", StatsRequest: search.StatsRequest{Scope: search.ScopeWiki}})
			if err == nil {
				w.MarkReached()
				gens[i], read[i] = resp.Generation, true
			}
			return nil
		})
	}
	_ = eg.Wait()
	var changed []*route.Wing
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
// changed wings (its grant, cached or minted: the same as its calls'), and
// that a note it subscribed to was updated when its content hash moved.
func (wt *watcher) notify(ctx context.Context, l *listener, changed []*route.Wing) {
	wt.notifyUpdated(ctx, l, changed)
	wt.notifyListChanged(ctx, l, changed)
}

// notifyUpdated sends notifications/resources/updated for each subscribed
// note of a changed wing whose content hash moved (created, changed,
// moved away or archived, or no longer readable by the listener).
func (wt *watcher) notifyUpdated(ctx context.Context, l *listener, changed []*route.Wing) {
	in := map[string]bool{}
	for _, w := range changed {
		in[w.Name] = true
	}
	l.mu.Lock()
	uris := slices.Collect(maps.Keys(l.hashes))
	l.mu.Unlock()
	for _, uri := range uris {
		id, err := brain.ParseNoteURI(uri)
		if err != nil || !in[id.Wing] {
			continue
		}
		h := wt.noteHash(ctx, l, uri)
		l.mu.Lock()
		before, seen := l.hashes[uri]
		if seen { // not unsubscribed meanwhile
			l.hashes[uri] = h
		}
		l.mu.Unlock()
		if !seen || before == h {
			continue
		}
		wt.send(l, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated, Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}}})
	}
}

// send hands n to the listener's stream without waiting.
func (wt *watcher) send(l *listener, n mcp.JSONRPCNotification) {
	select {
	case l.session.NotificationChannel() <- n:
		wt.g.metrics.notified.Inc()
	default: // the client does not read its stream: it will list again when it does
		wt.g.metrics.notifyDropped.Inc()
	}
}

func (wt *watcher) notifyListChanged(ctx context.Context, l *listener, changed []*route.Wing) {
	if l.modern {
		if f, ok := l.session.(server.SessionWithSubscriptionFilter); ok {
			if filter, active := f.SubscriptionFilter(); active && !filter.ResourcesListChanged {
				return
			}
		}
	}
	for _, w := range changed {
		gr, _, err := wt.g.grants.GetKey(ctx, l.ci.id, l.ci.key, w, l.ci.requestID)
		if err != nil || !gr.Caps.Has(brain.CapRead) {
			continue
		}
		wt.send(l, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: mcp.MethodNotificationResourcesListChanged}})
		return
	}
}
