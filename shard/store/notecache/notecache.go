// Package notecache is the store's read cache: parsed notes for Get, least
// recently used first out, bounded by an estimate of their memory.
package notecache

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// Cache keeps values (parsed notes) keyed by a note's brain-relative path,
// each valid only for the file version S (size, mtime, inode) it was read
// from; callers put only versions they may trust. size estimates the memory
// a value holds.
type Cache[S comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	ll    list.List // of *entry, most recently used at the front
	m     map[string]*list.Element
	size  func(V) int64

	Hits atomic.Int64 // Gets answered from the cache
}

type entry[S comparable, V any] struct {
	path string
	sig  S
	v    V
	size int64
}

// New returns a cache of at most max estimated bytes.
func New[S comparable, V any](max int64, size func(V) int64) *Cache[S, V] {
	return &Cache[S, V]{max: max, m: make(map[string]*list.Element), size: size}
}

// Get returns the value cached for path if it was read from version sig.
func (c *Cache[S, V]) Get(path string, sig S) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el := c.m[path]
	if el == nil {
		return zero, false
	}
	e := el.Value.(*entry[S, V])
	if e.sig != sig {
		c.removeLocked(el)
		return zero, false
	}
	c.ll.MoveToFront(el)
	c.Hits.Add(1)
	return e.v, true
}

// Put caches v, read from version sig of path. A value larger than an
// eighth of the budget is not cached.
func (c *Cache[S, V]) Put(path string, sig S, v V) {
	size := c.size(v)
	if size > c.max/8 {
		c.Remove(path)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.m[path]; el != nil {
		c.removeLocked(el)
	}
	c.m[path] = c.ll.PushFront(&entry[S, V]{path: path, sig: sig, v: v, size: size})
	c.bytes += size
	for c.bytes > c.max {
		c.removeLocked(c.ll.Back())
	}
}

// Remove drops path from the cache.
func (c *Cache[S, V]) Remove(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.m[path]; el != nil {
		c.removeLocked(el)
	}
}

func (c *Cache[S, V]) removeLocked(el *list.Element) {
	e := c.ll.Remove(el).(*entry[S, V])
	delete(c.m, e.path)
	c.bytes -= e.size
}

// Len returns the number of cached values and their estimated bytes.
func (c *Cache[S, V]) Len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}

// Clear empties the cache.
func (c *Cache[S, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.ll.Front(); el != nil; el = c.ll.Front() {
		c.removeLocked(el)
	}
}
