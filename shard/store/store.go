package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/layout"
	"github.com/brainstem/brainstem/shard/store/diskfile"
	"github.com/brainstem/brainstem/shard/store/hits"
	"github.com/brainstem/brainstem/shard/store/keylock"
	"github.com/brainstem/brainstem/shard/store/notecache"
	"github.com/brainstem/brainstem/shard/store/refusal"
	"github.com/brainstem/brainstem/shard/store/sessionlog"
	"github.com/brainstem/brainstem/shard/store/watch"
)

// Defaults of Options.
const (
	DefaultMaxNoteBytes   = 1 << 20
	DefaultRescanInterval = 2 * time.Second
	// DefaultWatchedRescanInterval is the rescan interval while the store
	// watches the wing's directories for changes (Linux inotify): events
	// reach the index within milliseconds and the full passes are only a
	// safety net.
	DefaultWatchedRescanInterval = time.Minute
	DefaultIndexDelay            = time.Second
	DefaultReadCacheBytes        = 64 << 20
)

// Options configures Open.
type Options struct {
	// Root is the brain directory (it must exist). Wing is the wing this
	// store serves (brain.ValidWing).
	Root, Wing string
	// Logger receives warnings about files the store skips and rescanner
	// failures; nil discards them. The store adds "wing" to every line, so
	// it must not carry one already (JSON log lines repeat no key).
	Logger *slog.Logger
	// Now is the clock used for created_at, updated_at, promoted_at and
	// session lines; nil means time.Now.
	Now func() time.Time
	// MaxNoteBytes bounds a note file read or written (0 → 1 MiB). Larger
	// files are skipped by scans (with a warning, see Skipped) and refused
	// by Get.
	MaxNoteBytes int
	// RescanInterval is how often the background rescanner compares every
	// note file with the indexed version, for changes made behind the
	// store's back (an editor, git pull). 0 means 2s, or 1 minute while the
	// store also watches the wing's directories (Linux; changes then reach
	// the index within milliseconds). A negative value disables the
	// rescanner and the watcher; Rescan still works.
	RescanInterval time.Duration
	// NoWatch disables the directory watcher: only the rescanner picks up
	// outside changes.
	NoWatch bool
	// Progress, if set, is called while Open loads the notes.
	Progress func(done, total int)
	// IndexDelay chooses how _index.md follows changes. 0 means
	// DefaultIndexDelay (1s). A positive value: write-behind, a background
	// writer rewrites _index.md at most once per IndexDelay after a change,
	// so a write costs the same in a wing of 300 notes or 100,000 (the file
	// is about 100 bytes per note); Rescan, SyncIndex and Close bring it up
	// to date, so nothing is lost on shutdown. A negative value:
	// write-through, a write, update or promotion returns after _index.md
	// has been rewritten durably (concurrent writers share one rewrite). The
	// notes themselves are durable before any call returns either way, and
	// Open regenerates _index.md from them.
	IndexDelay time.Duration
	// ReadCacheBytes bounds the memory of parsed notes kept for Get (0 →
	// 64 MiB; negative: no cache). A cached note is used only while the
	// file's size, mtime and inode are those it was read with, and only
	// once its mtime is old enough that a later edit must change it (see
	// Get), so reads are never stale.
	ReadCacheBytes int64
	// HitCacheBytes bounds the memory of what renders search hits (title,
	// hash, body) kept so that a hit makes no open or read (0 →
	// hits.DefaultBytes, 64 MiB; negative: no cache). See hitVersion.
	HitCacheBytes int64
	// StateDir holds the store's state that is not part of the brain: the
	// snapshot of the index that makes restarts incremental. "" means
	// <Root>/.brainstem (a hidden directory that ignores itself in git).
	StateDir string
	// NoSnapshot disables the snapshot: every Open reads and indexes every
	// note.
	NoSnapshot bool
	// History configures the wing's history in git (history.go): on
	// unless History.Off.
	History HistoryOptions

	afterPass  func()           // test hook: called after each background rescan pass
	afterWatch func()           // test hook: called after each batch of watched changes
	wallNow    func() time.Time // test hook: the wall clock that file times are compared with
}

// Store is one wing of a brain directory. It is safe for concurrent use.
type Store struct {
	root, wing string
	log        *slog.Logger
	now        func() time.Time
	wallNow    func() time.Time
	maxNote    int

	ix     *index.Index
	locks  keylock.Set                      // per-note and per-inbox-name locks
	scanMu sync.Mutex                       // one rescan at a time
	cache  *notecache.Cache[fileSig, *Note] // parsed notes for Get; nil when disabled

	hits *hits.Cache[hitVersion] // what renders search hits; nil when disabled

	mu        sync.RWMutex // guards the fields below
	notes     map[string]*meta
	ids       []string                       // sorted ids of notes
	backlinks map[string]map[string]struct{} // target id → ids of notes of this wing linking to it
	tocGen    uint64                         // bumped whenever _index.md's content changes

	tocMu   sync.Mutex // guards the fields below; held while writing _index.md
	tocDone uint64     // tocGen the file on disk reflects
	tocSig  fileSig    // signature of the _index.md we wrote last

	sessions *sessionlog.Logs // the wing's session logs

	skips skipSet // files of the wing that are not loaded

	inbox inboxState // the inbox as search sees it (inbox.go)

	hist    *history.History // the wing's history; nil when it keeps none (history.go)
	purgeOK bool             // HistoryOptions.AllowPurge
	remote  RemotePurge      // HistoryOptions.Remote
	outMu   sync.Mutex       // guards outPend
	outPend map[string]bool  // paths seen changed behind the store's back, not yet recorded
	outKick chan struct{}    // wakes outsideLoop

	snap snapshotState // the persisted index (see snapshot.go)

	tocDelay time.Duration // > 0: _index.md is written behind (see Options.IndexDelay)
	tocKick  chan struct{} // wakes tocLoop

	halls hallDirs // hall directories verified once (halldirs.go)

	wholeReads atomic.Int64 // hits rendered from a whole read of their file

	closed  atomic.Bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup // background loops
	watcher watch.Watcher  // the directory watcher; nil when none runs
}

// meta is what the store keeps in memory about one wiki note. A meta is
// never modified once stored: changes store a new one.
type meta struct {
	hall      string
	title     string
	updatedAt string   // updated_at, else promoted_at, else created_at, else file mtime
	links     []string // outbound ids, first appearance order, deduplicated
	sig       fileSig
	hash      [sha256.Size]byte   // of the bytes indexed
	bodyOff   uint32              // where the body starts in those bytes
	readAt    int64               // wall clock (UnixNano) when those bytes were read
	flags     []injection.Finding // the injection audit's findings on those bytes, nil for none
}

// racyWindow is how recent a file's mtime may be, relative to when the
// store read it, before the store stops trusting that (size, mtime, inode)
// identifies the bytes it read: a file rewritten twice within the
// filesystem's timestamp granularity keeps its mtime, so only a version
// read well after its mtime is known to be complete (git's "racy clean"
// rule). A racy version is re-read rather than served from memory.
const racyWindow = 2 * time.Second

// trusted reports whether the file version recorded by sig, read at readAt,
// may be identified by its signature alone.
func trusted(sig fileSig, readAt int64) bool {
	return sig.mtime < readAt-int64(racyWindow)
}

// Open opens (creating its directories as needed) the wing opt.Wing of the
// brain at opt.Root, removes temporary files left by a crash, loads and
// indexes every note (from the snapshot of the last run when there is one,
// re-reading only the notes that changed since), writes _index.md and
// starts the rescanner and the watcher. Close stops them.
func Open(ctx context.Context, opt Options) (*Store, error) {
	if err := brain.ValidWing(opt.Wing); err != nil {
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
	s := storeFor(root, opt)
	if err := s.prepareDirs(); err != nil {
		return nil, err
	}
	if err := s.load(ctx, opt.Progress); err != nil {
		return nil, err
	}
	if err := s.syncInbox(ctx); err != nil {
		return nil, err
	}
	if err := s.openHistory(ctx, opt); err != nil {
		return nil, err
	}
	if err := s.syncTOC(true); err != nil {
		_ = s.closeHistory()
		return nil, err
	}
	s.startBackground(ctx, opt)
	s.snap.afterOpen(s)
	return s, nil
}

// storeFor is the store of opt at root with its defaults, before anything
// is read.
func storeFor(root string, opt Options) *Store {
	s := &Store{root: root, wing: opt.Wing, now: opt.Now, wallNow: opt.wallNow, maxNote: opt.MaxNoteBytes,
		tocDelay: cmp.Or(opt.IndexDelay, DefaultIndexDelay), ix: index.New(), notes: make(map[string]*meta),
		backlinks: make(map[string]map[string]struct{}), inbox: inboxState{files: map[string]inboxFile{}, ix: index.New()},
		log: cmp.Or(opt.Logger, slog.New(slog.DiscardHandler)).With("wing", opt.Wing)} // once per line: callers pass a logger without it
	if s.now == nil {
		s.now = time.Now
	}
	if s.wallNow == nil {
		s.wallNow = time.Now
	}
	if s.maxNote <= 0 {
		s.maxNote = DefaultMaxNoteBytes
	}
	s.sessions = sessionlog.New(s.wing, s.now, s.abs, s.dirOf)
	s.hits = hits.New[hitVersion](cmp.Or(opt.HitCacheBytes, hits.DefaultBytes))
	if opt.ReadCacheBytes >= 0 {
		s.cache = notecache.New[fileSig](cmp.Or(opt.ReadCacheBytes, DefaultReadCacheBytes), math.MaxInt64, noteCost)
	}
	if !opt.NoSnapshot {
		s.snap.dir = cmp.Or(opt.StateDir, filepath.Join(root, stateDirName))
	}
	return s
}

// startBackground starts the watcher, the rescanner and the write-behind
// _index.md, as opt asks; Close stops them.
func (s *Store) startBackground(ctx context.Context, opt Options) {
	interval := opt.RescanInterval
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if interval >= 0 && !opt.NoWatch {
		if err := s.startWatch(rctx, opt.afterWatch); err != nil {
			s.log.Info("store: not watching the wing's directories; outside changes are found by the rescanner", "reason", err.Error())
		}
	}
	if interval == 0 {
		interval = DefaultRescanInterval
		if s.watcher != nil {
			interval = DefaultWatchedRescanInterval
		}
	}
	if interval > 0 {
		s.wg.Add(1)
		go s.rescanLoop(rctx, interval, opt.afterPass)
	}
	if s.tocDelay > 0 {
		s.tocKick = make(chan struct{}, 1)
		s.wg.Add(1)
		go s.tocLoop(rctx)
	}
	if s.hist != nil {
		s.outKick = make(chan struct{}, 1)
		s.wg.Add(1)
		go s.outsideLoop(rctx)
	}
}

// Close stops the rescanner and the watcher, brings a write-behind
// _index.md up to date and saves the snapshot of the index. Calls made
// after Close fail with ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	var errs []error
	if s.tocDelay > 0 {
		errs = append(errs, s.syncTOC(false))
	}
	if err := s.saveSnapshot(); err != nil {
		s.log.Warn("store: could not save the index snapshot; the next start re-reads the wing", "err", err)
	}
	errs = append(errs, s.closeHistory())
	return errors.Join(errs...)
}

// SyncIndex brings a write-behind _index.md up to date now.
func (s *Store) SyncIndex() error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.syncTOC(false)
}

// Wing returns the wing this store serves.
func (s *Store) Wing() string { return s.wing }

// Now is the time on the store's clock (Options.Now), the one its stamps
// use.
func (s *Store) Now() time.Time { return s.now() }

// PurgeAllowed reports whether an operator enabled purging history
// (HistoryOptions.AllowPurge): without it Purge is refused.
func (s *Store) PurgeAllowed() bool { return s.purgeOK }

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
		return errClosed
	}
	return nil
}

// abs resolves a brain-relative slash path safely inside the brain.
func (s *Store) abs(rel string) (string, error) {
	p, err := layout.Resolve(s.root, rel)
	if _, refused := brain.As(err); refused {
		return "", refusal.Invalid(err)
	}
	if err != nil {
		return "", fmt.Errorf("store: %w", err) // an I/O error: internal
	}
	return p, nil
}

// prepareDirs creates the wing's directories and removes leftover
// temporary files from them.
func (s *Store) prepareDirs() error {
	dirs := []string{"wiki", "wiki/" + s.wing}
	for _, h := range brain.Halls() {
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
			if err := atomicfile.SyncDir(filepath.Dir(p)); err != nil {
				return fmt.Errorf("store: open: sync %s: %w", rel, err)
			}
		case err != nil:
			return fmt.Errorf("store: open: %w", err)
		case !fi.IsDir():
			return fmt.Errorf("store: open: %s exists and is not a directory: %w", rel, ErrInvalid)
		}
		n, err := diskfile.RemoveTemps(p)
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
	return s.dirOf(brain.HallDir(s.wing, hall))
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
		return "", refusal.Refuse(ErrInvalid, "%s is not a directory (symlinks are not followed)", rel)
	}
	return p, nil
}

// noteFile is a note file found by a directory scan.
type noteFile struct {
	id  brain.ID
	dir string // absolute hall directory (shared by the hall's files)
	sig fileSig
}

func (f noteFile) path() string { return filepath.Join(f.dir, f.id.Slug+brain.NoteExt) }

// scanFiles lists the note files of every hall with their signatures, and
// records every other entry of the wing's wiki directory that is not
// loaded (see Skipped): names that are not <slug>.md, non-regular files
// (symlinks included), files over MaxNoteBytes, directories that are not
// halls. Hidden entries (names starting with '.': .gitkeep, the store's
// own temporary files) and _index.md are not part of the wing's notes and
// are passed over.
func (s *Store) scanFiles() ([]noteFile, error) {
	skipped, err := s.scanWingDir()
	if err != nil {
		return nil, err
	}
	var out []noteFile
	for _, hall := range brain.Halls() {
		files, skips, err := s.scanHall(hall)
		if err != nil {
			return nil, err
		}
		out, skipped = append(out, files...), append(skipped, skips...)
	}
	s.skips.setScan(s.log, skipped)
	return out, nil
}

// scanWingDir reports what the wing's directory holds besides its halls.
func (s *Store) scanWingDir() (skipped []Skipped, err error) {
	wingRel := brain.WingDir(brain.TopWiki, s.wing)
	wingDir, err := s.dirOf(wingRel)
	if err != nil {
		return nil, fmt.Errorf("store: scan %s: %w", wingRel, err)
	}
	top, err := os.ReadDir(wingDir)
	if err != nil {
		return nil, fmt.Errorf("store: scan %s: %w", wingRel, err)
	}
	for _, e := range top {
		name := e.Name()
		rel := wingRel + "/" + name
		switch {
		case layout.Hidden(name), name == brain.IndexSlug+brain.NoteExt:
		case e.IsDir() && brain.ValidHall(name) == nil:
		case e.IsDir():
			skipped = append(skipped, Skipped{Path: rel + "/", Kind: SkipPlace, Reason: "not a hall (" + strings.Join(brain.Halls(), ", ") + "): the files in it are not loaded"})
		case e.Type()&fs.ModeSymlink != 0 && brain.ValidHall(name) == nil:
			skipped = append(skipped, Skipped{Path: rel, Kind: SkipType, Reason: "a hall directory replaced by a symbolic link (links are not followed): its notes are not loaded"})
		default:
			skipped = append(skipped, Skipped{Path: rel, Kind: SkipPlace, Reason: "not in a hall: notes are files " + wingRel + "/<hall>/<slug>.md"})
		}
	}
	return skipped, nil
}

// scanHall lists the note files of one hall, and what it holds that is not
// loaded. A missing hall holds nothing.
func (s *Store) scanHall(hall string) (out []noteFile, skipped []Skipped, err error) {
	hallRel := brain.HallDir(s.wing, hall)
	dir, err := s.hallDir(hall)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrInvalid) {
			return nil, nil, fmt.Errorf("store: scan %s: %w", hallRel, err)
		}
		return nil, nil, nil // missing, or reported above as a symlink
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("store: scan %s: %w", hallRel, err)
	}
	for _, e := range entries {
		name := e.Name()
		if layout.Hidden(name) {
			continue
		}
		rel := hallRel + "/" + name
		if e.IsDir() {
			skipped = append(skipped, Skipped{Path: rel + "/", Kind: SkipPlace, Reason: "a directory inside a hall: notes are files directly in " + hallRel + "/"})
			continue
		}
		if !e.Type().IsRegular() {
			skipped = append(skipped, Skipped{Path: rel, Kind: SkipType, Reason: "not a regular file (symbolic links are not followed)"})
			continue
		}
		slug, err := layout.NoteFile(name)
		if err != nil {
			skipped = append(skipped, Skipped{Path: rel, Kind: SkipName, Reason: reasonOf(err) + "; rename the file to be loaded"})
			continue
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, nil, fmt.Errorf("store: scan %s: %w", hallRel, err)
		}
		if fi.Size() > int64(s.maxNote) {
			skipped = append(skipped, Skipped{Path: rel, Kind: SkipSize, Reason: sizeReason(fi.Size(), s.maxNote)})
			continue
		}
		out = append(out, noteFile{id: brain.ID{Wing: s.wing, Hall: hall, Slug: slug}, dir: dir, sig: sigOf(fi)})
	}
	return out, skipped, nil
}

// readResult is a note file read, parsed, hashed and tokenized by a load
// worker.
type readResult struct {
	f      noteFile
	note   preparedNote
	sig    fileSig
	readAt int64
	err    error
}

// preparedNote is what applying a note needs, computed from its bytes
// without touching the store (so in parallel when a wing loads).
type preparedNote struct {
	p       parsed
	links   []string
	hash    [sha256.Size]byte
	bodyOff uint32
	doc     *index.Prepared
	flags   []injection.Finding
}

// prepare parses, hashes and tokenizes the bytes of note id.
func (s *Store) prepare(id brain.ID, raw []byte) preparedNote {
	p := parseNote(raw, id.Slug)
	n := preparedNote{p: p, links: s.parseLinks(p.body), hash: sha256.Sum256(raw), flags: injection.Scan(raw)}
	if off := len(raw) - len(p.body); off >= 0 && off <= math.MaxUint32 {
		n.bodyOff = uint32(off) // the body is always a suffix of the file
	}
	n.doc = s.ix.Prepare(index.Doc{ID: id.String(), Title: p.title, Body: p.body})
	return n
}

// load indexes the wing at Open: from the snapshot of the last run when
// there is a usable one, re-reading only the files whose signature changed
// (and forgetting the notes that are gone), else from every file.
func (s *Store) load(ctx context.Context, progress func(done, total int)) error {
	files, err := s.scanFiles()
	if err != nil {
		return err
	}
	toRead := files
	if s.loadSnapshot() {
		toRead = s.reconcile(files)
	}
	if err := s.readFiles(ctx, toRead, progress); err != nil {
		return err
	}
	s.mu.Lock()
	sort.Strings(s.ids)
	s.mu.Unlock()
	return nil
}

// reconcile compares the notes restored from the snapshot with the files
// on disk: it forgets the notes whose file is gone and returns the files
// to read (new, changed, or not verifiably unchanged).
func (s *Store) reconcile(files []noteFile) []noteFile {
	var toRead []noteFile
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		key := f.id.String()
		seen[key] = true
		m := s.notes[key]
		if m == nil || m.sig != f.sig || !trusted(m.sig, m.readAt) || !s.ix.Has(key) {
			toRead = append(toRead, f)
		}
	}
	var gone []string
	for key := range s.notes {
		if !seen[key] {
			gone = append(gone, key)
		}
	}
	for _, key := range gone {
		if id, err := brain.ParseID(key); err == nil {
			s.forget(id)
		}
	}
	if len(toRead) > 0 || len(gone) > 0 {
		s.log.Info("store: restored the index from its snapshot", "notes", len(s.notes), "changed", len(toRead), "gone", len(gone))
	}
	return toRead
}

// readFiles reads, parses and indexes files: GOMAXPROCS workers read and
// parse while this goroutine feeds the index. New ids are appended
// unsorted; the caller sorts them.
func (s *Store) readFiles(ctx context.Context, files []noteFile, progress func(done, total int)) error {
	total := len(files)
	if progress != nil {
		progress(0, total)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan noteFile)
	results := make(chan readResult, 256)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				at := s.wallNow().UnixNano()
				raw, sig, err := readFileLimit(f.path(), s.maxNote)
				l := readResult{f: f, sig: sig, readAt: at, err: err}
				if err == nil {
					l.note = s.prepare(f.id, raw)
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
	for l := range results {
		switch {
		case l.err == nil:
			s.skips.clearRead(l.f.id.Path())
			s.applyPrepared(l.f.id, l.note, l.sig, l.readAt, true)
		case errors.Is(l.err, fs.ErrNotExist):
		default:
			s.skipRead(l.f.id, l.err)
		}
		done++
		if progress != nil && (done%1000 == 0 || done == total) {
			progress(done, total)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: open: %w", err)
	}
	return nil
}

// skipRead records that note id could not be read (and is not loaded).
func (s *Store) skipRead(id brain.ID, err error) {
	kind := SkipRead
	switch {
	case errors.Is(err, ErrTooLarge):
		kind = SkipSize
	case errors.Is(err, ErrInvalid):
		kind = SkipType
	}
	s.skips.setRead(s.log, Skipped{Path: id.Path(), Kind: kind, Reason: reasonOf(err)})
}

// apply records the content of note id (read or written under its lock at
// wall time readAt) in the memory state and the search index. Callers hold
// the note's lock.
func (s *Store) apply(id brain.ID, raw []byte, sig fileSig, readAt time.Time) {
	s.applyPrepared(id, s.prepare(id, raw), sig, readAt.UnixNano(), false)
}

// applyPrepared is apply after prepare. In bulk mode (Open) new ids are
// appended unsorted; load sorts them once at the end.
func (s *Store) applyPrepared(id brain.ID, n preparedNote, sig fileSig, readAt int64, bulk bool) {
	m := &meta{hall: id.Hall, title: n.p.title, sig: sig, links: n.links, hash: n.hash, bodyOff: n.bodyOff, readAt: readAt, flags: n.flags}
	if m.updatedAt = n.p.updatedAt; m.updatedAt == "" {
		m.updatedAt = rfc3339(time.Unix(0, sig.mtime))
	}
	key := id.String()
	s.ix.PutPrepared(n.doc)

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
	s.linkLocked(key, m.links)
	s.notes[key] = m
	s.hits.Remove(key)
	s.snap.dirty.Add(1)
}

func (s *Store) linkLocked(src string, targets []string) {
	for _, t := range targets {
		set := s.backlinks[t]
		if set == nil {
			set = make(map[string]struct{})
			s.backlinks[t] = set
		}
		set[src] = struct{}{}
	}
}

// forget removes note id from the memory state and the index. Callers hold
// the note's lock.
func (s *Store) forget(id brain.ID) {
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
	s.hits.Remove(key)
	if i := sort.SearchStrings(s.ids, key); i < len(s.ids) && s.ids[i] == key {
		s.ids = append(s.ids[:i], s.ids[i+1:]...)
	}
	s.tocGen++
	s.snap.dirty.Add(1)
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

// metaOf returns the indexed version of note id, nil if none.
func (s *Store) metaOf(id string) *meta {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.notes[id]
}

// sigOfNote returns the signature of the indexed version of note id.
func (s *Store) sigOfNote(id string) (fileSig, bool) {
	m := s.metaOf(id)
	if m == nil {
		return fileSig{}, false
	}
	return m.sig, true
}

// retrust records that the indexed version m of note id was read again at
// readAt and found unchanged, so that it can be trusted once its mtime is
// old enough.
func (s *Store) retrust(id string, m *meta, readAt int64) {
	if readAt <= m.readAt {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes[id] == m {
		cp := *m
		cp.readAt = readAt
		s.notes[id] = &cp
	}
}
