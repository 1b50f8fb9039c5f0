// Package notecache is the store's one memory cache of note versions:
// least recently used first out, bounded by an estimate of the bytes it
// holds, each value valid for one version of its note, a comparable value
// the caller chooses (a lookup with any other version misses and drops
// the value). The store keeps its parsed notes for Get in one, and
// package hits what renders a search hit.
package notecache

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Stats are a cache's counters.
type Stats struct {
	Hits, Misses int64 // lookups served from memory; lookups that were not
	Bytes        int64 // estimated memory held
	Entries      int
}

type item[S comparable, V any] struct {
	version S
	v       V
	size    int64
}

// Cache keeps values keyed by a note's id or path, each valid for one
// version S. The methods of a nil *Cache do nothing and find nothing: that
// is the cache turned off.
type Cache[S comparable, V any] struct {
	mu            sync.Mutex
	lru           *simplelru.LRU[string, item[S, V]]
	max, maxEntry int64
	bytes         int64
	size          func(key string, v V) (bytes, fit int64)
	hits, misses  atomic.Int64
}

// New returns a cache holding at most maxBytes (estimated); nil (off) when
// maxBytes is not positive. size estimates what a value costs, and the
// measure of it that must fit (see Fits) for it to be cached.
func New[S comparable, V any](maxBytes, maxEntry int64, size func(key string, v V) (bytes, fit int64)) *Cache[S, V] {
	if maxBytes <= 0 {
		return nil
	}
	c := &Cache[S, V]{max: maxBytes, maxEntry: maxEntry, size: size}
	// The bound is in bytes, enforced by Put; the count bound never binds.
	c.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ string, it item[S, V]) { c.bytes -= it.size })
	return c
}

// Fits reports whether a value of measure n is cached: at most maxEntry
// and an eighth of the bound.
func (c *Cache[S, V]) Fits(n int64) bool {
	return c != nil && n <= min(c.maxEntry, c.max/8)
}

// Get returns the value of key when it was cached for version v. A value
// of another version is dropped.
func (c *Cache[S, V]) Get(key string, v S) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.lru.Get(key)
	if ok && it.version != v {
		c.lru.Remove(key)
		ok = false
	}
	if !ok {
		c.misses.Add(1)
		return zero, false
	}
	c.hits.Add(1)
	return it.v, true
}

// Put caches val as version v of key, evicting the least recently used
// values beyond the bound; a value that does not fit is not cached.
func (c *Cache[S, V]) Put(key string, v S, val V) {
	if c == nil {
		return
	}
	size, fit := c.size(key, val)
	if !c.Fits(fit) {
		c.Remove(key)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key)
	c.lru.Add(key, item[S, V]{version: v, v: val, size: size})
	c.bytes += size
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}

// Remove drops key.
func (c *Cache[S, V]) Remove(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key)
}

// Clear drops every value.
func (c *Cache[S, V]) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge()
}

// Stats returns the counters; all zero for a nil cache.
func (c *Cache[S, V]) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bytes: c.bytes, Entries: c.lru.Len()}
}
