package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/layout"
)

// The store's error sentinels. Every error the store returns for a caller's
// mistake wraps exactly one of them; anything else is an internal failure.
var (
	ErrNotFound  = errors.New("store: not found")
	ErrExists    = errors.New("store: already exists")
	ErrConflict  = errors.New("store: conflict")
	ErrInvalid   = errors.New("store: invalid argument")
	ErrTooLarge  = errors.New("store: too large")
	ErrForbidden = errors.New("store: forbidden")
	ErrClosed    = errors.New("store: closed")
)

// Defaults of Options.
const (
	DefaultMaxNoteBytes   = 1 << 20
	DefaultRescanInterval = 2 * time.Second
)

// Options configures Open.
type Options struct {
	// Root is the brain directory (it must exist). Wing is the wing this
	// store serves (layout.ValidWing).
	Root, Wing string
	// Logger receives warnings about files the store skips and rescanner
	// failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock used for created_at, updated_at, promoted_at and
	// session lines; nil means time.Now.
	Now func() time.Time
	// MaxNoteBytes bounds a note file read or written (0 → 1 MiB). Larger
	// files are skipped by scans (with a warning) and refused by Get.
	MaxNoteBytes int
	// RescanInterval is how often the background rescanner polls the wing's
	// files for changes made behind the store's back (0 → 2s). A negative
	// value disables the rescanner; Rescan still works.
	RescanInterval time.Duration
	// Progress, if set, is called while Open loads the notes.
	Progress func(done, total int)
	// IndexDelay chooses how _index.md follows changes. 0 (the default):
	// write-through, a write, update or promotion returns after _index.md
	// has been rewritten durably (concurrent writers share one rewrite).
	// Its cost grows with the wing (about 100 bytes per note, rewritten and
	// fsynced), e.g. ~10 MB per new note at 100,000 notes. A positive value:
	// write-behind, a background writer rewrites _index.md after changes at
	// most once per IndexDelay; Rescan and Close bring it up to date. The
	// notes themselves are durable before any call returns either way, and
	// Open regenerates _index.md from them.
	IndexDelay time.Duration

	afterPass func() // test hook: called after each background rescan pass
}

// Store is one wing of a brain directory. It is safe for concurrent use.
type Store struct {
	root, wing string
	log        *slog.Logger
	now        func() time.Time
	maxNote    int

	ix     *index.Index
	locks  keyLock    // per-note, per-inbox-name and per-session locks
	scanMu sync.Mutex // one rescan at a time

	mu        sync.RWMutex // guards the fields below
	notes     map[string]*meta
	ids       []string                       // sorted ids of notes
	backlinks map[string]map[string]struct{} // target id → ids of notes of this wing linking to it
	tocGen    uint64                         // bumped whenever _index.md's content changes

	tocMu   sync.Mutex // guards the fields below; held while writing _index.md
	tocDone uint64     // tocGen the file on disk reflects
	tocSig  fileSig    // signature of the _index.md we wrote last

	sessMu    sync.Mutex
	sessLines map[string]sessCount // session → line count at a known size

	tocDelay time.Duration // > 0: _index.md is written behind (see Options.IndexDelay)
	tocKick  chan struct{} // wakes tocLoop

	closed atomic.Bool
	cancel context.CancelFunc
	wg     sync.WaitGroup // background loops
}

// meta is what the store keeps in memory about one wiki note.
type meta struct {
	hall      string
	title     string
	updatedAt string   // updated_at, else promoted_at, else created_at, else file mtime
	links     []string // outbound ids, first appearance order, deduplicated
	sig       fileSig
}

// Open opens (creating its directories as needed) the wing opt.Wing of the
// brain at opt.Root, removes temporary files left by a crash, loads and
// indexes every note, writes _index.md and starts the rescanner. Close
// stops it.
func Open(ctx context.Context, opt Options) (*Store, error) {
	if err := layout.ValidWing(opt.Wing); err != nil {
		return nil, fmt.Errorf("store: open: %w: %w", ErrInvalid, err)
	}
	fi, err := os.Stat(opt.Root)
	if err != nil {
		return nil, fmt.Errorf("store: open brain directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("store: open: brain root %s is not a directory: %w", opt.Root, ErrInvalid)
	}
	root, err := filepath.Abs(opt.Root)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	s := &Store{
		root:      root,
		wing:      opt.Wing,
		log:       opt.Logger,
		now:       opt.Now,
		maxNote:   opt.MaxNoteBytes,
		tocDelay:  opt.IndexDelay,
		ix:        index.New(),
		notes:     make(map[string]*meta),
		backlinks: make(map[string]map[string]struct{}),
		sessLines: make(map[string]sessCount),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxNote <= 0 {
		s.maxNote = DefaultMaxNoteBytes
	}
	if err := s.prepareDirs(); err != nil {
		return nil, err
	}
	if err := s.load(ctx, opt.Progress); err != nil {
		return nil, err
	}
	if err := s.syncTOC(true); err != nil {
		return nil, err
	}
	interval := opt.RescanInterval
	if interval == 0 {
		interval = DefaultRescanInterval
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if interval > 0 {
		s.wg.Add(1)
		go s.rescanLoop(rctx, interval, opt.afterPass)
	}
	if s.tocDelay > 0 {
		s.tocKick = make(chan struct{}, 1)
		s.wg.Add(1)
		go s.tocLoop(rctx)
	}
	return s, nil
}

// Close stops the rescanner and, with a write-behind _index.md, writes it
// one last time. Calls made after Close fail with ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	if s.tocDelay > 0 {
		return s.syncTOC(false)
	}
	return nil
}

// Wing returns the wing this store serves.
func (s *Store) Wing() string { return s.wing }

// Root returns the absolute brain directory.
func (s *Store) Root() string { return s.root }

// Len returns the number of wiki notes indexed.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.notes)
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// abs resolves a brain-relative slash path safely inside the brain.
func (s *Store) abs(rel string) (string, error) {
	p, err := layout.Resolve(s.root, rel)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return p, nil
}

// prepareDirs creates the wing's directories and removes leftover
// temporary files from them.
func (s *Store) prepareDirs() error {
	dirs := []string{"wiki", "wiki/" + s.wing}
	for _, h := range layout.Halls() {
		dirs = append(dirs, "wiki/"+s.wing+"/"+h)
	}
	dirs = append(dirs, "inbox", "inbox/"+s.wing, "sessions", "sessions/"+s.wing)
	for _, rel := range dirs {
		// Every segment is a constant or a validated name; Lstat below
		// refuses a symlink in place of any of these directories.
		p := filepath.Join(s.root, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("store: open: create %s: %w", rel, err)
			}
			if err := syncDir(filepath.Dir(p)); err != nil {
				return fmt.Errorf("store: open: sync %s: %w", rel, err)
			}
		case err != nil:
			return fmt.Errorf("store: open: %w", err)
		case !fi.IsDir():
			return fmt.Errorf("store: open: %s exists and is not a directory: %w", rel, ErrInvalid)
		}
		n, err := removeTemps(p)
		if err != nil {
			return fmt.Errorf("store: open: remove temporary files in %s: %w", rel, err)
		}
		if n > 0 {
			s.log.Info("store: removed temporary files left by an interrupted write", "dir", rel, "count", n)
		}
	}
	return nil
}

// hallDir returns the absolute directory of a hall of this wing.
func (s *Store) hallDir(hall string) (string, error) {
	return s.dirOf(layout.HallDir(s.wing, hall))
}

// dirOf returns the absolute path of one of the wing's directories (rel is
// built from constants and validated names), refusing one that has been
// replaced by a symlink or a file.
func (s *Store) dirOf(rel string) (string, error) {
	p := filepath.Join(s.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory (symlinks are not followed): %w", rel, ErrInvalid)
	}
	return p, nil
}

// noteFile is a note file found by a directory scan.
type noteFile struct {
	id  layout.ID
	dir string // absolute hall directory (shared by the hall's files)
	sig fileSig
}

// path returns the file's absolute path.
func (f noteFile) path() string { return filepath.Join(f.dir, f.id.Slug+layout.NoteExt) }

// scanFiles lists the note files of every hall with their signatures.
// Temporary files, non-regular files (symlinks included) and names that
// are not valid slugs are skipped.
func (s *Store) scanFiles() ([]noteFile, error) {
	var out []noteFile
	for _, hall := range layout.Halls() {
		dir, err := s.hallDir(hall)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("store: skipping hall", "hall", hall, "err", err)
			}
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("store: scan %s: %w", hall, err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") {
				continue
			}
			slug := strings.TrimSuffix(name, ".md")
			if layout.ValidSlug(slug) != nil {
				s.log.Debug("store: skipping file whose name is not a valid slug", "hall", hall, "file", name)
				continue
			}
			if !e.Type().IsRegular() {
				s.log.Warn("store: skipping non-regular file (symlinks are not followed)", "hall", hall, "file", name)
				continue
			}
			fi, err := e.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return nil, fmt.Errorf("store: scan %s: %w", hall, err)
			}
			out = append(out, noteFile{
				id:  layout.ID{Wing: s.wing, Hall: hall, Slug: slug},
				dir: dir,
				sig: sigOf(fi),
			})
		}
	}
	return out, nil
}

// load reads and indexes every note at Open: GOMAXPROCS workers read and
// parse files while this goroutine feeds the index; ids are sorted once at
// the end.
func (s *Store) load(ctx context.Context, progress func(done, total int)) error {
	files, err := s.scanFiles()
	if err != nil {
		return err
	}
	total := len(files)
	if progress != nil {
		progress(0, total)
	}
	type loaded struct {
		f     noteFile
		p     parsed
		links []string
		sig   fileSig
		err   error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan noteFile)
	results := make(chan loaded, 256)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				raw, sig, err := readFileLimit(f.path(), s.maxNote)
				l := loaded{f: f, sig: sig, err: err}
				if err == nil {
					l.p = parseNote(raw, f.id.Slug)
					l.links = s.parseLinks(l.p.body)
				}
				select {
				case results <- l:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, f := range files {
			select {
			case jobs <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	done := 0
	var firstErr error
	for l := range results {
		if firstErr != nil {
			continue // draining after a failure
		}
		switch {
		case l.err == nil:
			s.applyParsed(l.f.id, l.p, l.links, l.sig, true)
		case errors.Is(l.err, fs.ErrNotExist):
		case errors.Is(l.err, ErrTooLarge), errors.Is(l.err, ErrInvalid):
			s.log.Warn("store: skipping note", "id", l.f.id.String(), "err", l.err)
		default:
			firstErr = fmt.Errorf("store: open: read %s: %w", l.f.id.Path(), l.err)
			cancel()
			continue
		}
		done++
		if progress != nil && (done%1000 == 0 || done == total) {
			progress(done, total)
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: open: %w", err)
	}
	s.mu.Lock()
	sort.Strings(s.ids)
	s.mu.Unlock()
	return nil
}

// apply records the content of note id (read or written under its lock) in
// the memory state and the search index. Callers hold the note's lock.
func (s *Store) apply(id layout.ID, raw []byte, sig fileSig) {
	p := parseNote(raw, id.Slug)
	s.applyParsed(id, p, s.parseLinks(p.body), sig, false)
}

// applyParsed is apply after parsing. In bulk mode (Open) ids are appended
// unsorted; load sorts them once at the end.
func (s *Store) applyParsed(id layout.ID, p parsed, links []string, sig fileSig, bulk bool) {
	m := &meta{hall: id.Hall, title: p.title, sig: sig, links: links}
	m.updatedAt = p.updatedAt
	if m.updatedAt == "" {
		m.updatedAt = rfc3339(time.Unix(0, sig.mtime))
	}
	key := id.String()
	s.ix.Put(index.Doc{ID: key, Title: p.title, Body: p.body})

	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.notes[key]
	switch {
	case old == nil && bulk:
		s.ids = append(s.ids, key)
		s.tocGen++
	case old == nil:
		i := sort.SearchStrings(s.ids, key)
		s.ids = append(s.ids, "")
		copy(s.ids[i+1:], s.ids[i:])
		s.ids[i] = key
		s.tocGen++
	default:
		if old.title != m.title {
			s.tocGen++
		}
		s.unlinkLocked(key, old.links)
	}
	for _, t := range m.links {
		set := s.backlinks[t]
		if set == nil {
			set = make(map[string]struct{})
			s.backlinks[t] = set
		}
		set[key] = struct{}{}
	}
	s.notes[key] = m
}

// forget removes note id from the memory state and the index. Callers hold
// the note's lock.
func (s *Store) forget(id layout.ID) {
	key := id.String()
	s.ix.Delete(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.notes[key]
	if old == nil {
		return
	}
	s.unlinkLocked(key, old.links)
	delete(s.notes, key)
	if i := sort.SearchStrings(s.ids, key); i < len(s.ids) && s.ids[i] == key {
		s.ids = append(s.ids[:i], s.ids[i+1:]...)
	}
	s.tocGen++
}

func (s *Store) unlinkLocked(src string, targets []string) {
	for _, t := range targets {
		if set := s.backlinks[t]; set != nil {
			delete(set, src)
			if len(set) == 0 {
				delete(s.backlinks, t)
			}
		}
	}
}

// sigOfNote returns the signature of the indexed version of note id.
func (s *Store) sigOfNote(id string) (fileSig, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.notes[id]
	if m == nil {
		return fileSig{}, false
	}
	return m.sig, true
}
