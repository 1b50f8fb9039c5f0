package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/store/hits"
)

// hitVersion is what a cached hit is valid for: the index's record of the
// note (a meta is replaced, never modified, whenever the store, its
// watcher or a rescan sees the note change) and the signature (size,
// mtime, inode) the file shows now. Entries are put only for a version
// read outside the racy window (trusted) whose bytes hash to the indexed
// hash, so a lookup with the meta in force and the file's lstat is the
// read cache's freshness rule with no open and no read.
type hitVersion struct {
	m   *meta
	sig fileSig
}

// cachedHit renders h from the hit cache; ok is false when the note is
// not cached for its indexed version or the file (lstat, no open) no
// longer shows that version.
func (s *Store) cachedHit(h index.Hit, id brain.ID, abs string, runes int) (Hit, bool) {
	m := s.metaOf(h.ID)
	if s.hits == nil || m == nil {
		return Hit{}, false
	}
	var sig fileSig // none when the file is gone or not a regular file
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() {
		sig = sigOf(fi)
	}
	e, ok := s.hits.Get(h.ID, hitVersion{m, sig})
	if !ok {
		return Hit{}, false
	}
	return hitOf(h, id, m, e, runes)
}

// cacheHit reads the whole file f (size bytes) of the trusted indexed
// version m, caches it when its bytes are those indexed and renders h from
// it; ok is false when the note is too large to cache (the caller then
// reads a window) or its bytes are not those indexed.
func (s *Store) cacheHit(f *os.File, size int64, h index.Hit, id brain.ID, m *meta, runes int) (Hit, bool) {
	if !s.hits.Fits(size - int64(m.bodyOff)) {
		return Hit{}, false
	}
	raw := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), raw); err != nil || sha256.Sum256(raw) != m.hash {
		return Hit{}, false
	}
	e := hits.Entry{Title: m.title, Hash: hex.EncodeToString(m.hash[:]), Body: bytes.Clone(raw[m.bodyOff:])}
	s.hits.Put(h.ID, hitVersion{m, m.sig}, e)
	return hitOf(h, id, m, e, runes)
}

// hitOf renders h from the cached entry e of version m of note id.
func hitOf(h index.Hit, id brain.ID, m *meta, e hits.Entry, runes int) (Hit, bool) {
	snip, err := index.SnippetAt(bytes.NewReader(e.Body), int64(len(e.Body)), int64(h.Offset), runes)
	if err != nil {
		return Hit{}, false
	}
	return Hit{ID: h.ID, Hall: id.Hall, Path: id.Path(), Score: h.Score, Title: e.Title, Hash: e.Hash, Snippet: snip, Flags: m.flags}, true
}

// HitCacheStats returns the hit cache's counters (zero when it is off).
func (s *Store) HitCacheStats() hits.Stats {
	return s.hits.Stats()
}
