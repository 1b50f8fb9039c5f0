package store

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// noteCache keeps parsed notes for Get, least recently used first out,
// bounded by an estimate of their memory. An entry is keyed by the note's
// brain-relative path and valid only for the file version (size, mtime,
// inode) it was read from; callers put only versions they may trust (see
// trusted).
type noteCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	ll    list.List // of *cacheEntry, most recently used at the front
	m     map[string]*list.Element

	hits, misses atomic.Int64
}

type cacheEntry struct {
	path string
	sig  fileSig
	note *Note
	size int64
}

func newNoteCache(max int64) *noteCache {
	return &noteCache{max: max, m: make(map[string]*list.Element)}
}

// get returns the note cached for path if it was read from version sig.
func (c *noteCache) get(path string, sig fileSig) *Note {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.m[path]
	if el == nil {
		c.misses.Add(1)
		return nil
	}
	e := el.Value.(*cacheEntry)
	if e.sig != sig {
		c.removeLocked(el)
		c.misses.Add(1)
		return nil
	}
	c.ll.MoveToFront(el)
	c.hits.Add(1)
	return e.note
}

// put caches n, read from version sig of path. A note larger than an
// eighth of the budget is not cached.
func (c *noteCache) put(path string, sig fileSig, n *Note) {
	size := noteSize(n)
	if size > c.max/8 {
		c.remove(path)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.m[path]; el != nil {
		c.removeLocked(el)
	}
	c.m[path] = c.ll.PushFront(&cacheEntry{path: path, sig: sig, note: n, size: size})
	c.bytes += size
	for c.bytes > c.max {
		c.removeLocked(c.ll.Back())
	}
}

// remove drops path from the cache.
func (c *noteCache) remove(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.m[path]; el != nil {
		c.removeLocked(el)
	}
}

func (c *noteCache) removeLocked(el *list.Element) {
	e := c.ll.Remove(el).(*cacheEntry)
	delete(c.m, e.path)
	c.bytes -= e.size
}

// len returns the number of cached notes and their estimated bytes.
func (c *noteCache) len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}

// noteSize estimates the memory a cached note holds.
func noteSize(n *Note) int64 {
	size := int64(256 + len(n.ID) + len(n.Name) + len(n.Path) + len(n.Hash) + len(n.Title) + len(n.Body) + len(n.Raw))
	for _, f := range n.Fields {
		size += int64(64 + len(f.Key) + len(f.Value))
		for _, v := range f.List {
			size += int64(16 + len(v))
		}
	}
	return size
}

// clear empties the cache.
func (c *noteCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.ll.Front(); el != nil; el = c.ll.Front() {
		c.removeLocked(el)
	}
}
