// Package hits keeps in memory what rendering a search hit needs — a
// note's title, hash and body, the source of its snippets — so that a hit
// whose note is held is rendered with no open or read of its file. It is a
// notecache.Cache: least recently used out first, bounded by the bytes it
// holds. Each entry is
// valid for one version of its note, a comparable value the caller
// chooses (the store's: the index's record of the note and the file's
// signature); a lookup with any other version misses and drops the entry.
package hits

import "github.com/brainstem/brainstem/shard/store/notecache"

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

// size is what an entry costs, and the body that must fit.
func size(id string, e Entry) (bytes, fit int64) {
	return int64(entryOverhead + len(id) + len(e.Title) + len(e.Hash) + len(e.Body)), int64(len(e.Body))
}

// Stats are a cache's counters.
type Stats = notecache.Stats

// Cache holds entries keyed by note id, each valid for one version V
// (notecache's cache). The methods of a nil *Cache do nothing and find
// nothing: that is the cache turned off. Fits reports whether a body of
// that many bytes is held whole.
type Cache[V comparable] = notecache.Cache[V, Entry]

// New returns a cache holding at most maxBytes (estimated); nil (off) when
// maxBytes is not positive.
func New[V comparable](maxBytes int64) *Cache[V] {
	return notecache.New[V](maxBytes, MaxEntryBytes, size)
}
