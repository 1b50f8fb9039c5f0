package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/store/notecache"
	"github.com/brainstem/brainstem/tooling/corpus"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// lateClock is a wall clock ahead of the real one, so that files written
// by the test look old enough to be trusted by their signature.
func lateClock() time.Time { return time.Now().Add(time.Minute) }

// jsonLogger is a debug-level JSON logger writing to l.
func jsonLogger(l *logcheck.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestGetIsNeverStale: Get serves a parsed note from memory only while
// the file is the version it read, and only once that version is old
// enough to be identified by its signature; an edit that keeps the size
// (and even one within the same mtime tick) is always seen.
func TestGetIsNeverStale(t *testing.T) {
	root := t.TempDir()
	wall := time.Now
	var mu sync.Mutex
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1, IndexDelay: -1,
		wallNow: func() time.Time { mu.Lock(); defer mu.Unlock(); return wall() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const p = "wiki/payments/facts/ledger.md"
	get := func() string {
		t.Helper()
		n, err := s.Get(ctx, "payments/facts/ledger")
		if err != nil {
			t.Fatal(err)
		}
		if n.Hash != sha(n.Raw) {
			t.Fatalf("hash %s is not that of the bytes returned", n.Hash)
		}
		return n.Body
	}

	// Just written: the version is too recent to trust, so every Get
	// reads the file, and a same-size rewrite in the same tick is seen.
	writeFile(t, root, p, "# Ledger\naaaa\n")
	if got := get(); got != "# Ledger\naaaa\n" {
		t.Fatalf("Get = %q", got)
	}
	writeFile(t, root, p, "# Ledger\nbbbb\n")
	if got := get(); got != "# Ledger\nbbbb\n" {
		t.Fatalf("same-size rewrite: Get = %q", got)
	}
	if n := s.cache.Stats().Entries; n != 0 {
		t.Fatalf("%d notes cached while their mtime is recent", n)
	}

	// Later: the version is trusted and cached; Get returns it without
	// reading, until the file changes in any way.
	mu.Lock()
	wall = lateClock
	mu.Unlock()
	get()
	hits := s.cache.Stats().Hits
	if got := get(); got != "# Ledger\nbbbb\n" || s.cache.Stats().Hits != hits+1 {
		t.Fatalf("second Get = %q, cache hits %d → %d; want a cache hit", got, hits, s.cache.Stats().Hits)
	}
	writeFile(t, root, p, "# Ledger\ncccc\n") // same size, same inode
	if got := get(); got != "# Ledger\ncccc\n" {
		t.Fatalf("after an in-place edit: Get = %q", got)
	}
	os.Remove(filepath.Join(root, p))
	writeFile(t, root, p, "# Ledger\ndddd\n") // a new inode
	if got := get(); got != "# Ledger\ndddd\n" {
		t.Fatalf("after a replace: Get = %q", got)
	}
	// The index followed the file at every step.
	if hits, _ := s.Search(ctx, "dddd", SearchOptions{}); len(hits) != 1 {
		t.Fatalf("search after the edits: %+v", hits)
	}
	// Inbox notes are cached the same way.
	writeFile(t, root, "inbox/payments/idea.md", "# Idea\nx\n")
	for _, want := range []string{"# Idea\nx\n", "# Idea\ny\n"} {
		writeFile(t, root, "inbox/payments/idea.md", want)
		if n, err := s.Get(ctx, "inbox/payments/idea.md"); err != nil || n.Body != want {
			t.Fatalf("inbox Get = %+v, %v; want %q", n, err, want)
		}
	}
}

// TestNoteCacheIsBounded: the cache evicts least recently used notes to
// stay within its budget and never keeps a note larger than an eighth of it.
func TestNoteCacheIsBounded(t *testing.T) {
	c := notecache.New[fileSig](64<<10, math.MaxInt64, noteCost)
	note := func(n int) *Note { return &Note{Body: strings.Repeat("x", n), Raw: []byte(strings.Repeat("x", n))} }
	for i := range 100 {
		c.Put(filepath.Join("inbox/w", string(rune('a'+i%26))+strings.Repeat("z", i)), fileSig{size: int64(i)}, note(1000))
	}
	n, bytes := c.Stats().Entries, c.Stats().Bytes
	if bytes > 64<<10 || n == 0 || n > 40 {
		t.Fatalf("%d notes, %d bytes in a 64 KiB cache", n, bytes)
	}
	c.Put("big", fileSig{}, note(10<<10))
	if _, ok := c.Get("big", fileSig{}); ok {
		t.Fatal("a note over an eighth of the budget was cached")
	}
	c.Put("a", fileSig{size: 1}, note(10))
	if _, ok := c.Get("a", fileSig{size: 2}); ok {
		t.Fatal("a cached note was returned for another version (or kept after a mismatch)")
	}
	if _, ok := c.Get("a", fileSig{size: 1}); ok {
		t.Fatal("a cached note was returned for another version (or kept after a mismatch)")
	}
}

// heavyNotes are notes of sizes from 1 KB to 600 KB, generated once per
// test binary.
var heavyNotes = sync.OnceValue(func() []corpus.Note {
	notes := corpus.HeavyNotes(2, 30)
	var b strings.Builder
	for i := 0; b.Len() < 600<<10; i++ {
		b.WriteString(notes[i%len(notes)].Body)
	}
	return append(notes, corpus.Note{Hall: "sources", Slug: "big-note", Title: "A big note", Body: b.String() + "\nquetzal at the end\n"})
})

// heavyBrain writes notes of every size from 1 KB to 600 KB into the test
// wing and returns their ids and bodies (CRLF and no frontmatter in some).
func heavyBrain(t *testing.T, root string) map[string]string {
	t.Helper()
	bodies := map[string]string{}
	for i, n := range heavyNotes() {
		raw := frontmatter.New([][2]string{{"title", n.Title}, {"wing", testWing}, {"hall", n.Hall}}, n.Body).Bytes()
		if i%7 == 0 { // some notes without frontmatter, some with CRLF and odd spacing
			raw = []byte("# " + n.Title + "\r\n\r\n" + strings.ReplaceAll(n.Body, ". ", ".  \t\n"))
		}
		writeFile(t, root, "wiki/payments/"+n.Hall+"/"+n.Slug+".md", string(raw))
		bodies[testWing+"/"+n.Hall+"/"+n.Slug] = string(raw)
	}
	return bodies
}

// TestSearchSnippetsFromWindows: the snippets of hits rendered from a
// window of the file equal those of a whole read, on notes up to megabytes,
// and the totals count every matching note.
func TestSearchSnippetsFromWindows(t *testing.T) {
	root := t.TempDir()
	bodies := heavyBrain(t, root)
	ctx := context.Background()
	open := func(wall func() time.Time) *Store {
		s, err := Open(ctx, Options{Root: root, Wing: testWing, RescanInterval: -1, MaxNoteBytes: 4 << 20, wallNow: wall, NoSnapshot: true,
			History: HistoryOptions{Off: true}}) // two stores of one wing at once: one history only

		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// slow: a clock an hour behind makes every version too recent to trust.
	fast, slow := open(lateClock), open(func() time.Time { return time.Now().Add(-time.Hour) })
	compared := 0
	for _, q := range append(append(corpus.Queries(2, 1, 10), corpus.Queries(2, 3, 10)...), "quetzal") {
		a, err := fast.Query(ctx, q, SearchOptions{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		b, err := slow.Query(ctx, q, SearchOptions{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if a.Total != b.Total || len(a.Hits) != len(b.Hits) || a.Total < len(a.Hits) {
			t.Fatalf("%q: totals %d/%d, hits %d/%d", q, a.Total, b.Total, len(a.Hits), len(b.Hits))
		}
		for i := range a.Hits {
			if !reflect.DeepEqual(a.Hits[i], b.Hits[i]) {
				t.Fatalf("%q hit %d: from a window %+v, from a whole read %+v", q, i, a.Hits[i], b.Hits[i])
			}
			raw := bodies[a.Hits[i].ID]
			if a.Hits[i].Hash != sha([]byte(raw)) {
				t.Fatalf("%q: hash of %s", q, a.Hits[i].ID)
			}
			compared++
		}
	}
	if compared < 30 {
		t.Fatalf("only %d hits compared", compared)
	}
	if fast.wholeReads.Load() != 0 || slow.wholeReads.Load() == 0 {
		t.Errorf("whole-file reads for hits: %d trusted, %d untrusted; want none and some", fast.wholeReads.Load(), slow.wholeReads.Load())
	}
	// Hall filters count too.
	all, _ := fast.Query(ctx, "the", SearchOptions{})
	if all.Total != 0 {
		t.Errorf("a stop word matched %d notes", all.Total)
	}
}

// TestRankAndFetch: Rank gives Query's ids, scores and total without
// rendering; Fetch renders named hits exactly as Query does.
func TestRankAndFetch(t *testing.T) {
	root := t.TempDir()
	heavyBrain(t, root)
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1, MaxNoteBytes: 4 << 20, wallNow: lateClock})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, text := range corpus.Queries(1, 2, 10) {
		q := search.Query{Text: text, Terms: search.Terms(text), Limit: 8}
		st := s.TermStats(q.Terms, search.ScopeWiki)
		st.Docs *= 3 // as if other wings held more notes
		st.TotalLength *= 3
		want, err := s.Query(ctx, text, SearchOptions{Limit: 8, Stats: &st})
		if err != nil {
			t.Fatal(err)
		}
		ranked, total, ahead, err := s.RankQuery(ctx, q, &st, 3)
		if err != nil || total != want.Total || len(ranked) != len(want.Hits) {
			t.Fatalf("%q: Rank %d hits total %d (%v), Query %d total %d", text, len(ranked), total, err, len(want.Hits), want.Total)
		}
		var ids []string
		for i, r := range ranked {
			if r.Key != want.Hits[i].ID || r.Score != want.Hits[i].Score {
				t.Fatalf("%q: ranked %+v, queried %+v", text, r, want.Hits[i])
			}
			ids = append(ids, r.Key)
		}
		got, err := s.FetchHits(ctx, q, append(ids, "payments/facts/not-there"), &st)
		if err != nil || !slices.EqualFunc(got, s.searchHits(want.Hits), sameHit) {
			t.Fatalf("%q: Fetch = %+v (%v), Query = %+v", text, got, err, want.Hits)
		}
		if n := min(3, len(want.Hits)); !slices.EqualFunc(ahead, s.searchHits(want.Hits[:n]), sameHit) {
			t.Fatalf("%q: rendered ahead %+v, Query %+v", text, ahead, want.Hits[:n])
		}
	}
	if _, _, _, err := s.RankQuery(ctx, search.Query{Text: "x", Terms: []string{"x"}, Hall: "ideas"}, nil, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Rank with a bad hall: %v", err)
	}
}

// TestSkippedFilesAreReported: every file of the wing's wiki directory that
// is not loaded is listed with its path and reason, logged once as a
// warning, and forgotten once fixed.
func TestSkippedFilesAreReported(t *testing.T) {
	root := t.TempDir()
	var logs logcheck.Buffer
	writeFile(t, root, "wiki/payments/facts/good.md", "# Good\nok\n")
	writeFile(t, root, "wiki/payments/facts/trailing-.md", "# Trailing\nx\n")
	writeFile(t, root, "wiki/payments/facts/Upper.md", "# Upper\nx\n")
	writeFile(t, root, "wiki/payments/facts/diagram.png", "png")
	writeFile(t, root, "wiki/payments/facts/nested/x.md", "# Nested\nx\n")
	writeFile(t, root, "wiki/payments/facts/big.md", strings.Repeat("x", 2000))
	writeFile(t, root, "wiki/payments/ideas/x.md", "# Idea\nx\n")
	writeFile(t, root, "wiki/payments/loose.md", "# Loose\nx\n")
	writeFile(t, root, "wiki/payments/facts/.gitkeep", "")
	writeFile(t, root, "wiki/payments/.hidden.md", "x")
	if err := os.Symlink(filepath.Join(root, "wiki/payments/facts/good.md"), filepath.Join(root, "wiki/payments/facts/link.md")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1, MaxNoteBytes: 1000, Logger: jsonLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []Skipped{
		{"wiki/payments/facts/Upper.md", SkipName, "slug has 'U'"},
		{"wiki/payments/facts/big.md", SkipSize, "2000 bytes, over the 1000-byte limit"},
		{"wiki/payments/facts/diagram.png", SkipName, "is not a note"},
		{"wiki/payments/facts/link.md", SkipType, "symbolic links are not followed"},
		{"wiki/payments/facts/nested/", SkipPlace, "a directory inside a hall"},
		{"wiki/payments/facts/trailing-.md", SkipName, "leading, trailing or doubled '-'"},
		{"wiki/payments/ideas/", SkipPlace, "not a hall"},
		{"wiki/payments/loose.md", SkipPlace, "not in a hall"},
	}
	check := func(stage string, want []Skipped) {
		t.Helper()
		got := s.Skipped()
		if len(got) != len(want) {
			t.Fatalf("%s: skipped %+v, want %d entries", stage, got, len(want))
		}
		for i := range want {
			if got[i].Path != want[i].Path || got[i].Kind != want[i].Kind || !strings.Contains(got[i].Reason, want[i].Reason) {
				t.Errorf("%s: skipped[%d] = %+v, want %+v", stage, i, got[i], want[i])
			}
		}
	}
	check("open", want)
	warned := map[string]int{}
	for _, l := range logs.Lines("store: file not loaded") {
		warned[l["path"].(string)]++
		if l["level"] != "WARN" || l["reason"] == "" {
			t.Errorf("log line %v", l)
		}
	}
	for _, w := range want {
		if warned[w.Path] != 1 {
			t.Errorf("%s logged %d times, want once", w.Path, warned[w.Path])
		}
	}
	if s.SkippedCount(SkipName) != 3 || s.SkippedCount(SkipPlace) != 3 || s.Len() != 1 {
		t.Errorf("counts name %d place %d, notes %d", s.SkippedCount(SkipName), s.SkippedCount(SkipPlace), s.Len())
	}
	// A rescan does not log them again; fixing a file loads it.
	os.Rename(filepath.Join(root, "wiki/payments/facts/trailing-.md"), filepath.Join(root, "wiki/payments/facts/trailing.md"))
	os.Remove(filepath.Join(root, "wiki/payments/facts/big.md"))
	if err := s.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("rescan", slices.DeleteFunc(slices.Clone(want), func(sk Skipped) bool {
		return strings.Contains(sk.Path, "trailing") || strings.Contains(sk.Path, "big")
	}))
	if n := len(logs.Lines("store: file not loaded")); n != len(want) {
		t.Errorf("%d warnings after a rescan, want the %d of Open", n, len(want))
	}
	if hits, _ := s.Search(context.Background(), "trailing", SearchOptions{}); len(hits) != 1 {
		t.Errorf("the renamed note is not searchable: %+v", hits)
	}
	// A note that grows past the limit is forgotten and reported.
	writeFile(t, root, "wiki/payments/facts/good.md", strings.Repeat("y", 1500))
	if _, err := s.Get(context.Background(), "payments/facts/good"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Get of a grown note: %v", err)
	}
	if err := s.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.SkippedCount(SkipSize) != 1 || s.Len() != 1 {
		t.Errorf("after growth: %d size skips, %d notes", s.SkippedCount(SkipSize), s.Len())
	}
}

// TestIndexBatchedByDefault: with default options _index.md is written
// behind, and Close writes it: a shutdown loses nothing.
func TestIndexBatchedByDefault(t *testing.T) {
	root := t.TempDir()
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s.tocDelay != DefaultIndexDelay {
		t.Fatalf("default index delay %v, want %v", s.tocDelay, DefaultIndexDelay)
	}
	for _, title := range []string{"One", "Two", "Three"} {
		mustCreate(t, s, NewNote{Title: title, Body: "b", Hall: "facts"})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	toc := string(readFile(t, root, "wiki/payments/_index.md"))
	for _, id := range []string{"one", "two", "three"} {
		if !strings.Contains(toc, "[[payments/facts/"+id+"]]") {
			t.Errorf("_index.md after Close lacks %s:\n%s", id, toc)
		}
	}
}

// TestSnapshotRestart: a restart restores the wing from the snapshot and
// reads only the files that changed; the result is the same as a full
// read.
func TestSnapshotRestart(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	openWith := func(progress *[2]int, logs *logcheck.Buffer) *Store {
		t.Helper()
		opt := Options{Root: root, Wing: testWing, RescanInterval: -1, wallNow: lateClock,
			Progress: func(done, total int) { *progress = [2]int{done, total} }}
		if logs != nil {
			opt.Logger = jsonLogger(logs)
		}
		s, err := Open(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var prog [2]int
	s := openWith(&prog, nil)
	for i, n := range corpus.Notes(4, 40) {
		mustCreate(t, s, NewNote{Title: n.Title, Body: n.Body + " [[facts/linked-note]]", Hall: []string{"facts", "decisions"}[i%2], Slug: n.Slug})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(root, ".brainstem", "snapshots", "payments.snapshot")
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("no snapshot after Close: %v", err)
	}
	if ign, err := os.ReadFile(filepath.Join(root, ".brainstem", ".gitignore")); err != nil || !strings.Contains(string(ign), "*") {
		t.Fatalf(".brainstem/.gitignore = %q, %v", ign, err)
	}
	notes := corpus.Notes(4, 40)
	// Behind its back: one edit, one delete, one new note.
	writeFile(t, root, "wiki/payments/facts/"+notes[0].Slug+".md", "# Edited\nquokka\n")
	os.Remove(filepath.Join(root, "wiki/payments/decisions/"+notes[1].Slug+".md"))
	writeFile(t, root, "wiki/payments/sources/fresh.md", "# Fresh\nwombat\n")

	s = openWith(&prog, nil)
	if prog[1] != 2 {
		t.Errorf("restart read %d files, want the 2 changed ones", prog[1])
	}
	full, err := Open(ctx, Options{Root: root, Wing: testWing, RescanInterval: -1, NoSnapshot: true, History: HistoryOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	same := func(a, b *Store) {
		t.Helper()
		la, _, _ := a.List("", "", 1000)
		lb, _, _ := b.List("", "", 1000)
		if !slices.Equal(la, lb) || len(la) != 40 {
			t.Fatalf("listing after restart (%d) differs from a full read (%d)", len(la), len(lb))
		}
		for _, q := range append(corpus.Queries(4, 2, 20), "quokka", "wombat", notes[1].Title) {
			ra, _ := a.Query(ctx, q, SearchOptions{Limit: 50})
			rb, _ := b.Query(ctx, q, SearchOptions{Limit: 50})
			if ra.Total != rb.Total || !reflect.DeepEqual(ra.Hits, rb.Hits) {
				t.Fatalf("%q after restart: %+v, full read: %+v", q, ra, rb)
			}
		}
		l1, err1 := a.Links("payments/facts/linked-note")
		l2, err2 := b.Links("payments/facts/linked-note")
		if err1 == nil || err2 == nil || !errors.Is(err1, ErrNotFound) {
			t.Fatalf("links of a missing note: %v %v", l1, l2)
		}
	}
	same(s, full)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A corrupt snapshot is refused with a warning, the wing is read in
	// full, and the snapshot is rewritten.
	data, _ := os.ReadFile(snap)
	data[len(data)/2] ^= 0xff
	os.WriteFile(snap, data, 0o644)
	var logs logcheck.Buffer
	s = openWith(&prog, &logs)
	if prog[1] != 40 || len(logs.Lines("store: the index snapshot is unusable; reading every note (it is rebuilt)")) != 1 {
		t.Errorf("corrupt snapshot: read %d files, warnings %v", prog[1], logs.Lines("store: the index snapshot is unusable; reading every note (it is rebuilt)"))
	}
	same(s, full)
	s.Close()

	// Another wing's snapshot is refused too.
	other := filepath.Join(root, ".brainstem", "snapshots", "other.snapshot")
	os.Rename(snap, other)
	os.MkdirAll(filepath.Join(root, "wiki", "other"), 0o755)
	o, err := Open(ctx, Options{Root: root, Wing: "other", RescanInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != 0 {
		t.Errorf("wing other restored %d notes from payments' snapshot", o.Len())
	}
	o.Close()
}

// FuzzReadSnapshot: the snapshot decoder refuses any corruption without
// panicking, and what it accepts is a usable index.
func FuzzReadSnapshot(f *testing.F) {
	root := f.TempDir()
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1, IndexDelay: -1})
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range corpus.Notes(2, 3) {
		if _, err := s.Create(context.Background(), NewNote{Title: n.Title, Body: n.Body, Hall: n.Hall, By: "a@example.com"}); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	data, err := os.ReadFile(filepath.Join(root, ".brainstem", "snapshots", "payments.snapshot"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:100])
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, notes, err := readSnapshot(bytes.NewReader(data), testWing)
		if err != nil {
			return
		}
		ix.Search("a b", index.Options{})
		for id := range notes {
			if !strings.HasPrefix(id, testWing+"/") {
				t.Fatalf("note %q of another wing accepted", id)
			}
		}
	})
}

// TestWatcherAppliesOutsideEdits: with the watcher (Linux), a note written,
// edited or removed behind the store's back reaches search without a
// rescan, and so do names that are not notes (as skipped files).
func TestWatcherAppliesOutsideEdits(t *testing.T) {
	root := t.TempDir()
	batches := make(chan struct{}, 100)
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: time.Hour,
		afterWatch: func() { batches <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.watcher == nil {
		t.Skip("no directory watcher on this platform")
	}
	ctx := context.Background()
	// waitFor waits for watched batches until cond holds (the watcher may
	// split one change over several batches).
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(30 * time.Second) // a failure bound, not a timing assertion
		for !cond() {
			select {
			case <-batches:
			case <-deadline:
				t.Fatalf("the watcher never applied: %s", what)
			}
		}
	}
	found := func(q string) bool {
		hits, _ := s.Search(ctx, q, SearchOptions{})
		return len(hits) == 1
	}
	writeFile(t, root, "wiki/payments/facts/late.md", "# Late\nelderberry\n")
	waitFor("a new note", func() bool { return found("elderberry") })
	writeFile(t, root, "wiki/payments/facts/late.md", "# Late\nfeijoa\n")
	waitFor("an edit", func() bool { return found("feijoa") && !found("elderberry") })
	os.Rename(filepath.Join(root, "wiki/payments/facts/late.md"), filepath.Join(root, "wiki/payments/decisions/late.md"))
	waitFor("a move", func() bool {
		hits, _ := s.Search(ctx, "feijoa", SearchOptions{})
		return len(hits) == 1 && hits[0].ID == "payments/decisions/late"
	})
	writeFile(t, root, "wiki/payments/decisions/Bad Name.md", "# Bad\nx\n")
	waitFor("a skipped file", func() bool { return s.SkippedCount(SkipName) == 1 })
	os.Remove(filepath.Join(root, "wiki/payments/decisions/late.md"))
	waitFor("a removal", func() bool { return !found("feijoa") && s.Len() == 0 })
	if err := s.SyncIndex(); err != nil {
		t.Fatal(err)
	}
	if toc := string(readFile(t, root, "wiki/payments/_index.md")); strings.Contains(toc, "late") {
		t.Errorf("_index.md still lists the removed note:\n%s", toc)
	}
}

// sameHit compares two hits whole (their flags included).
func sameHit(a, b search.Hit) bool { return reflect.DeepEqual(a, b) }

// searchHits is searchHit of each of hits.
func (s *Store) searchHits(hits []Hit) []search.Hit {
	out := make([]search.Hit, len(hits))
	for i, h := range hits {
		out[i] = s.searchHit(h)
	}
	return out
}
