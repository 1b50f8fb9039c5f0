// Package hits keeps in memory what rendering a search hit needs — a
// note's title, hash and body, the source of its snippets — so that a hit
// whose note is held is rendered with no open or read of its file. It is a
// least-recently-used cache bounded by the bytes it holds. Each entry is
// valid for one version of its note, a comparable value the caller
// chooses (the store's: the index's record of the note and the file's
// signature); a lookup with any other version misses and drops the entry.
package hits

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultBytes is the bound of a cache when none is configured.
const DefaultBytes = 64 << 20

// MaxEntryBytes is the largest body held whole, whatever the bound (an
// eighth of the bound is the other cap): a larger note is rendered from its
// file, reading only a window around the match.
const MaxEntryBytes = 256 << 10

// entryOverhead approximates what an entry costs besides its strings.
const entryOverhead = 160

// Entry is what renders a hit of one note version.
type Entry struct {
	Title string
	Hash  string // hex SHA-256 of the note's file
	Body  []byte // the note's body; never modified once cached
}

func (e Entry) size(id string) int64 {
	return int64(entryOverhead + len(id) + len(e.Title) + len(e.Hash) + len(e.Body))
}

type item[V comparable] struct {
	version V
	entry   Entry
	size    int64
}

// Stats are a cache's counters.
type Stats struct {
	Hits, Misses int64 // lookups served from memory; lookups that were not
	Bytes        int64 // estimated memory held
	Entries      int
}

// Cache holds entries keyed by note id, each valid for one version V. The
// methods of a nil *Cache do nothing and find nothing: that is the cache
// turned off.
type Cache[V comparable] struct {
	mu           sync.Mutex
	lru          *simplelru.LRU[string, item[V]]
	max, bytes   int64
	hits, misses atomic.Int64
}

// New returns a cache holding at most maxBytes (estimated); nil (off) when
// maxBytes is not positive.
func New[V comparable](maxBytes int64) *Cache[V] {
	if maxBytes <= 0 {
		return nil
	}
	c := &Cache[V]{max: maxBytes}
	// The bound is in bytes, enforced by Put; the count bound never binds.
	c.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ string, it item[V]) { c.bytes -= it.size })
	return c
}

// Fits reports whether a note of size bytes is held whole.
func (c *Cache[V]) Fits(size int64) bool {
	return c != nil && size <= min(MaxEntryBytes, c.max/8)
}

// Get returns the entry of note id when it was cached for version v. An
// entry of another version is dropped.
func (c *Cache[V]) Get(id string, v V) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.lru.Get(id)
	if ok && it.version != v {
		c.lru.Remove(id)
		ok = false
	}
	if !ok {
		c.misses.Add(1)
		return Entry{}, false
	}
	c.hits.Add(1)
	return it.entry, true
}

// Put caches e as version v of note id, evicting the least recently used
// entries beyond the bound; a body that does not fit is not cached.
func (c *Cache[V]) Put(id string, v V, e Entry) {
	if !c.Fits(int64(len(e.Body))) {
		c.Remove(id)
		return
	}
	it := item[V]{version: v, entry: e, size: e.size(id)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(id)
	c.lru.Add(id, it)
	c.bytes += it.size
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}

// Remove drops note id.
func (c *Cache[V]) Remove(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(id)
}

// Clear drops every entry.
func (c *Cache[V]) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge()
}

// Stats returns the counters; all zero for a nil cache.
func (c *Cache[V]) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bytes: c.bytes, Entries: c.lru.Len()}
}
