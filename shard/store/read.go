package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/store/diskfile"
	"github.com/brainstem/brainstem/shard/store/refusal"
)

// Get reads a note: ref is a note id ("wing/hall/slug"), a wiki path
// ("wiki/wing/hall/slug.md") or an inbox path ("inbox/wing/name.md"). The
// returned hash is always that of the file's current bytes. Parsed notes
// are cached (Options.ReadCacheBytes) and a cached note is returned only
// while the file has the size, mtime and inode it was read with and that
// mtime was at least two seconds older than the read (a file rewritten
// within the filesystem's timestamp granularity keeps its mtime), so a read
// after an edit made anywhere returns the new bytes. If the file differs
// from the indexed version (edited behind the store's back), the index is
// refreshed for that note before Get returns. The returned Note is shared:
// callers must not modify it.
func (s *Store) Get(ctx context.Context, ref string) (*Note, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if strings.HasPrefix(ref, brain.TopInbox+"/") {
		return s.getInbox(ref)
	}
	id, abs, err := s.wikiRef(ref)
	if err != nil {
		return nil, err
	}
	key := id.String()
	n, sig, err := s.readNote(abs, key, "", id.Path(), id.Slug)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.refresh(id)
			return nil, s.goneErr(noteRef{id: id, rel: id.Path()})
		}
		return nil, s.readErr(id.String(), err)
	}
	if m := s.metaOf(key); m == nil || m.sig != sig || !trusted(m.sig, m.readAt) {
		s.refresh(id)
	}
	return n, nil
}

// readNote returns the note in the file abs, from the cache when the file
// is the version cached, else read and parsed (and cached). cacheKey is
// the note id or the inbox path.
func (s *Store) readNote(abs, id, name, path, fallback string) (*Note, fileSig, error) {
	if s.cache != nil {
		if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() && fi.Size() <= int64(s.maxNote) {
			sig := sigOf(fi)
			if n, ok := s.cache.Get(path, sig); ok {
				return n, sig, nil
			}
		}
	}
	at := s.wallNow()
	raw, sig, err := readFileLimit(abs, s.maxNote)
	if err != nil {
		return nil, fileSig{}, err
	}
	n := s.noteOf(id, name, path, raw, fallback)
	if trusted(sig, at.UnixNano()) { // a nil cache (off) keeps nothing
		s.cache.Put(path, sig, n)
	} else {
		s.cache.Remove(path)
	}
	return n, sig, nil
}

func (s *Store) getInbox(ref string) (*Note, error) {
	wing, name, err := brain.ParseInboxPath(ref)
	if err != nil {
		return nil, refusal.Invalid(err)
	}
	if wing != s.wing {
		return nil, refusal.Refuse(ErrForbidden, "%s belongs to wing %q but this shard serves wing %q", ref, wing, s.wing)
	}
	rel := brain.InboxPath(s.wing, name)
	abs, err := s.abs(rel)
	if err != nil {
		return nil, err
	}
	n, _, err := s.readNote(abs, "", name, rel, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, s.goneErr(noteRef{name: name, rel: rel})
		}
		return nil, s.readErr(rel, err)
	}
	return n, nil
}

// Hit is a search result, read from the file's current bytes.
type Hit struct {
	ID, Hall, Title, Path, Hash, Snippet string
	Score                                float64
	Flags                                []injection.Finding // the injection audit's, nil for none
}

// SearchOptions tunes Search.
type SearchOptions struct {
	Hall  string        // only notes of this hall ("" = all)
	Limit int           // max hits (<= 0 → 10)
	Stats *search.Stats // global BM25 statistics, nil → this wing's
	// SnippetRunes bounds the snippet (<= 0 → 200).
	SnippetRunes int
}

// Result is the answer of Query: the hits and the number of notes of the
// wing that match the query (and the hall), as indexed.
type Result struct {
	Hits  []Hit
	Total int
}

// Search runs a BM25 query over the wing's wiki notes; see Query.
func (s *Store) Search(ctx context.Context, query string, opt SearchOptions) ([]Hit, error) {
	r, err := s.Query(ctx, query, opt)
	return r.Hits, err
}

func (s *Store) indexOptions(opt SearchOptions) (index.Options, error) {
	iopt := index.Options{Limit: opt.Limit, Stats: opt.Stats}
	if opt.Hall != "" {
		if err := brain.ValidHall(opt.Hall); err != nil {
			return iopt, refusal.Invalid(err)
		}
		prefix := s.wing + "/" + opt.Hall + "/"
		iopt.Filter = func(id string) bool { return strings.HasPrefix(id, prefix) }
	}
	return iopt, nil
}

// Query runs a BM25 query over the wing's wiki notes. Each hit's title,
// hash and snippet are those of the file as it is now: the indexed version
// when the file still has its size, mtime and inode (the snippet is then
// read from a window around the first match, whatever the note's size),
// else the file is read and the index repaired. A hit whose file has
// vanished is dropped.
func (s *Store) Query(ctx context.Context, query string, opt SearchOptions) (Result, error) {
	if err := s.checkOpen(); err != nil {
		return Result{}, err
	}
	iopt, err := s.indexOptions(opt)
	if err != nil {
		return Result{}, err
	}
	r, err := s.ix.QueryTermsContext(ctx, search.Terms(query), iopt)
	if err != nil {
		return Result{}, fmt.Errorf("store: %w", err)
	}
	hits, err := s.render(ctx, r.Hits, opt.SnippetRunes)
	return Result{Hits: hits, Total: r.Total}, err
}

// render reads the title, hash and snippet of each index hit.
func (s *Store) render(ctx context.Context, hits []index.Hit, runes int) ([]Hit, error) {
	if runes <= 0 {
		runes = 200
	}
	out := make([]Hit, 0, len(hits))
	halls := map[string]string{} // hall → its directory, checked once per call (verifiedHallDir)
	for _, h := range hits {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		id, err := brain.ParseID(h.ID)
		if err != nil {
			continue
		}
		dir, ok := halls[id.Hall]
		if !ok {
			if dir, err = s.verifiedHallDir(id.Wing, id.Hall); err != nil {
				dir = ""
			}
			halls[id.Hall] = dir
		}
		if dir == "" {
			continue
		}
		// The file itself is opened with O_NOFOLLOW: no link is followed.
		if hit, ok := s.renderHit(h, id, filepath.Join(dir, id.Slug+brain.NoteExt), runes); ok {
			out = append(out, hit)
		}
	}
	return out, nil
}

// renderHit renders one index hit from its file abs; ok is false when the
// file is gone or unreadable (the index is then repaired).
func (s *Store) renderHit(h index.Hit, id brain.ID, abs string, runes int) (Hit, bool) {
	if hit, ok := s.cachedHit(h, id, abs, runes); ok {
		return hit, true
	}
	at := s.wallNow()
	f, fi, err := diskfile.Open(abs, s.maxNote)
	if err != nil {
		s.refresh(id)
		return Hit{}, false
	}
	defer f.Close()
	sig := sigOf(fi)
	hit := Hit{ID: h.ID, Hall: id.Hall, Path: id.Path(), Score: h.Score}
	if m := s.metaOf(h.ID); m != nil && m.sig == sig && trusted(m.sig, m.readAt) {
		if hit, ok := s.cacheHit(f, fi.Size(), h, id, m, runes); ok {
			return hit, true
		}
		// The indexed version: no need to read more than the snippet.
		size := fi.Size() - int64(m.bodyOff)
		snip, err := index.SnippetAt(io.NewSectionReader(f, int64(m.bodyOff), size), size, int64(h.Offset), runes)
		if err == nil {
			hit.Title, hit.Hash, hit.Snippet, hit.Flags = m.title, hex.EncodeToString(m.hash[:]), snip, m.flags
			return hit, true
		}
	}
	s.wholeReads.Add(1)
	raw, err := diskfile.ReadAll(f, fi.Size(), s.maxNote)
	if err != nil {
		s.refresh(id)
		return Hit{}, false
	}
	sum := sha256.Sum256(raw)
	if m := s.metaOf(h.ID); m == nil || m.sig != sig || m.hash != sum {
		s.refresh(id)
	} else {
		s.retrust(h.ID, m, at.UnixNano())
	}
	p := parseNote(raw, id.Slug)
	hit.Title, hit.Hash, hit.Snippet, hit.Flags = p.title, hex.EncodeToString(sum[:]), index.Snippet(p.body, h.Terms, runes), injection.Scan(raw)
	return hit, true
}

// Entry is one note of a listing.
type Entry struct {
	ID, Hall, Title, Path, UpdatedAt string
}

// List returns up to limit notes ordered by id, of one hall or all (""),
// starting after the cursor returned by a previous call ("" = from the
// start). next is "" when there are no more notes.
func (s *Store) List(hall, cursor string, limit int) (entries []Entry, next string, err error) {
	if err := s.checkOpen(); err != nil {
		return nil, "", err
	}
	if hall != "" {
		if err := brain.ValidHall(hall); err != nil {
			return nil, "", refusal.Invalid(err)
		}
	}
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !strings.HasPrefix(string(b), s.wing+"/") {
			return nil, "", refusal.Refuse(ErrInvalid, "cursor %q is not a cursor of a listing of wing %q; start again without a cursor", cursor, s.wing)
		}
		after = string(b)
	}
	if limit <= 0 {
		limit = 50
	}
	prefix := s.wing + "/"
	if hall != "" {
		prefix += hall + "/"
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	start := max(after, prefix)
	i := sort.SearchStrings(s.ids, start)
	if i < len(s.ids) && s.ids[i] == after {
		i++
	}
	entries = []Entry{}
	for ; i < len(s.ids) && strings.HasPrefix(s.ids[i], prefix); i++ {
		if len(entries) == limit {
			next = base64.RawURLEncoding.EncodeToString([]byte(entries[len(entries)-1].ID))
			break
		}
		id := s.ids[i]
		m := s.notes[id]
		entries = append(entries, Entry{ID: id, Hall: m.hall, Title: m.title, Path: "wiki/" + id + ".md", UpdatedAt: m.updatedAt})
	}
	return entries, next, nil
}

// Links of a note.
type Links struct {
	ID        string
	Outbound  []string // every link, first appearance order
	Backlinks []string // notes of this wing linking here, sorted
	Tunnels   []string // outbound links into other wings
}

// Links returns a note's outbound links, backlinks and tunnels. Tunnels
// coming in from other wings are not known to one wing's store.
func (s *Store) Links(id string) (Links, error) {
	if err := s.checkOpen(); err != nil {
		return Links{}, err
	}
	pid, abs, err := s.wikiRef(id)
	if err != nil {
		return Links{}, err
	}
	key := pid.String()
	// Never answer from a stale view: if the file changed (or appeared, or
	// vanished) since it was indexed, refresh the note first.
	fi, statErr := os.Lstat(abs)
	old, known := s.sigOfNote(key)
	if (statErr == nil) != known || (statErr == nil && sigOf(fi) != old) {
		s.refresh(pid)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.notes[key]
	if m == nil {
		return Links{}, refusal.Refuse(ErrNotFound, "no note %s in wing %q", key, s.wing)
	}
	l := Links{ID: key, Outbound: append([]string{}, m.links...), Backlinks: slices.AppendSeq([]string{}, maps.Keys(s.backlinks[key])), Tunnels: s.tunnelsOf(m.links)}
	slices.Sort(l.Backlinks)
	return l, nil
}

// LinkersOf returns the notes of this wing that link to the note ref, a
// note id of any wing, sorted: for a note of another wing, the links into
// it from here (which that wing's store cannot know). The note need not
// exist: links to a moved or archived note still count.
func (s *Store) LinkersOf(ref string) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	id, err := brain.ParseID(ref)
	if err != nil {
		return nil, refusal.Invalid(err)
	}
	return s.linkersOf(id.String()), nil
}

// Pending is an inbox note waiting for a curator.
type Pending struct {
	Name, Path, Title, Hall, CreatedBy, CreatedAt, Excerpt string
	Flags                                                  []injection.Finding // the injection audit's, nil for none
	modTime                                                time.Time
	at                                                     time.Time
}

// PendingExcerptRunes is the length of Pending.Excerpt.
const PendingExcerptRunes = 200

// Pending lists the wing's inbox, oldest first (created_at, then file
// mtime, then name), at most limit entries (<= 0 → all). A note without a
// parseable created_at counts as created at its mtime.
func (s *Store) Pending(ctx context.Context, limit int) ([]Pending, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	dir, err := s.dirOf(brain.WingDir(brain.TopInbox, s.wing))
	if err != nil {
		return nil, fmt.Errorf("store: list inbox: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: list inbox: %w", err)
	}
	out := []Pending{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), brain.NoteExt)
		if !ok || strings.HasPrefix(name, ".") || !e.Type().IsRegular() || brain.ValidInboxName(name) != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		rel := brain.InboxPath(s.wing, name)
		raw, sig, err := readFileLimit(filepath.Join(dir, e.Name()), s.maxNote)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("store: skipping inbox note", "path", rel, "err", err)
			}
			continue
		}
		p := parseNote(raw, name)
		get := func(k string) string { return fieldValue(p.fields, k) }
		pn := Pending{Name: name, Path: rel, Title: p.title, Hall: get(KeyHall), CreatedBy: get(KeyCreatedBy),
			CreatedAt: get(KeyCreatedAt), Excerpt: excerpt(p.body, PendingExcerptRunes), Flags: injection.Scan(raw), modTime: time.Unix(0, sig.mtime)}
		pn.at = pn.modTime
		if t, err := time.Parse(time.RFC3339, pn.CreatedAt); err == nil {
			pn.at = t
		}
		out = append(out, pn)
	}
	slices.SortFunc(out, func(a, b Pending) int {
		return cmp.Or(a.at.Compare(b.at), a.modTime.Compare(b.modTime), strings.Compare(a.Name, b.Name))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
