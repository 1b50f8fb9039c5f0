package surfaces

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

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
	caller  route.Caller // the identity and grant key of whoever opened it
	modern  bool         // a subscriptions/listen stream: deliver only what it asked for
	mu      sync.Mutex
	hashes  map[string]string // subscribed URI → the note's content hash when last read ("": none for them); under mu
}

// maxWatchedResources bounds the notes one listener may subscribe to
// (resources/updated); beyond it a subscription is acknowledged but the
// listener hears resources/list_changed only.
const maxWatchedResources = 64

// Watcher tracks the listeners and the wings' generations.
type Watcher struct {
	s         *Surfaces
	mu        sync.Mutex
	listeners map[server.ClientSession]*listener
	gens      []uint64 // by wing index (under mu)
	known     []bool   // gens[i] was read (under mu)
	wake      chan struct{}
}

// NewWatcher is the watcher of the wings of s; Loop runs it.
func NewWatcher(s *Surfaces) *Watcher {
	return &Watcher{s: s, listeners: map[server.ClientSession]*listener{}, gens: make([]uint64, len(s.Wings)),
		known: make([]bool, len(s.Wings)), wake: make(chan struct{}, 1)}
}

// Hooks registers the watcher with mcp-go: sessions of the session
// protocol when mcp-go registers them (at initialize, or their GET stream
// on another replica), subscriptions/listen streams when they open.
func (wt *Watcher) Hooks(h *server.Hooks) {
	h.AddOnRegisterSession(func(ctx context.Context, s server.ClientSession) {
		if c, ok := wt.s.Gateway.Caller(ctx); ok {
			wt.add(ctx, s, c, false)
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { wt.remove(s) })
	// mcp-go acknowledges resources/subscribe and keeps nothing for a
	// Streamable HTTP session: the listener keeps its subscriptions.
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		wt.baseline(ctx, server.ClientSessionFromContext(ctx), []string{req.Params.URI})
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if l := wt.listener(server.ClientSessionFromContext(ctx)); l != nil {
			l.mu.Lock()
			delete(l.hashes, req.Params.URI)
			l.mu.Unlock()
		}
	})
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		c, ok := wt.s.Gateway.Caller(ctx)
		s := server.ClientSessionFromContext(ctx)
		f := req.Params.Notifications
		if !ok || s == nil || !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0 {
			return
		}
		wt.add(ctx, s, c, true)
		wt.baseline(ctx, s, f.ResourceSubscriptions)
		context.AfterFunc(ctx, func() { wt.remove(s) })
	})
}

// baseline reads the subscribed notes' content hashes now, before the
// subscription is acknowledged, so a change made after it is told.
func (wt *Watcher) baseline(ctx context.Context, s server.ClientSession, uris []string) {
	l := wt.listener(s)
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
func (wt *Watcher) noteHash(ctx context.Context, l *listener, uri string) string {
	id, err := brain.ParseNoteURI(uri)
	w := wt.s.ByName[id.Wing]
	if err != nil || w == nil {
		return ""
	}
	req := &proto.CallRequest{RequestID: l.caller.RequestID, Tool: "brain_get", Args: getArgs(id)}
	resp, err := wt.s.Shards.Call(ctx, l.caller, w, req, wt.s.writes("brain_get"))
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
func (wt *Watcher) add(ctx context.Context, s server.ClientSession, c route.Caller, modern bool) {
	c.RequestID = "watch-" + c.RequestID
	l := &listener{session: s, modern: modern, hashes: map[string]string{}, caller: c}
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

// listener is the listener of s, nil if none.
func (wt *Watcher) listener(s server.ClientSession) *listener {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.listeners[s]
}

func (wt *Watcher) remove(s server.ClientSession) {
	wt.mu.Lock()
	delete(wt.listeners, s)
	wt.mu.Unlock()
}

// Loop polls every shards.watch_interval while anyone listens, until ctx
// ends.
func (wt *Watcher) Loop(ctx context.Context) {
	t := time.NewTicker(wt.s.WatchInterval)
	defer t.Stop()
	for {
		wt.mu.Lock()
		listening := len(wt.listeners) > 0
		wt.mu.Unlock()
		if !listening {
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
func (wt *Watcher) poll(ctx context.Context, notify bool) {
	s := wt.s
	ctx, cancel := context.WithTimeout(ctx, min(s.CallTimeout, max(s.WatchInterval, time.Second)))
	defer cancel()
	gens, read, down := make([]uint64, len(s.Wings)), make([]bool, len(s.Wings)), make([]error, len(s.Wings))
	for i, w := range s.Wings {
		if w.Down() {
			down[i] = route.ErrNotAsked
		}
	}
	route.EachWing(s.Workers, s.FanoutConcurrency, s.Wings, down, func(i int, w *route.Wing) {
		resp, err := w.Client.Stats(ctx, &proto.StatsRequest{RequestID: "watch", StatsRequest: search.StatsRequest{Scope: search.ScopeWiki}})
		if err == nil {
			w.MarkReached()
			gens[i], read[i] = resp.Generation, true
		}
	})
	var changed []*route.Wing
	wt.mu.Lock()
	for i, gen := range gens {
		if !read[i] {
			continue // not read this time: keep what was known
		}
		if wt.known[i] && wt.gens[i] != gen {
			changed = append(changed, s.Wings[i])
		}
		wt.gens[i], wt.known[i] = gen, true
	}
	ls := slices.Collect(maps.Values(wt.listeners))
	wt.mu.Unlock()
	if notify && len(changed) > 0 {
		s.Changes.Add(float64(len(changed)))
		for _, l := range ls {
			wt.notify(ctx, l, changed)
		}
	}
}

// notify tells l that the resource list changed if it can read one of the
// changed wings (its grant, cached or minted: the same as its calls'), and
// that a note it subscribed to was updated when its content hash moved.
func (wt *Watcher) notify(ctx context.Context, l *listener, changed []*route.Wing) {
	wt.notifyUpdated(ctx, l, changed)
	wt.notifyListChanged(ctx, l, changed)
}

// NotifyForTest tells the session s, as a listener of the caller email
// listens now, of a change of the wings changed; false when email does not
// listen. It panics outside a test binary.
func (wt *Watcher) NotifyForTest(ctx context.Context, email string, s server.ClientSession, changed []*route.Wing) bool {
	if !testing.Testing() {
		panic("gateway: NotifyForTest is for tests only")
	}
	wt.mu.Lock()
	ls := slices.Collect(maps.Values(wt.listeners))
	wt.mu.Unlock()
	i := slices.IndexFunc(ls, func(l *listener) bool { return l.caller.ID.Email == email })
	if i >= 0 {
		wt.notify(ctx, &listener{session: s, caller: ls[i].caller}, changed)
	}
	return i >= 0
}

// notifyUpdated sends notifications/resources/updated for each subscribed
// note of a changed wing whose content hash moved (created, changed,
// moved away or archived, or no longer readable by the listener).
func (wt *Watcher) notifyUpdated(ctx context.Context, l *listener, changed []*route.Wing) {
	l.mu.Lock()
	uris := slices.Collect(maps.Keys(l.hashes))
	l.mu.Unlock()
	for _, uri := range uris {
		id, err := brain.ParseNoteURI(uri)
		if err != nil || !slices.ContainsFunc(changed, func(w *route.Wing) bool { return w.Name == id.Wing }) {
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
func (wt *Watcher) send(l *listener, n mcp.JSONRPCNotification) {
	select {
	case l.session.NotificationChannel() <- n:
		wt.s.Notified.Inc()
	default: // the client does not read its stream: it will list again when it does
		wt.s.Dropped.Inc()
	}
}

func (wt *Watcher) notifyListChanged(ctx context.Context, l *listener, changed []*route.Wing) {
	if l.modern {
		if f, ok := l.session.(server.SessionWithSubscriptionFilter); ok {
			if filter, active := f.SubscriptionFilter(); active && !filter.ResourcesListChanged {
				return
			}
		}
	}
	for _, w := range changed {
		gr, _, err := wt.s.Grants.GetKey(ctx, l.caller.ID, l.caller.Key, w, l.caller.RequestID)
		if err != nil || !gr.Caps.Has(brain.CapRead) {
			continue
		}
		wt.send(l, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: mcp.MethodNotificationResourcesListChanged}})
		return
	}
}
