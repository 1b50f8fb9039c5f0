package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
)

// grant is what the gateway holds for one (email, wing): a shard token and
// the capabilities the shard put in it, or a remembered refusal.
type grant struct {
	token  string
	caps   auth.Caps
	expiry time.Time // never later than the SSO token's expiry (the shard caps it at NotAfter)
	denied bool      // the wing's policy does not admit the caller; remembered until expiry
}

func (g grant) usable(now time.Time) bool { return !g.expiry.IsZero() && now.Before(g.expiry) }

// session holds one email's grants, indexed by wing index. It lives only in
// memory.
type session struct {
	mu      sync.Mutex
	grants  []grant
	renewed atomic.Int64 // monotonic-ish unix nanos of the last idle-TTL renewal
}

// sessionMetrics are the counters the cache reports to.
type sessionMetrics interface {
	cacheHit()
	cacheMiss()
	minted(wing, outcome string)
}

// sessionCache is the email-keyed cache of shard tokens. An entry is dropped
// after idleTTL without use or when the cache is full (LRU); a grant inside
// is used only until its expiry, which never exceeds the SSO token's.
// Concurrent first calls for one (email, wing) share one mint.
type sessionCache struct {
	lru         *expirable.LRU[string, *session]
	createMu    sync.Mutex // serialises creating an email's entry
	flight      singleflight.Group
	wings       []*wing
	now         func() time.Time
	idleTTL     time.Duration
	denyTTL     time.Duration
	mintTimeout time.Duration
	metrics     sessionMetrics
	log         *slog.Logger
	// onJoin, when set (tests only), is called each time a lookup has joined
	// a mint flight, so a test can wait until every racing caller is in.
	onJoin func()
}

// expiryMargin: a grant that expires sooner than this is re-minted rather
// than sent, so it does not expire in flight.
const expiryMargin = 5 * time.Second

func newSessionCache(wings []*wing, maxEntries int, idleTTL, denyTTL, mintTimeout time.Duration, now func() time.Time, m sessionMetrics, log *slog.Logger) *sessionCache {
	return &sessionCache{
		lru:         expirable.NewLRU[string, *session](maxEntries, nil, idleTTL),
		wings:       wings,
		now:         now,
		idleTTL:     idleTTL,
		denyTTL:     denyTTL,
		mintTimeout: mintTimeout,
		metrics:     m,
		log:         log,
	}
}

// Len is the number of cached emails.
func (c *sessionCache) Len() int { return c.lru.Len() }

// session returns the email's entry, creating it, and renews its idle TTL
// (expirable.LRU's Get does not).
func (c *sessionCache) session(email string) *session {
	if s, ok := c.lru.Get(email); ok {
		c.renew(email, s)
		return s
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if s, ok := c.lru.Get(email); ok {
		return s
	}
	s := &session{grants: make([]grant, len(c.wings))}
	s.renewed.Store(time.Now().UnixNano())
	c.lru.Add(email, s)
	return s
}

// renew re-adds the entry (resetting its TTL) at most a few times per idle
// period, so a busy email is not dropped and the hot path stays cheap.
func (c *sessionCache) renew(email string, s *session) {
	now := time.Now().UnixNano()
	last := s.renewed.Load()
	if time.Duration(now-last) < c.idleTTL/8 {
		return
	}
	if s.renewed.CompareAndSwap(last, now) {
		c.lru.Add(email, s)
	}
}

// cached returns a usable grant without minting.
func (c *sessionCache) cached(email string, w *wing) (grant, bool) {
	s := c.session(email)
	now := c.now()
	s.mu.Lock()
	g := s.grants[w.idx]
	if !g.expiry.IsZero() && !now.Before(g.expiry) {
		s.grants[w.idx] = grant{} // drop tokens past expiry
	}
	s.mu.Unlock()
	if g.denied && g.usable(now) {
		return g, true
	}
	if !g.denied && g.token != "" && g.expiry.Sub(now) > expiryMargin {
		return g, true
	}
	return grant{}, false
}

// get returns the caller's grant for a wing, minting on a miss. fresh
// reports whether it was minted for this call (shared mints count). A
// remembered or new refusal is an *Error with CodeForbidden.
func (c *sessionCache) get(ctx context.Context, id auth.Identity, w *wing, requestID string) (g grant, fresh bool, err error) {
	if g, ok := c.cached(id.Email, w); ok {
		c.metrics.cacheHit()
		if g.denied {
			return grant{}, false, deniedError(w.name)
		}
		return g, false, nil
	}
	g, err = c.mint(ctx, id, w, requestID)
	if err != nil {
		return grant{}, true, err
	}
	return g, true, nil
}

// invalidate drops the caller's grant for a wing if it still holds token
// (a concurrent re-mint's newer token is kept).
func (c *sessionCache) invalidate(email string, w *wing, token string) {
	s, ok := c.lru.Peek(email)
	if !ok {
		return
	}
	s.mu.Lock()
	if s.grants[w.idx].token == token {
		s.grants[w.idx] = grant{}
	}
	s.mu.Unlock()
}

func deniedError(wing string) *Error {
	return newError(CodeForbidden, ErrForbidden, "the policy of wing %q does not admit you; ask its curators for access", wing)
}

type mintResult struct {
	g   grant
	err error
}

// mint asks the wing's shard for a token, sharing one request among all
// concurrent callers for the same (email, wing). The request runs on a
// detached context with its own timeout, so one impatient caller does not
// fail the others; each caller still stops waiting when its own ctx ends.
func (c *sessionCache) mint(ctx context.Context, id auth.Identity, w *wing, requestID string) (grant, error) {
	key := w.name + "\x00" + id.Email
	ch := c.flight.DoChan(key, func() (any, error) {
		// A flight that just finished may have stored a grant between this
		// caller's cache miss and its joining: use it rather than mint again.
		if g, ok := c.cached(id.Email, w); ok {
			if g.denied {
				return mintResult{err: deniedError(w.name)}, nil
			}
			return mintResult{g: g}, nil
		}
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.mintTimeout)
		defer cancel()
		mreq := &proto.MintRequest{
			RequestID: requestID,
			Email:     id.Email,
			Groups:    id.Groups,
			NotAfter:  id.Expiry,
		}
		resp, err := w.client.Mint(mctx, mreq)
		if errors.Is(err, proto.ErrConnectionLost) && proto.CodeOf(err) == 0 {
			// A mint changes nothing on the shard: ask again (once).
			resp, err = w.client.Mint(mctx, mreq)
		}
		now := c.now()
		if err != nil {
			switch proto.CodeOf(err) {
			case proto.CodeForbidden:
				c.metrics.minted(w.name, "forbidden")
				c.store(id.Email, w, grant{denied: true, expiry: now.Add(c.denyTTL)})
				return mintResult{err: deniedError(w.name)}, nil
			case proto.CodeWrongRole:
				// Not this user's fault: the shard refuses every mint from
				// this gateway. Not remembered per user; /readyz reports it.
				c.metrics.minted(w.name, "wrong_role")
				msg := err.Error()
				if prev := w.mintRefused.Swap(&msg); prev == nil {
					c.log.Error("the wing's shard refuses this gateway's mints: the gateway is not ready until an operator fixes its certificate",
						"wing", w.name, "err", err)
				}
				return mintResult{err: classify(err, w.name)}, nil
			}
			e := classifyShard(err, w)
			c.metrics.minted(w.name, e.Code)
			c.log.Warn("mint failed", "wing", w.name, "email", id.Email, "request_id", requestID, "err", err)
			return mintResult{err: e}, nil
		}
		if w.mintRefused.Swap(nil) != nil {
			c.log.Info("the wing's shard accepts this gateway's mints again", "wing", w.name)
		}
		w.markReached()
		caps, perr := auth.ParseCaps(resp.Caps)
		if perr != nil || resp.Token == "" {
			c.metrics.minted(w.name, CodeInternal)
			return mintResult{err: newError(CodeInternal, errors.Join(ErrUnavailable, perr), "wing %q answered an unusable mint (caps %q)", w.name, resp.Caps)}, nil
		}
		if caps == 0 {
			c.metrics.minted(w.name, "forbidden")
			c.store(id.Email, w, grant{denied: true, expiry: now.Add(c.denyTTL)})
			return mintResult{err: deniedError(w.name)}, nil
		}
		exp := resp.Expiry
		if !id.Expiry.IsZero() && exp.After(id.Expiry) {
			exp = id.Expiry // never outlive the SSO token, whatever the shard says
		}
		g := grant{token: resp.Token, caps: caps, expiry: exp}
		c.metrics.minted(w.name, "ok")
		c.store(id.Email, w, g)
		return mintResult{g: g}, nil
	})
	// The caller has joined the flight here (DoChan registers it synchronously).
	if c.onJoin != nil {
		c.onJoin()
	}
	c.metrics.cacheMiss()
	select {
	case r := <-ch:
		mr := r.Val.(mintResult)
		return mr.g, mr.err
	case <-ctx.Done():
		return grant{}, classifyShard(ctx.Err(), w)
	}
}

func (c *sessionCache) store(email string, w *wing, g grant) {
	s := c.session(email)
	s.mu.Lock()
	s.grants[w.idx] = g
	s.mu.Unlock()
}

// capsAll returns the caller's capabilities in every wing, minting where
// needed (concurrently, at most limit at once). A wing that cannot be
// reached (or is known to be down) or refuses the
// caller has zero caps; errs records why.
func (c *sessionCache) capsAll(ctx context.Context, id auth.Identity, requestID string, limit int) (caps []auth.Caps, errs []error) {
	caps = make([]auth.Caps, len(c.wings))
	errs = make([]error, len(c.wings))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, w := range c.wings {
		if g, ok := c.cached(id.Email, w); ok {
			c.metrics.cacheHit()
			if g.denied {
				errs[i] = deniedError(w.name)
			} else {
				caps[i] = g.caps
			}
			continue
		}
		if st := w.client.State(); st.Down {
			// Listing tools, brain_wings and cross-wing search do not wait
			// for a wing known to be unreachable.
			errs[i] = newError(CodeUnavailable, errors.Join(ErrUnavailable, st.Err),
				"wing %q is unreachable (for %.0fs); the gateway keeps redialing it", w.name, time.Since(st.DownSince).Seconds())
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = classify(ctx.Err(), w.name)
				return
			}
			defer func() { <-sem }()
			g, _, err := c.get(ctx, id, w, requestID)
			if err != nil {
				errs[i] = err
				return
			}
			caps[i] = g.caps
		}()
	}
	wg.Wait()
	return caps, errs
}
