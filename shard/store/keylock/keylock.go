// Package keylock is a keyed mutex: holders of the same key exclude each
// other, different keys proceed in parallel. The store locks one note, one
// inbox name or one session log at a time with it.
package keylock

import "sync"

// Set is a keyed mutex (its zero value is ready): holders of the same key
// exclude each other, different keys proceed in parallel. Entries are reference counted and
// removed when unused, so the map stays as small as the set of keys in use.
type Set struct {
	mu sync.Mutex
	m  map[string]*keyEntry
}

type keyEntry struct {
	mu   sync.Mutex
	refs int
}

// Lock acquires key and returns the function that releases it.
func (k *Set) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyEntry)
	}
	e := k.m[key]
	if e == nil {
		e = &keyEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
