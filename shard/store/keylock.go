package store

import "sync"

// keyLock is a keyed mutex: holders of the same key exclude each other,
// different keys proceed in parallel. Entries are reference counted and
// removed when unused, so the map stays as small as the set of keys in use.
type keyLock struct {
	mu sync.Mutex
	m  map[string]*keyEntry
}

type keyEntry struct {
	mu   sync.Mutex
	refs int
}

// lock acquires key and returns the function that releases it.
func (k *keyLock) lock(key string) (unlock func()) {
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
