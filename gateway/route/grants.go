package route

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/proto"
)

// Grant is what the gateway holds for one (email, groups, wing): a shard
// token and the capabilities the shard put in it, or a remembered refusal.
// When the token expires (or a shard rejects it) the token is dropped but
// caps is kept: it is what the gateway last learned the caller may do in
// the wing, which decides whether a wing that cannot be reached may be
// named to the caller (least disclosure).
type Grant struct {
	Token  string
	Caps   brain.Caps
	Expiry time.Time // never later than the SSO token's expiry (the shard caps it at NotAfter)
	Denied bool      // the wing's policy does not admit the caller; remembered until expiry
}

// Key identifies a caller's entry in the grant cache: the canonical
// email and the canonical group set of the token in hand. A grant therefore
// follows the token: a token with other groups finds another entry and is
// minted for, at once, and the same groups in another order find the same
// entry. It is the email itself for a token without groups, else the
// email, a NUL (which no canonical email holds) and the first 16 bytes of
// auth.GroupsDigest, so an entry costs no more memory than an email-keyed
// one did, and only a token with groups costs a digest (and one small
// allocation) per request.
type Key string

// KeyOf returns the grant-cache key of a verified identity.
func KeyOf(id auth.Identity) Key {
	if len(id.Groups) == 0 {
		return Key(id.Email)
	}
	d := auth.GroupsDigest(id.Groups)
	if d == ([32]byte{}) { // only empty group names
		return Key(id.Email)
	}
	return Key(id.Email + "\x00" + string(d[:16]))
}

func (g Grant) usable(now time.Time) bool { return !g.Expiry.IsZero() && now.Before(g.Expiry) }

// callerGrants is one caller's entry in the grant cache: the grants of
// one (email, group set), indexed by wing index. It lives only in memory.
type callerGrants struct {
	mu      sync.Mutex
	grants  []Grant
	renewed atomic.Int64 // monotonic-ish unix nanos of the last idle-TTL renewal
}

// Metrics are the counters the cache reports to.
type Metrics interface {
	CacheHit()
	CacheMiss()
	Minted(wing, outcome string)
}

// GrantCache is the cache of shard tokens, keyed by email and group set
// (Key): the design brief's "session cache", configured by the
// grants section (GrantsConfig). An entry is dropped after idleTTL without use or when the
// cache is full (LRU); a grant inside is used only until its expiry, which
// never exceeds the SSO token's. Concurrent first calls for one (email,
// group set, wing) share one mint.
type GrantCache struct {
	lru         *expirable.LRU[Key, *callerGrants]
	createMu    sync.Mutex // serialises creating an email's entry
	flight      singleflight.Group
	wings       []*Wing
	now         func() time.Time
	idleTTL     time.Duration
	denyTTL     time.Duration
	mintTimeout time.Duration
	metrics     Metrics
	log         *slog.Logger
	// OnMintJoin, when set, is called each time a lookup joined a mint
	// flight (Gateway.OnMintJoinForTest).
	OnMintJoin func()
}

// ExpiryMargin: a grant that expires sooner than this is re-minted rather
// than sent, so it does not expire in flight.
const ExpiryMargin = 5 * time.Second

func NewGrantCache(wings []*Wing, maxEntries int, idleTTL, denyTTL, mintTimeout time.Duration, now func() time.Time, m Metrics, log *slog.Logger) *GrantCache {
	return &GrantCache{lru: expirable.NewLRU[Key, *callerGrants](maxEntries, nil, idleTTL), wings: wings, now: now,
		idleTTL: idleTTL, denyTTL: denyTTL, mintTimeout: mintTimeout, metrics: m, log: log}
}

// Keys are the callers (email and group set) in the cache.
func (c *GrantCache) Keys() []Key { return c.lru.Keys() }

// Len is the number of callers (email and group set) in the cache.
func (c *GrantCache) Len() int { return c.lru.Len() }

// DropEmails forgets every entry of these emails (whatever their group
// sets): an operator ended their sign-ins, so no shard token minted for
// them before is used again.
func (c *GrantCache) DropEmails(emails []string) int {
	if len(emails) == 0 {
		return 0
	}
	set := make(map[string]bool, len(emails))
	for _, e := range emails {
		set[e] = true
	}
	n := 0
	for _, k := range c.lru.Keys() {
		email, _, _ := strings.Cut(string(k), "\x00")
		if set[email] && c.lru.Remove(k) {
			n++
		}
	}
	return n
}

// entry returns the key's entry, creating it, and renews its idle TTL
// (expirable.LRU's Get does not).
func (c *GrantCache) entry(key Key) *callerGrants {
	if s, ok := c.lru.Get(key); ok {
		c.renew(key, s)
		return s
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if s, ok := c.lru.Get(key); ok {
		return s
	}
	s := &callerGrants{grants: make([]Grant, len(c.wings))}
	s.renewed.Store(time.Now().UnixNano())
	c.lru.Add(key, s)
	return s
}

// renew re-adds the entry (resetting its TTL) at most a few times per idle
// period, so a busy caller's entry is not dropped and the hot path stays
// cheap.
func (c *GrantCache) renew(key Key, s *callerGrants) {
	now := time.Now().UnixNano()
	last := s.renewed.Load()
	if time.Duration(now-last) < c.idleTTL/8 {
		return
	}
	if s.renewed.CompareAndSwap(last, now) {
		c.lru.Add(key, s)
	}
}

// Cached returns a usable grant without minting.
func (c *GrantCache) Cached(key Key, w *Wing) (Grant, bool) {
	s := c.entry(key)
	now := c.now()
	s.mu.Lock()
	g := s.grants[w.Idx]
	if !g.Expiry.IsZero() && !now.Before(g.Expiry) {
		// Drop tokens and refusals past expiry; remember what the caller
		// could do (held: none after a refusal, which holds no caps).
		s.grants[w.Idx] = Grant{Caps: g.Caps}
	}
	s.mu.Unlock()
	if g.Denied && g.usable(now) {
		return g, true
	}
	if !g.Denied && g.Token != "" && g.Expiry.Sub(now) > ExpiryMargin {
		return g, true
	}
	return Grant{}, false
}

// Lookup answers GetKey from the cache alone, never blocking: ok is false
// when the grant must be minted.
func (c *GrantCache) Lookup(key Key, w *Wing) (g Grant, ok bool, err error) {
	g, ok = c.Cached(key, w)
	if !ok {
		return Grant{}, false, nil
	}
	c.metrics.CacheHit()
	if g.Denied {
		return Grant{}, true, deniedError(w.Name)
	}
	return g, true, nil
}

// GetKey returns the caller's grant for a wing (key is KeyOf(id)), minting
// on a miss. fresh reports whether it was minted for this call (shared
// mints count). A remembered or new refusal is an *edge.Error with
// brain.CodeForbidden wrapping ErrNotAdmitted.
func (c *GrantCache) GetKey(ctx context.Context, id auth.Identity, key Key, w *Wing, requestID string) (g Grant, fresh bool, err error) {
	if g, ok, err := c.Lookup(key, w); ok {
		return g, false, err
	}
	g, err = c.mint(ctx, id, key, w, requestID)
	if err != nil {
		return Grant{}, true, err
	}
	return g, true, nil
}

// Held returns the capabilities the gateway last learned the caller (the
// key) has in a wing, whether or not the token is still usable; 0 when it
// never learned any or the wing refused the caller.
func (c *GrantCache) Held(key Key, w *Wing) brain.Caps {
	s, ok := c.lru.Peek(key)
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.grants[w.Idx]; !g.Denied {
		return g.Caps
	}
	return 0
}

// Disclosable reports whether a wing's failure err (nil: none) may be named
// to the caller (the key): only when the wing admits the caller and the
// caller is known to hold a capability there (least disclosure).
func (c *GrantCache) Disclosable(key Key, w *Wing, err error) bool {
	return err != nil && !errors.Is(err, ErrNotAdmitted) && c.Held(key, w) != 0
}

// Invalidate drops the caller's token for a wing if it still holds token
// (a concurrent re-mint's newer token is kept).
func (c *GrantCache) Invalidate(key Key, w *Wing, token string) {
	s, ok := c.lru.Peek(key)
	if !ok {
		return
	}
	s.mu.Lock()
	if g := s.grants[w.Idx]; g.Token == token {
		s.grants[w.Idx] = Grant{Caps: g.Caps}
	}
	s.mu.Unlock()
}

// ErrNotAdmitted marks a refusal by the wing's policy. It never reaches a
// caller as such: a caller with no capability in a wing is answered as for
// a wing that does not exist (surfaces.Surfaces.NoWing).
var ErrNotAdmitted = errors.New("gateway: the wing's policy does not admit the caller")

func deniedError(wing string) *edge.Error {
	return edge.NewError(brain.CodeForbidden, errors.Join(edge.ErrForbidden, ErrNotAdmitted), "the policy of wing %q does not admit you", wing)
}

type mintResult struct {
	g   Grant
	err error
}

// mint asks the wing's shard for a token, sharing one request among all
// concurrent callers for the same (email, group set, wing). The request
// runs on a detached context with its own timeout, so one impatient caller
// does not fail the others; each caller still stops waiting when its own
// ctx ends.
func (c *GrantCache) mint(ctx context.Context, id auth.Identity, key Key, w *Wing, requestID string) (Grant, error) {
	flightKey := w.Name + "\x00" + string(key)
	ch := c.flight.DoChan(flightKey, func() (any, error) {
		return c.mintFlight(ctx, id, key, w, requestID), nil
	})
	// The caller has joined the flight here (DoChan registers it synchronously).
	if c.OnMintJoin != nil {
		c.OnMintJoin()
	}
	c.metrics.CacheMiss()
	select {
	case r := <-ch:
		mr := r.Val.(mintResult)
		return mr.g, mr.err
	case <-ctx.Done():
		return Grant{}, ClassifyShard(ctx.Err(), w)
	}
}

// mintFlight is one mint flight: it asks the shard (on a context detached
// from the first caller's, with its own timeout) and stores the answer, a
// Grant or a refusal.
func (c *GrantCache) mintFlight(ctx context.Context, id auth.Identity, key Key, w *Wing, requestID string) mintResult {
	// A flight that just finished may have stored a grant between this
	// caller's cache miss and its joining: use it rather than mint again.
	if g, ok := c.Cached(key, w); ok {
		if g.Denied {
			return mintResult{err: deniedError(w.Name)}
		}
		return mintResult{g: g}
	}
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.mintTimeout)
	defer cancel()
	mreq := &proto.MintRequest{RequestID: requestID, Email: id.Email, Groups: id.Groups, NotAfter: id.Expiry}
	mctx, span := ShardSpan(mctx, "mint", w)
	resp, err := w.Client.Mint(mctx, mreq)
	if errors.Is(err, proto.ErrConnectionLost) && proto.CodeOf(err) == 0 {
		// A mint changes nothing on the shard: ask again (once).
		resp, err = w.Client.Mint(mctx, mreq)
	}
	EndShardSpan(span, err)
	if err != nil {
		return c.mintFailed(id, key, w, requestID, err)
	}
	if w.MintRefused.Swap(nil) != nil {
		c.log.Info("the wing's shard accepts this gateway's mints again", "wing", w.Name)
	}
	w.MarkReached()
	caps, perr := brain.ParseCaps(resp.Caps)
	if perr != nil || resp.Token == "" {
		c.metrics.Minted(w.Name, string(brain.CodeInternal))
		return mintResult{err: edge.NewError(brain.CodeInternal, errors.Join(edge.ErrUnavailable, perr), "wing %q answered an unusable mint (caps %q)", w.Name, resp.Caps)}
	}
	if caps == 0 {
		c.metrics.Minted(w.Name, "forbidden")
		c.Store(key, w, Grant{Denied: true, Expiry: c.now().Add(c.denyTTL)})
		return mintResult{err: deniedError(w.Name)}
	}
	exp := resp.Expiry
	if !id.Expiry.IsZero() && exp.After(id.Expiry) {
		exp = id.Expiry // never outlive the SSO token, whatever the shard says
	}
	g := Grant{Token: resp.Token, Caps: caps, Expiry: exp}
	c.metrics.Minted(w.Name, "ok")
	c.Store(key, w, g)
	return mintResult{g: g}
}

// mintFailed handles a mint the shard refused or did not answer: a policy
// refusal is remembered for denyTTL; a refusal of this gateway's
// certificate is reported for /readyz, not remembered per user.
func (c *GrantCache) mintFailed(id auth.Identity, key Key, w *Wing, requestID string, err error) mintResult {
	switch proto.CodeOf(err) {
	case proto.CodeForbidden:
		c.metrics.Minted(w.Name, "forbidden")
		c.Store(key, w, Grant{Denied: true, Expiry: c.now().Add(c.denyTTL)})
		return mintResult{err: deniedError(w.Name)}
	case proto.CodeWrongRole:
		// Not this user's fault: the shard refuses every mint from
		// this gateway. Not remembered per user; /readyz reports it.
		c.metrics.Minted(w.Name, "wrong_role")
		msg := err.Error()
		if prev := w.MintRefused.Swap(&msg); prev == nil {
			c.log.Error("the wing's shard refuses this gateway's mints: the gateway is not ready until an operator fixes its certificate",
				"wing", w.Name, "err", err)
		}
		return mintResult{err: edge.Classify(err, w.Name)}
	}
	e := ClassifyShard(err, w)
	c.metrics.Minted(w.Name, string(e.Code))
	c.log.Warn("mint failed", "wing", w.Name, "email", id.Email, "request_id", requestID, "err", err)
	return mintResult{err: e}
}

func (c *GrantCache) Store(key Key, w *Wing, g Grant) {
	s := c.entry(key)
	s.mu.Lock()
	s.grants[w.Idx] = g
	s.mu.Unlock()
}

// CapsAll returns the caller's capabilities in every wing, minting where
// needed (concurrently, at most limit at once). A wing that cannot be
// reached (or is known to be down) or refuses the
// caller has zero caps; errs records why.
func (c *GrantCache) CapsAll(ctx context.Context, id auth.Identity, requestID string, limit int) (caps []brain.Caps, errs []error) {
	caps = make([]brain.Caps, len(c.wings))
	errs = make([]error, len(c.wings))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	key := KeyOf(id)
	for i, w := range c.wings {
		if g, ok, err := c.Lookup(key, w); ok {
			caps[i], errs[i] = g.Caps, err
			continue
		}
		if st := w.Client.State(); st.Down {
			// Listing tools, brain_wings and cross-wing search do not wait
			// for a wing known to be unreachable.
			errs[i] = edge.NewError(brain.CodeUnavailable, errors.Join(edge.ErrUnavailable, st.Err),
				"wing %q is unreachable (for %.0fs); the gateway keeps redialing it", w.Name, time.Since(st.DownSince).Seconds())
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = edge.Classify(ctx.Err(), w.Name)
				return
			}
			defer func() { <-sem }()
			g, _, err := c.GetKey(ctx, id, key, w, requestID)
			caps[i], errs[i] = g.Caps, err
		}()
	}
	wg.Wait()
	return caps, errs
}

// ClassifyShard is edge.ClassifyShard for a failure talking to w's shard.
func ClassifyShard(err error, w *Wing) *edge.Error {
	return edge.ClassifyShard(err, w.Name, w.Client.Connected)
}
