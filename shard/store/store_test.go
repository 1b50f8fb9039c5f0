package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/store/sessionlog"
	"github.com/brainstem/brainstem/shard/store/toc"
)

const testWing = "payments"

// clock is an injected clock that advances one second per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// openAt opens the test wing over root with the rescanner and the watcher
// disabled and _index.md written through, so that every test sees the
// effect of a call when it returns.
func openAt(t *testing.T, root string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, Now: newClock().now, RescanInterval: -1, IndexDelay: -1})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	return openAt(t, root), root
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readFile(t *testing.T, root, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, s *Store, n NewNote) *Note {
	t.Helper()
	if n.By == "" {
		n.By = "ann@example.com"
	}
	got, err := s.Create(context.Background(), n)
	if err != nil {
		t.Fatalf("Create(%+v): %v", n, err)
	}
	return got
}

func TestOpenValidates(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		opt  Options
	}{
		{"bad wing", Options{Root: root, Wing: "Bad/Wing"}},
		{"empty wing", Options{Root: root, Wing: ""}},
		{"missing root", Options{Root: filepath.Join(root, "nope"), Wing: "w"}},
		{"root is a file", Options{Root: file, Wing: "w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opt.RescanInterval = -1
			if s, err := Open(context.Background(), tt.opt); err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestOpenCreatesLayoutAndCleansTemps(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "wiki/payments/facts/.tmp-123", "torn")
	writeFile(t, root, "inbox/payments/.tmp-9", "torn")
	writeFile(t, root, "wiki/payments/facts/kept.md", "---\ntitle: Kept\n---\nbody\n")
	var calls [][2]int
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1,
		Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []string{"wiki/payments/facts", "wiki/payments/decisions", "wiki/payments/failures",
		"wiki/payments/hypotheses", "wiki/payments/sources", "inbox/payments", "sessions/payments"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
	for _, p := range []string{"wiki/payments/facts/.tmp-123", "inbox/payments/.tmp-9"} {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still present after Open", p)
		}
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1", s.Len())
	}
	if len(calls) == 0 || calls[len(calls)-1] != [2]int{1, 1} {
		t.Errorf("progress calls = %v, want to end with [1 1]", calls)
	}
	if !bytes.Contains(readFile(t, root, "wiki/payments/_index.md"), []byte("[[payments/facts/kept]] — Kept")) {
		t.Error("_index.md does not list the existing note")
	}
}

func TestCreateAndGet(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	n := mustCreate(t, s, NewNote{Title: "Use idempotency keys", Body: "Retries are safe.\n", Hall: "decisions", Tags: []string{"api", "reliability"}})
	if n.ID != "payments/decisions/use-idempotency-keys" || n.Path != "wiki/payments/decisions/use-idempotency-keys.md" {
		t.Fatalf("id/path = %q %q", n.ID, n.Path)
	}
	raw := readFile(t, root, n.Path)
	want := "---\ntitle: Use idempotency keys\nwing: payments\nhall: decisions\ntags: [api, reliability]\ncreated_by: ann@example.com\ncreated_at: 2026-01-05T10:00:01Z\n---\nRetries are safe.\n"
	if string(raw) != want {
		t.Errorf("file =\n%s\nwant\n%s", raw, want)
	}
	if n.Hash != sha(raw) {
		t.Errorf("hash %s != sha256 of file %s", n.Hash, sha(raw))
	}
	for _, ref := range []string{n.ID, n.Path} {
		g, err := s.Get(ctx, ref)
		if err != nil {
			t.Fatalf("Get(%s): %v", ref, err)
		}
		if g.Hash != n.Hash || g.Body != "Retries are safe.\n" || g.Title != "Use idempotency keys" || g.ID != n.ID {
			t.Errorf("Get(%s) = %+v", ref, g)
		}
		if len(g.Fields) != 6 || g.Fields[3].Key != "tags" || !g.Fields[3].IsList || strings.Join(g.Fields[3].List, ",") != "api,reliability" {
			t.Errorf("fields = %+v", g.Fields)
		}
	}
	// Inbox note.
	in := mustCreate(t, s, NewNote{Title: "Maybe retry storms", Body: "Seen twice.", Inbox: true, Hall: "hypotheses"})
	if in.ID != "" || in.Name != "maybe-retry-storms" || in.Path != "inbox/payments/maybe-retry-storms.md" {
		t.Errorf("inbox note = %+v", in)
	}
	g, err := s.Get(ctx, in.Path)
	if err != nil || g.Hash != in.Hash || g.Get("hall") != "hypotheses" {
		t.Errorf("Get inbox = %+v, %v", g, err)
	}
	if s.Len() != 1 {
		t.Errorf("inbox notes must not be indexed: Len = %d", s.Len())
	}
}

func TestCreateErrors(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, NewNote{Title: "Taken", Body: "b", Hall: "facts"})
	writeFile(t, root, "inbox/payments/taken.md", "x")
	tests := []struct {
		name string
		n    NewNote
		want error
	}{
		{"exists", NewNote{Title: "Taken", Body: "other", Hall: "facts"}, ErrExists},
		{"inbox exists", NewNote{Title: "Taken", Body: "other", Inbox: true}, ErrExists},
		{"no hall", NewNote{Title: "T", Body: "b"}, ErrInvalid},
		{"bad hall", NewNote{Title: "T", Body: "b", Hall: "gossip"}, ErrInvalid},
		{"bad slug", NewNote{Title: "T", Body: "b", Hall: "facts", Slug: "../etc"}, ErrInvalid},
		{"reserved slug", NewNote{Title: "T", Body: "b", Hall: "facts", Slug: "_index"}, ErrInvalid},
		{"no slug from title", NewNote{Title: "!!!", Body: "b", Hall: "facts"}, ErrInvalid},
		{"blank title", NewNote{Title: " ", Body: "b", Hall: "facts"}, ErrInvalid},
		{"no author", NewNote{Title: "T", Body: "b", Hall: "facts", By: "-"}, ErrInvalid},
		{"too large", NewNote{Title: "Big", Body: strings.Repeat("x", DefaultMaxNoteBytes), Hall: "facts"}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.n
			switch n.By {
			case "":
				n.By = "ann@example.com"
			case "-":
				n.By = ""
			}
			before := snapshot(t, root)
			_, err := s.Create(ctx, n)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if after := snapshot(t, root); after != before {
				t.Errorf("a failed Create changed the brain:\n%s\n---\n%s", before, after)
			}
		})
	}
}

// snapshot renders every file of the brain (path and hash) for comparisons.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == ".git" || d.Name() == ".brainstem") {
			return filepath.SkipDir // history and the store's state: not the brain's files
		}
		if err != nil || d.IsDir() {
			return err
		}
		raw, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %s\n", filepath.ToSlash(rel), sha(raw))
		return nil
	})
	return b.String()
}

func TestConcurrentCreateOneWins(t *testing.T) {
	s, root := newStore(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Create(context.Background(), NewNote{Title: "Same", Body: fmt.Sprintf("writer %d\n", i), Hall: "facts", By: "ann@example.com"})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrExists):
			t.Errorf("unexpected error %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creators won, want 1", wins)
	}
	g, err := s.Get(context.Background(), "payments/facts/same")
	if err != nil || !strings.HasPrefix(g.Body, "writer ") {
		t.Fatalf("Get = %+v %v", g, err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "wiki/payments/facts"))
	if len(entries) != 1 {
		t.Errorf("hall holds %d files, want 1 (no temp files left)", len(entries))
	}
}

func TestUpdate(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	orig := "---\ntitle: Retry policy\nwing: payments\nhall: decisions\n# a comment that must survive\ncustom_field: kept as is   # trailing\ncreated_by: bob@example.com\ncreated_at: 2025-12-01T09:00:00Z\n---\nOld body.\n"
	writeFile(t, root, "wiki/payments/decisions/retry-policy.md", orig)
	if err := s.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	prior := sha([]byte(orig))
	n, err := s.Update(ctx, Change{ID: "payments/decisions/retry-policy", Body: "New body.\n", Reason: "measured", ExpectedHash: prior, By: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	want := "---\ntitle: Retry policy\nwing: payments\nhall: decisions\n# a comment that must survive\ncustom_field: kept as is   # trailing\ncreated_by: bob@example.com\ncreated_at: 2025-12-01T09:00:00Z\nupdated_by: ann@example.com\nupdated_at: 2026-01-05T10:00:01Z\nsupersedes: " + prior + "\nsupersede_reason: measured\n---\nNew body.\n"
	got := readFile(t, root, n.Path)
	if string(got) != want {
		t.Errorf("updated file =\n%s\nwant\n%s", got, want)
	}
	if n.Hash != sha(got) {
		t.Error("returned hash is not the file's")
	}
	// Title change, no expected hash.
	n2, err := s.Update(ctx, Change{ID: n.Path, Body: "Newer.\n", Reason: "again", Title: "Retry policy v2", By: "cy@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := s.Get(ctx, n.ID)
	if g.Title != "Retry policy v2" || g.Get(KeySupersedes) != n.Hash || g.Get(KeyUpdatedBy) != "cy@example.com" || g.Get(KeyCreatedAt) != "2025-12-01T09:00:00Z" || g.Hash != n2.Hash {
		t.Errorf("after second update: %+v", g.Fields)
	}
	if !bytes.Contains(readFile(t, root, "wiki/payments/_index.md"), []byte("— Retry policy v2\n")) {
		t.Error("_index.md did not follow the title change")
	}

	before := snapshot(t, root)
	tests := []struct {
		name string
		c    Change
		want error
	}{
		{"conflict", Change{ID: n.ID, Body: "x", Reason: "r", ExpectedHash: prior}, ErrConflict},
		{"not found", Change{ID: "payments/facts/nope", Body: "x", Reason: "r"}, ErrNotFound},
		{"other wing", Change{ID: "billing/facts/x", Body: "x", Reason: "r"}, ErrForbidden},
		{"bad id", Change{ID: "payments/../x", Body: "x", Reason: "r"}, ErrInvalid},
		{"no reason", Change{ID: n.ID, Body: "x"}, ErrInvalid},
		{"too large", Change{ID: n.ID, Body: strings.Repeat("x", DefaultMaxNoteBytes), Reason: "r"}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.By = "ann@example.com"
			_, err := s.Update(ctx, tt.c)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == ErrConflict && !strings.Contains(err.Error(), n2.Hash) {
				t.Errorf("conflict message %q does not name the current hash", err)
			}
		})
	}
	if snapshot(t, root) != before {
		t.Error("failed updates changed the brain")
	}
}

func TestPromote(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	in := mustCreate(t, s, NewNote{Title: "Card retries", Body: "See [[billing/facts/card-networks]] and [[facts/limits]].\n", Inbox: true, Hall: "facts", Tags: []string{"cards"}})
	mustCreate(t, s, NewNote{Title: "Taken", Body: "b", Hall: "facts"})
	mustCreate(t, s, NewNote{Title: "Taken", Body: "inbox", Inbox: true})

	before := snapshot(t, root)
	errTests := []struct {
		name, inbox, hall, slug string
		want                    error
	}{
		{"bad hall first", "no-such-note", "gossip", "", ErrInvalid},
		{"missing inbox note", "no-such-note", "facts", "", ErrNotFound},
		{"slug collision", "taken", "facts", "", ErrExists},
		{"bad slug", "card-retries", "facts", "Bad Slug", ErrInvalid},
		{"bad name", "../x", "facts", "", ErrInvalid},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.Promote(ctx, Promotion{Name: tt.inbox, Hall: tt.hall, Slug: tt.slug, By: "cur@example.com"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if snapshot(t, root) != before {
		t.Fatal("failed promotions changed the brain")
	}

	n, tunnels, err := s.Promote(ctx, Promotion{Name: in.Name, Hall: "decisions", By: "cur@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != "payments/decisions/card-retries" || strings.Join(tunnels, ",") != "billing/facts/card-networks" {
		t.Errorf("promoted %s tunnels %v", n.ID, tunnels)
	}
	if _, err := os.Stat(filepath.Join(root, in.Path)); !errors.Is(err, os.ErrNotExist) {
		t.Error("inbox file still present after promotion")
	}
	g, err := s.Get(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g.Get(KeyHall) != "decisions" || g.Get(KeyPromotedBy) != "cur@example.com" || g.Get(KeyPromotedAt) == "" || g.Get(KeyCreatedBy) != "ann@example.com" || g.Hash != n.Hash {
		t.Errorf("promoted fields = %+v", g.Fields)
	}
	if !bytes.Contains(readFile(t, root, "wiki/payments/_index.md"), []byte("[[payments/decisions/card-retries]] — Card retries")) {
		t.Error("_index.md does not list the promoted note")
	}
	if hits, _ := s.Search(ctx, "retries", SearchOptions{}); len(hits) != 1 || hits[0].ID != n.ID {
		t.Errorf("search after promote = %+v", hits)
	}
}

func TestLinks(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, NewNote{Title: "A", Body: "to [[facts/b]], [[payments/facts/c|see c]], [[billing/decisions/x#why]], [[facts/b]] again, [[not a link]], [[facts/Bad Slug]]", Hall: "facts"})
	mustCreate(t, s, NewNote{Title: "B", Body: "back to [[payments/facts/a]]", Hall: "facts"})
	mustCreate(t, s, NewNote{Title: "C", Body: "nothing", Hall: "facts"})
	l, err := s.Links("payments/facts/a")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Outbound, ","); got != "payments/facts/b,payments/facts/c,billing/decisions/x" {
		t.Errorf("outbound = %s", got)
	}
	if got := strings.Join(l.Tunnels, ","); got != "billing/decisions/x" {
		t.Errorf("tunnels = %s", got)
	}
	if got := strings.Join(l.Backlinks, ","); got != "payments/facts/b" {
		t.Errorf("backlinks = %s", got)
	}
	lc, _ := s.Links("payments/facts/c")
	if strings.Join(lc.Backlinks, ",") != "payments/facts/a" || len(lc.Outbound) != 0 || lc.Tunnels == nil {
		t.Errorf("links of c = %+v", lc)
	}
	// An update that drops the link drops the backlink.
	if _, err := s.Update(ctx, Change{ID: "payments/facts/a", Body: "no links", Reason: "r", By: "ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	lc, _ = s.Links("payments/facts/c")
	if len(lc.Backlinks) != 0 {
		t.Errorf("backlinks of c after update = %v", lc.Backlinks)
	}
	if _, err := s.Links("payments/facts/zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Links of missing note: %v", err)
	}
}

func TestTOCDeterministic(t *testing.T) {
	s, root := newStore(t)
	for _, n := range []NewNote{
		{Title: "Zeta", Body: "z", Hall: "facts"},
		{Title: "Alpha", Body: "a", Hall: "facts"},
		{Title: "Pick Postgres", Body: "p", Hall: "decisions"},
	} {
		mustCreate(t, s, n)
	}
	want := toc.Header + "# payments\n\n## facts\n\n- [[payments/facts/alpha]] — Alpha\n- [[payments/facts/zeta]] — Zeta\n\n## decisions\n\n- [[payments/decisions/pick-postgres]] — Pick Postgres\n\n## failures\n\n_No notes yet._\n\n## hypotheses\n\n_No notes yet._\n\n## sources\n\n_No notes yet._\n"
	if got := string(readFile(t, root, "wiki/payments/_index.md")); got != want {
		t.Errorf("_index.md =\n%s\nwant\n%s", got, want)
	}
	// Reopening over the same files yields the same bytes and does not
	// rewrite an identical file.
	fi1, _ := os.Stat(filepath.Join(root, "wiki/payments/_index.md"))
	s.Close()
	openAt(t, root)
	fi2, _ := os.Stat(filepath.Join(root, "wiki/payments/_index.md"))
	if got := string(readFile(t, root, "wiki/payments/_index.md")); got != want {
		t.Errorf("after reopen _index.md =\n%s", got)
	}
	if !fi1.ModTime().Equal(fi2.ModTime()) {
		t.Error("identical _index.md rewritten on Open")
	}
}

func TestExternalEdits(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	n := mustCreate(t, s, NewNote{Title: "Ledger", Body: "apples\n", Hall: "facts"})
	edited := "---\ntitle: Ledger renamed\n---\nbananas [[facts/other]]\n"
	writeFile(t, root, n.Path, edited)

	// Get is never stale, even before any rescan.
	g, err := s.Get(ctx, n.ID)
	if err != nil || g.Hash != sha([]byte(edited)) || g.Body != "bananas [[facts/other]]\n" {
		t.Fatalf("Get after external edit = %+v, %v", g, err)
	}
	// New file, deleted file, edited _index.md, then Rescan.
	writeFile(t, root, "wiki/payments/sources/rfc.md", "# The RFC\ncherries\n")
	mustCreate(t, s, NewNote{Title: "Doomed", Body: "durian", Hall: "failures"})
	os.Remove(filepath.Join(root, "wiki/payments/failures/doomed.md"))
	writeFile(t, root, "wiki/payments/_index.md", "garbage")
	writeFile(t, root, "wiki/payments/facts/.tmp-x.md", "ignored")
	writeFile(t, root, "wiki/payments/facts/Not A Slug.md", "ignored")
	if err := s.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	search := func(q string) string {
		hits, err := s.Search(ctx, q, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID+"="+h.Title)
		}
		return strings.Join(ids, ",")
	}
	for q, want := range map[string]string{
		"apples": "", "bananas": "payments/facts/ledger=Ledger renamed", "cherries": "payments/sources/rfc=The RFC",
		"durian": "", "ignored": "",
	} {
		if got := search(q); got != want {
			t.Errorf("search %q = %q, want %q", q, got, want)
		}
	}
	toc := string(readFile(t, root, "wiki/payments/_index.md"))
	if !strings.Contains(toc, "[[payments/facts/ledger]] — Ledger renamed") || !strings.Contains(toc, "[[payments/sources/rfc]] — The RFC") || strings.Contains(toc, "doomed") {
		t.Errorf("_index.md after rescan:\n%s", toc)
	}
	if l, err := s.Links("payments/facts/other"); err == nil {
		t.Errorf("links of a missing note = %+v", l)
	}
	if l, _ := s.Links(n.ID); strings.Join(l.Outbound, ",") != "payments/facts/other" {
		t.Errorf("outbound after external edit = %v", l.Outbound)
	}
}

func TestRescannerRunsInBackground(t *testing.T) {
	root := t.TempDir()
	passes := make(chan struct{})
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: time.Millisecond,
		afterPass: func() {
			select {
			case passes <- struct{}{}:
			default: // nobody waiting
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeFile(t, root, "wiki/payments/facts/late.md", "# Late\nelderberry\n")
	// The first pass to complete may have started before the write; the
	// second one started after it.
	<-passes
	<-passes
	if hits, _ := s.Search(context.Background(), "elderberry", SearchOptions{}); len(hits) != 1 {
		t.Fatalf("the background rescanner did not index the new file: %+v", hits)
	}
	if !bytes.Contains(readFile(t, root, "wiki/payments/_index.md"), []byte("[[payments/facts/late]] — Late")) {
		t.Error("the background rescanner did not update _index.md")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), "payments/facts/late"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}

func TestSymlinksRefused(t *testing.T) {
	s, root := newStore(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.md"), []byte("# Secret\nclassified\n"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "wiki/payments/facts/secret.md")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	if err := s.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hits, _ := s.Search(context.Background(), "classified", SearchOptions{}); len(hits) != 0 {
		t.Error("a symlinked note was indexed")
	}
	if _, err := s.Get(context.Background(), "payments/facts/secret"); err == nil {
		t.Error("Get followed a symlink")
	}
}

func TestSessionAppend(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		path, line, err := s.AppendSession(ctx, "s-1", "ann@example.com", json.RawMessage(fmt.Sprintf(`{ "step" : %d }`, i)), nil)
		if err != nil || line != i || path != "sessions/payments/s-1.jsonl" {
			t.Fatalf("append %d = %s %d %v", i, path, line, err)
		}
	}
	got := string(readFile(t, root, "sessions/payments/s-1.jsonl"))
	want := `{"at":"2026-01-05T10:00:01Z","by":"ann@example.com","entry":{"step":1}}` + "\n" +
		`{"at":"2026-01-05T10:00:02Z","by":"ann@example.com","entry":{"step":2}}` + "\n" +
		`{"at":"2026-01-05T10:00:03Z","by":"ann@example.com","entry":{"step":3}}` + "\n"
	if got != want {
		t.Errorf("log =\n%s\nwant\n%s", got, want)
	}
	// A torn last line (crash mid-append) and an external append: the next
	// line starts on its own line and the count comes from the file.
	f, _ := os.OpenFile(filepath.Join(root, "sessions/payments/s-1.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"torn":`)
	f.Close()
	_, line, err := s.AppendSession(ctx, "s-1", "ann@example.com", json.RawMessage(`{"step":4}`), nil)
	if err != nil || line != 5 {
		t.Fatalf("append after torn line = %d %v", line, err)
	}
	if got := string(readFile(t, root, "sessions/payments/s-1.jsonl")); !strings.HasSuffix(got, "{\"torn\":\n{\"at\":\"2026-01-05T10:00:04Z\",\"by\":\"ann@example.com\",\"entry\":{\"step\":4}}\n") {
		t.Errorf("log after torn line:\n%s", got)
	}
	for _, tt := range []struct {
		name, session, entry string
		want                 error
	}{
		{"bad session", "../x", `{}`, ErrInvalid},
		{"dot session", ".hidden", `{}`, ErrInvalid},
		{"not an object", "s", `[1]`, ErrInvalid},
		{"not json", "s", `{`, ErrInvalid},
		{"too large", "s", `{"a":"` + strings.Repeat("x", sessionlog.MaxEntryBytes) + `"}`, ErrTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := s.AppendSession(ctx, tt.session, "ann@example.com", json.RawMessage(tt.entry), nil); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "sessions/payments/s.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused entry created a log")
	}
}

func TestPendingOrder(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	if p, err := s.Pending(ctx, 0); err != nil || p == nil || len(p) != 0 {
		t.Fatalf("empty inbox = %#v, %v", p, err)
	}
	writeFile(t, root, "inbox/payments/b-late.md", "---\ntitle: Late\ncreated_at: 2026-03-01T00:00:00Z\ncreated_by: x@example.com\n---\nlate body\n")
	writeFile(t, root, "inbox/payments/a-early.md", "---\ntitle: Early\ncreated_at: 2026-02-01T00:00:00Z\n---\n"+strings.Repeat("é", 300))
	writeFile(t, root, "inbox/payments/c-same.md", "---\ncreated_at: 2026-02-01T00:00:00Z\n---\n# Same time\n")
	writeFile(t, root, "inbox/payments/.tmp-1", "ignored")
	p, err := s.Pending(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range p {
		names = append(names, x.Name)
	}
	if strings.Join(names, ",") != "a-early,c-same,b-late" {
		t.Errorf("order = %v", names)
	}
	if p[0].Excerpt != strings.Repeat("é", 200) || p[1].Title != "Same time" || p[2].CreatedBy != "x@example.com" || p[2].Path != "inbox/payments/b-late.md" {
		t.Errorf("pending = %+v", p)
	}
	if p, _ := s.Pending(ctx, 1); len(p) != 1 {
		t.Errorf("limit 1 gave %d", len(p))
	}
}

func TestListPaging(t *testing.T) {
	s, _ := newStore(t)
	for i := range 7 {
		hall := []string{"facts", "decisions"}[i%2]
		mustCreate(t, s, NewNote{Title: fmt.Sprintf("Note %d", i), Body: "b", Hall: hall})
	}
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		es, next, err := s.List("", cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			all = append(all, e.ID)
		}
		if next == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		cursor = next
	}
	want := "payments/decisions/note-1,payments/decisions/note-3,payments/decisions/note-5,payments/facts/note-0,payments/facts/note-2,payments/facts/note-4,payments/facts/note-6"
	if strings.Join(all, ",") != want {
		t.Errorf("ids = %v", all)
	}
	es, next, _ := s.List("facts", "", 10)
	if len(es) != 4 || next != "" || es[0].UpdatedAt == "" || es[0].Title != "Note 0" {
		t.Errorf("facts = %+v next %q", es, next)
	}
	for _, c := range []string{"!!", "Zm9v"} {
		if _, _, err := s.List("", c, 3); !errors.Is(err, ErrInvalid) {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
}

func FuzzParseLinks(f *testing.F) {
	for _, s := range []string{"[[a/b/c]]", "[[facts/x|y]] [[w/h/s#a]]", "[[", "]][[x]]", "[[facts/" + strings.Repeat("a", 100) + "]]", "[[../../etc/passwd]]"} {
		f.Add(s)
	}
	s := &Store{wing: testWing}
	f.Fuzz(func(t *testing.T, body string) {
		links := s.parseLinks(body)
		seen := map[string]bool{}
		for _, l := range links {
			if seen[l] {
				t.Fatalf("duplicate link %q", l)
			}
			seen[l] = true
			if strings.Count(l, "/") != 2 || strings.Contains(l, "..") {
				t.Fatalf("link %q is not a note id", l)
			}
		}
		for _, tun := range s.tunnelsOf(links) {
			if strings.HasPrefix(tun, testWing+"/") {
				t.Fatalf("tunnel %q into own wing", tun)
			}
		}
	})
}

// Notes written by hand (no frontmatter, or a broken one) are indexed,
// can be promoted and updated (the store adds a header), or are refused
// for editing when the header cannot be edited safely.
func TestHandWrittenNotes(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	writeFile(t, root, "inbox/payments/plain.md", "# Plain idea\nNo frontmatter at all.\n")
	n, _, err := s.Promote(ctx, Promotion{Name: "plain", Hall: "facts", By: "cur@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := s.Get(ctx, n.ID)
	if g.Title != "Plain idea" || g.Get(KeyTitle) != "Plain idea" || g.Get(KeyPromotedBy) != "cur@example.com" || g.Body != "# Plain idea\nNo frontmatter at all.\n" {
		t.Errorf("promoted plain note = %q", g.Raw)
	}
	writeFile(t, root, "wiki/payments/facts/bare.md", "just text\n")
	writeFile(t, root, "wiki/payments/facts/broken.md", "---\ntitle: [unclosed\n---\nbody\n")
	if err := s.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, Change{ID: "payments/facts/bare", Body: "more text\n", Reason: "r", By: "ann@example.com"}); err != nil {
		t.Errorf("update of a note without frontmatter: %v", err)
	}
	before := string(readFile(t, root, "wiki/payments/facts/broken.md"))
	if _, err := s.Update(ctx, Change{ID: "payments/facts/broken", Body: "x", Reason: "r", By: "ann@example.com"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("update of a broken header: %v", err)
	}
	if string(readFile(t, root, "wiki/payments/facts/broken.md")) != before {
		t.Error("refused update changed the file")
	}
	b, err := s.Get(ctx, "payments/facts/broken")
	if err != nil || b.FrontmatterErr == nil || len(b.Fields) != 0 || b.Body != before || b.Title != "broken" {
		t.Errorf("Get broken = %+v %v", b, err)
	}
}

// With IndexDelay, _index.md is written behind: Rescan and Close bring it
// up to date, and the notes are durable and searchable at once.
func TestIndexWriteBehind(t *testing.T) {
	root := t.TempDir()
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1, IndexDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	toc := func() string { return string(readFile(t, root, "wiki/payments/_index.md")) }
	for _, title := range []string{"First", "Second"} {
		n := mustCreate(t, s, NewNote{Title: title, Body: "fig", Hall: "facts"})
		if hits, _ := s.Search(ctx, "fig", SearchOptions{}); len(hits) == 0 || string(readFile(t, root, n.Path)) == "" {
			t.Fatal("note not durable and searchable on return")
		}
	}
	if err := s.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := toc(); !strings.Contains(got, "[[payments/facts/first]]") || !strings.Contains(got, "[[payments/facts/second]]") {
		t.Errorf("_index.md after Rescan:\n%s", got)
	}
	mustCreate(t, s, NewNote{Title: "Third", Body: "b", Hall: "facts"})
	if _, _, err := s.Promote(ctx, Promotion{Name: mustCreate(t, s, NewNote{Title: "Fourth", Body: "b", Inbox: true}).Name, Hall: "decisions", By: "cur@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := toc(); !strings.Contains(got, "[[payments/facts/third]]") || !strings.Contains(got, "[[payments/decisions/fourth]]") {
		t.Errorf("_index.md after Close:\n%s", got)
	}
}

// A hall directory replaced by a link after search has verified it once
// (verifiedHallDir remembers it) is refused: search shows nothing from the
// link's target, and finds the note again once the directory is back.
func TestHallReplacedByLinkAfterSearch(t *testing.T) {
	root := t.TempDir()
	const note = "# Card\ncard retries happen nightly\n"
	writeFile(t, root, "wiki/payments/facts/card.md", note)
	s := openAt(t, root)
	ctx := context.Background()
	if hits, err := s.Search(ctx, "retries", SearchOptions{}); err != nil || len(hits) != 1 {
		t.Fatalf("search before = %+v %v", hits, err)
	}
	hall := filepath.Join(root, "wiki/payments/facts")
	moved := filepath.Join(t.TempDir(), "facts")
	if err := os.Rename(hall, moved); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "facts")
	writeFile(t, outside, "card.md", "# Card\ncard retries classified\n")
	if err := os.Symlink(outside, hall); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	hits, err := s.Search(ctx, "retries", SearchOptions{})
	if err != nil { // a hit under a refused hall is left out, not an error
		t.Fatalf("search through a linked hall: %v", err)
	}
	for _, h := range hits {
		if strings.Contains(h.Snippet+h.Title, "classified") {
			t.Fatalf("search read through the link: %+v", h)
		}
	}
	if len(hits) != 0 {
		t.Errorf("search through a linked hall = %+v, want nothing", hits)
	}
	if err := os.Remove(hall); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, hall); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(ctx, "retries", SearchOptions{}); err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, "nightly") {
		t.Errorf("search after the directory is back = %+v %v", hits, err)
	}
}
