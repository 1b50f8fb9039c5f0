package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/store/hits"
)

// openHitCache opens the test wing over root with the hit cache bounded by
// bound and a wall clock late enough that every file looks settled (out
// of the racy window), so that what searches hit is cached.
func openHitCache(t *testing.T, root string, bound int64) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, Now: newClock().now, RescanInterval: -1, IndexDelay: -1,
		wallNow: lateClock, HitCacheBytes: bound})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// searchOne returns the one hit of q.
func searchOne(t *testing.T, s *Store, q string) Hit {
	t.Helper()
	res, err := s.Query(context.Background(), q, SearchOptions{})
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("search %q: %+v %v", q, res.Hits, err)
	}
	return res.Hits[0]
}

// searchCached searches q twice: the second answer must come from memory
// and equal the first.
func searchCached(t *testing.T, s *Store, q string) {
	t.Helper()
	first := searchOne(t, s, q)
	before := s.HitCacheStats().Hits
	if second := searchOne(t, s, q); !reflect.DeepEqual(first, second) || s.HitCacheStats().Hits != before+1 {
		t.Fatalf("search %q from memory = %+v (hits %d → %d), want %+v", q, second, before, s.HitCacheStats().Hits, first)
	}
}

// wantFresh checks that the one hit of q is note id as its file is now:
// its title, its hash, and a snippet holding want.
func wantFresh(t *testing.T, s *Store, root, q, id, title, want string) {
	t.Helper()
	h := searchOne(t, s, q)
	raw := readFile(t, root, "wiki/"+id+".md")
	if h.ID != id || h.Title != title || h.Hash != sha(raw) || !strings.Contains(h.Snippet, want) {
		t.Fatalf("search %q = %+v, want %s titled %q hashed %s with %q", q, h, id, title, sha(raw), want)
	}
}

func TestHitCacheWrite(t *testing.T) {
	root := t.TempDir()
	s := openHitCache(t, root, 0)
	n := mustCreate(t, s, NewNote{Title: "Ledger", Body: "apples and kiwi\n", Hall: "facts"})
	searchCached(t, s, "kiwi")
	if _, err := s.Update(context.Background(), Change{ID: n.ID, Title: "Ledger two", Body: "apples and mango kiwi\n", Reason: "mango", By: "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	wantFresh(t, s, root, "kiwi", n.ID, "Ledger two", "mango")
}

func TestHitCacheMove(t *testing.T) {
	root := t.TempDir()
	s := openHitCache(t, root, 0)
	n := mustCreate(t, s, NewNote{Title: "Ledger", Body: "apples and kiwi\n", Hall: "facts"})
	searchCached(t, s, "kiwi")
	mv, err := s.Move(context.Background(), Relocation{ID: n.ID, Hall: "decisions", Reason: "a decision", By: "cur@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	wantFresh(t, s, root, "kiwi", mv.Note.ID, "Ledger", "kiwi")
	// A new note at the old id is not the moved one.
	mustCreate(t, s, NewNote{Title: "Ledger", Body: "pears\n", Hall: "facts"})
	wantFresh(t, s, root, "pears", n.ID, "Ledger", "pears")
}

func TestHitCacheRestore(t *testing.T) {
	root := t.TempDir()
	s := openHitCache(t, root, 0)
	ctx := context.Background()
	n := mustCreate(t, s, NewNote{Title: "Ledger", Body: "first kiwi\n", Hall: "facts"})
	if _, err := s.Update(ctx, Change{ID: n.ID, Body: "second kiwi\n", Reason: "second", By: "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	searchCached(t, s, "kiwi")
	h, err := s.Versions(ctx, n.ID, "", 10)
	if err != nil || len(h.Versions) != 2 {
		t.Fatalf("versions: %+v %v", h, err)
	}
	if _, _, _, err := s.Restore(ctx, Restoration{Ref: n.ID, Version: h.Versions[1].ID, Reason: "the first was right", By: "cur@example.com"}); err != nil {
		t.Fatal(err)
	}
	wantFresh(t, s, root, "kiwi", n.ID, "Ledger", "first")
}

func TestHitCacheRescan(t *testing.T) {
	root := t.TempDir()
	s := openHitCache(t, root, 0)
	n := mustCreate(t, s, NewNote{Title: "Ledger", Body: "apples and kiwi\n", Hall: "facts"})
	gone := mustCreate(t, s, NewNote{Title: "Doomed", Body: "durian kiwi\n", Hall: "failures"})
	searchCached(t, s, "apples")
	searchCached(t, s, "durian")
	writeFile(t, root, n.Path, "---\ntitle: Ledger rescanned\n---\napples and figs\n")
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(gone.Path))); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantFresh(t, s, root, "apples", n.ID, "Ledger rescanned", "figs")
	if ids := hitIDs(t, s, "durian"); len(ids) != 0 {
		t.Fatalf("a note removed and rescanned is still found: %v", ids)
	}
}

// TestHitCacheBehindTheShard: a file rewritten in place behind the shard
// (same inode, same size), with no rescan and no watcher, is rendered as
// it is now.
func TestHitCacheBehindTheShard(t *testing.T) {
	root := t.TempDir()
	s := openHitCache(t, root, 0)
	writeFile(t, root, "wiki/payments/facts/ledger.md", "---\ntitle: Ledger one\n---\napples and kiwi\n")
	if err := s.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	searchCached(t, s, "apples")
	time.Sleep(2 * time.Millisecond) // a new mtime, however fine the file system's clock
	writeFile(t, root, "wiki/payments/facts/ledger.md", "---\ntitle: Ledger two\n---\napples and plum\n")
	wantFresh(t, s, root, "apples", "payments/facts/ledger", "Ledger two", "plum")
	wantFresh(t, s, root, "apples", "payments/facts/ledger", "Ledger two", "plum")
}

// TestHitCacheRacyNotCached: a file whose mtime is within the racy window
// of when it was read is never served from memory.
func TestHitCacheRacyNotCached(t *testing.T) {
	s, _ := newStore(t) // the real wall clock: the note was just written
	mustCreate(t, s, NewNote{Title: "Ledger", Body: "apples and kiwi\n", Hall: "facts"})
	searchOne(t, s, "kiwi")
	searchOne(t, s, "kiwi")
	if st := s.HitCacheStats(); st.Entries != 0 || st.Hits != 0 {
		t.Fatalf("a racy version was cached: %+v", st)
	}
}

// TestHitCacheLargeNote: a note over the entry limit is not held; the
// miss path renders it from a window of its file.
func TestHitCacheLargeNote(t *testing.T) {
	root := t.TempDir()
	s := openHitCache(t, root, 1<<20) // entries up to 128 KiB
	big := strings.Repeat("filler words here\n", 10000) + "a zebracorn appears\n" + strings.Repeat("more filler\n", 1000)
	writeFile(t, root, "wiki/payments/facts/big.md", "---\ntitle: Big\n---\n"+big)
	writeFile(t, root, "wiki/payments/facts/small.md", "---\ntitle: Small\n---\nsmall kiwi\n")
	if err := s.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wantFresh(t, s, root, "zebracorn", "payments/facts/big", "Big", "a zebracorn appears")
	}
	if st := s.HitCacheStats(); st.Entries != 0 || st.Hits != 0 {
		t.Fatalf("a note over the limit was cached: %+v", st)
	}
	searchCached(t, s, "kiwi")
	if st := s.HitCacheStats(); st.Entries != 1 || st.Bytes <= 0 || st.Bytes > 1<<20 {
		t.Fatalf("stats %+v", st)
	}
}

// TestHitCacheRendersAsFiles: for random notes and queries, a store with
// the hit cache answers exactly as one without, first (filling) and again
// (from memory).
func TestHitCacheRendersAsFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	words := []string{"tcp", "socket", "timeout", "kiwi", "ünïcödé", "日本語", "naïve", "a", "retry", "budget", "—", "x_y", "TCP", "Socket's"}
	gaps := []string{" ", " ", " ", "\n", "\n\n", "  \t ", ", ", ". ", "\n# ", "\n- "}
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(gaps[rng.IntN(len(gaps))])
		}
		return b.String()
	}
	plain, cached := t.TempDir(), t.TempDir()
	for i := range 40 {
		n := rng.IntN(60) + 1
		if i%8 == 0 {
			n = 4000 + rng.IntN(4000) // over the entry limit of a 256 KiB bound
		}
		content := text(n) + "\n"
		if rng.IntN(3) > 0 {
			content = "---\ntitle: " + text(3) + "\n---\n" + content
		}
		rel := fmt.Sprintf("wiki/%s/%s/n%d.md", testWing, []string{"facts", "decisions", "sources"}[i%3], i)
		writeFile(t, plain, rel, content)
		writeFile(t, cached, rel, content)
	}
	a := openHitCache(t, plain, -1)
	b := openHitCache(t, cached, 256<<10)
	ctx := context.Background()
	found := 0
	for range 80 {
		q := text(rng.IntN(3) + 1)
		opt := SearchOptions{Limit: 20, SnippetRunes: []int{0, 5, 8, 30, 200, 700}[rng.IntN(6)]}
		want, err := a.Query(ctx, q, opt)
		if err != nil {
			t.Fatal(err)
		}
		found += len(want.Hits)
		for pass := range 2 {
			got, err := b.Query(ctx, q, opt)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("query %q %+v, pass %d:\n got %+v %v\nwant %+v", q, opt, pass, got, err, want)
			}
		}
	}
	if st := b.HitCacheStats(); st.Hits == 0 || st.Entries == 0 || found < 100 {
		t.Fatalf("%d hits, served from memory: %+v", found, st)
	}
	if st := a.HitCacheStats(); st != (hits.Stats{}) {
		t.Fatalf("a store without a hit cache holds %+v", st)
	}
}

// BenchmarkRenderHits: a query of 10 hits (of 200 matching notes among
// 2,000 of about 4 KB, so rendering is a large part of its cost),
// with the hit cache (rendered from memory) and without (each hit opens
// and reads its file).
func BenchmarkRenderHits(b *testing.B) {
	root := b.TempDir()
	body := strings.Repeat("the socket closes after a timeout and the client retries\n", 70)
	for i := range 2000 {
		rel := fmt.Sprintf("wiki/%s/facts/n%d.md", testWing, i)
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("---\ntitle: Note %d\n---\n%s tcp%d\n", i, body, i%10)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name  string
		bound int64
	}{{"uncached", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1, wallNow: lateClock, HitCacheBytes: bc.bound, NoSnapshot: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			opt := SearchOptions{Limit: 10}
			if _, err := s.Query(context.Background(), "tcp3", opt); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := s.Query(context.Background(), "tcp3", opt); err != nil || len(res.Hits) != 10 {
					b.Fatalf("%d hits, %v", len(res.Hits), err)
				}
			}
		})
	}
}
