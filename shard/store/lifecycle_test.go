package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"

	"github.com/brainstem/brainstem/tooling/diskgrep"
)

func openPurging(t *testing.T, root, state string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, Now: newClock().now, RescanInterval: -1, IndexDelay: -1,
		StateDir: state, History: HistoryOptions{AllowPurge: true}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func wantCode(t *testing.T, what string, err error, code brain.Code) {
	t.Helper()
	e, ok := brain.As(err)
	if !ok || e.Code != code {
		t.Fatalf("%s: %v, want code %s", what, err, code)
	}
}

func hitIDs(t *testing.T, s *Store, q string) []string {
	t.Helper()
	res, err := s.Query(context.Background(), q, SearchOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

func listed(t *testing.T, s *Store, id string) bool {
	t.Helper()
	es, _, err := s.List("", "", 200)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.ID == id {
			return true
		}
	}
	return false
}

// TestLifecycle: versions, an old version and a diff, restore, archive and
// its way back, move with its links, each checked through the store's
// reads and the files.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	const id = testWing + "/decisions/retries"
	mustCreate(t, s, NewNote{Title: "Retries", Hall: "decisions", Body: "first body kiwi", By: "ann@example.com", Prov: Provenance{Tool: "brain_write"}})
	mustCreate(t, s, NewNote{Title: "Linker", Hall: "facts", Body: "see [[decisions/retries]] and [[" + id + "|alias]]", By: "ann@example.com"})
	for i, body := range []string{"second body mango", "third body papaya"} {
		by := []string{"bob@example.com", "cy@example.com"}[i]
		if _, err := s.Update(ctx, Change{ID: id, Body: body, Reason: "reason " + by, By: by, Prov: Provenance{Tool: "brain_update"}}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.Versions(ctx, id, "", 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Versions) != 3 || h.Ref != id {
		t.Fatalf("versions: %+v", h)
	}
	for i, want := range []struct{ by, action, reason string }{
		{"cy@example.com", ActionUpdate, "reason cy@example.com"},
		{"bob@example.com", ActionUpdate, "reason bob@example.com"},
		{"ann@example.com", ActionCreate, ""},
	} {
		v := h.Versions[i]
		if v.Author != want.by || v.Action != want.action || v.Reason != want.reason {
			t.Errorf("version %d: %+v, want %+v", i, v, want)
		}
	}
	first := h.Versions[2]
	n, v, err := s.GetVersion(ctx, id, first.ID)
	if err != nil || !strings.Contains(n.Body, "first body kiwi") || v.ContentHash != n.Hash {
		t.Fatalf("GetVersion: %v %+v %+v", err, n, v)
	}
	d, err := s.Diff(ctx, id, first.ID, "", 1<<16)
	if err != nil || !strings.Contains(d.Text, "-first body kiwi") || !strings.Contains(d.Text, "+third body papaya") || d.Cut {
		t.Fatalf("Diff: %v %+v", err, d)
	}
	if _, _, err := s.GetVersion(ctx, id, strings.Repeat("0", 40)); err == nil {
		t.Fatal("an unknown version was read")
	}

	// Restore the first version: its bytes come back as a new version.
	rn, from, unchanged, err := s.Restore(ctx, Restoration{Ref: id, Version: first.ID, Reason: "the first was right", By: "dee@example.com"})
	if err != nil || unchanged || from.ID != first.ID || rn.Hash != first.ContentHash {
		t.Fatalf("Restore: %v unchanged=%v from=%+v hash %s want %s", err, unchanged, from, rn.Hash, first.ContentHash)
	}
	if got := hitIDs(t, s, "kiwi"); len(got) != 1 || got[0] != id {
		t.Fatalf("search after restore: %v", got)
	}
	if _, _, unchanged, err := s.Restore(ctx, Restoration{Ref: id, Version: first.ID, Reason: "again", By: "dee@example.com"}); err != nil || !unchanged {
		t.Fatalf("restoring the content the note has: unchanged=%v err=%v", unchanged, err)
	}

	// Archive: gone from the file system, search, lists and _index.md.
	_, err = s.Archive(ctx, Archival{Ref: id, Reason: "", By: "cur@example.com"})
	wantCode(t, "a blank reason", err, brain.CodeInvalidArgument)
	_, err = s.Archive(ctx, Archival{Ref: id, Reason: "outdated", ExpectedHash: strings.Repeat("a", 64), By: "cur@example.com"})
	wantCode(t, "a stale expected_hash", err, brain.CodeConflict)
	a, err := s.Archive(ctx, Archival{Ref: id, Reason: "outdated", By: "cur@example.com"})
	if err != nil || len(a.LinkedFrom) != 1 || a.LinkedFrom[0] != testWing+"/facts/linker" {
		t.Fatalf("Archive: %v %+v", err, a)
	}
	if _, err := os.Stat(filepath.Join(root, "wiki", testWing, "decisions", "retries.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the archived file is still there: %v", err)
	}
	if got := hitIDs(t, s, "kiwi"); len(got) != 0 || listed(t, s, id) {
		t.Fatalf("archived note still found: %v", got)
	}
	if toc := readFile(t, root, brain.IndexPath(testWing)); bytes.Contains(toc, []byte("retries")) {
		t.Fatalf("_index.md still lists the archived note:\n%s", toc)
	}
	_, err = s.Get(ctx, id)
	wantCode(t, "get of an archived note", err, brain.CodeNotFound)
	if !strings.Contains(err.Error(), "archived by cur@example.com") || !strings.Contains(err.Error(), "outdated") {
		t.Fatalf("the refusal does not say who archived it and why: %v", err)
	}
	_, err = s.Archive(ctx, Archival{Ref: id, Reason: "again", By: "cur@example.com"})
	wantCode(t, "archiving an archived note", err, brain.CodeInvalidArgument)
	arch, next, err := s.Archived(ctx, "", "", 50)
	if err != nil || next != "" || len(arch) != 1 || arch[0].ID != id || arch[0].Title != "Retries" || arch[0].Removal.Author != "cur@example.com" {
		t.Fatalf("Archived: %v %+v", err, arch)
	}

	// Restore brings it back.
	h, _ = s.Versions(ctx, id, "", 20)
	if !h.Versions[0].Removed {
		t.Fatalf("the newest version is not the removal: %+v", h.Versions[0])
	}
	if _, _, _, err := s.Restore(ctx, Restoration{Ref: id, Version: h.Versions[1].ID, Reason: "still needed", By: "cur@example.com"}); err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(t, s, "kiwi"); len(got) != 1 || !listed(t, s, id) {
		t.Fatalf("restored note not found: %v", got)
	}

	// Move: new place, hall field, links rewritten, old id answers moved.
	const to = testWing + "/facts/retry-policy"
	_, err = s.Move(ctx, Relocation{ID: id, Hall: "facts", Slug: "linker", Reason: "clash", By: "cur@example.com"})
	wantCode(t, "a move onto an existing note", err, brain.CodeAlreadyExists)
	mv, err := s.Move(ctx, Relocation{ID: id, Hall: "facts", Slug: "retry-policy", Reason: "it is a fact", By: "cur@example.com"})
	if err != nil || mv.Links != 2 || len(mv.Rewritten) != 1 || mv.Note.ID != to {
		t.Fatalf("Move: %v %+v", err, mv)
	}
	linker, err := s.Get(ctx, testWing+"/facts/linker")
	if err != nil || !strings.Contains(linker.Body, "[[facts/retry-policy]]") || !strings.Contains(linker.Body, "[["+to+"|alias]]") {
		t.Fatalf("links not rewritten: %v %q", err, linker.Body)
	}
	if moved, err := s.Get(ctx, to); err != nil || moved.Get(KeyHall) != "facts" {
		t.Fatalf("moved note: %v %+v", err, moved)
	}
	_, err = s.Get(ctx, id)
	wantCode(t, "get of the old id", err, brain.CodeMoved)
	if !strings.Contains(err.Error(), to) {
		t.Fatalf("the moved refusal does not name the new id: %v", err)
	}
	h, err = s.Versions(ctx, id, "", 50)
	if err != nil || h.Ref != to || h.Versions[0].Action != ActionMove || h.Versions[len(h.Versions)-1].Action != ActionCreate {
		t.Fatalf("history by the old id: %v %+v", err, h)
	}
	// The linker's rewrite is in the move's commit.
	lh, err := s.Versions(ctx, testWing+"/facts/linker", "", 5)
	if err != nil || lh.Versions[0].Action != ActionMove || lh.Versions[0].ID != h.Versions[0].ID {
		t.Fatalf("the linker's rewrite is not the move's commit: %v %+v", err, lh.Versions)
	}
	if got := backlinksOf(t, s, to); len(got) != 1 {
		t.Fatalf("backlinks of the new id: %v", got)
	}
}

func backlinksOf(t *testing.T, s *Store, id string) []string {
	t.Helper()
	l, err := s.Links(id)
	if err != nil {
		t.Fatal(err)
	}
	return l.Backlinks
}

// TestPurgeLeavesNoTrace: after a purge of a leaked version (updated
// away) and of a whole note, the secrets are in no file under the brain or
// the state directory, and the store's answers do not hold them.
func TestPurgeLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	root, state := t.TempDir(), t.TempDir()
	s := openPurging(t, root, state)
	const id = testWing + "/facts/db"
	const leak, leak2 = "hunter2zebracorn", "quokkapassphrase"
	mustCreate(t, s, NewNote{Title: "Database", Hall: "facts", Slug: "db", Body: "the password is " + leak, By: "ann@example.com"})
	if _, err := s.Update(ctx, Change{ID: id, Body: "the password is in the vault", Reason: "remove the secret", By: "ann@example.com"}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, NewNote{Title: "Notes", Hall: "facts", Slug: "gone", Body: "personal data " + leak2, By: "bob@example.com"})
	if err := s.Close(); err != nil { // the snapshot holds the words now
		t.Fatal(err)
	}
	s = openPurging(t, root, state)
	if !grepDir(t, root, leak) || !grepDir(t, state, leak) || !grepDir(t, root, leak2) {
		t.Fatal("the secrets are not on disk before the purge: the test proves nothing")
	}

	h, err := s.Versions(ctx, id, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Purge(ctx, Purging{Ref: id, Version: h.Versions[1].ID, By: "cur@example.com"})
	wantCode(t, "a purge without a reason", err, brain.CodeInvalidArgument)
	_, err = s.Purge(ctx, Purging{Ref: id, Version: h.Versions[0].ID, Reason: "leak", By: "cur@example.com"})
	wantCode(t, "a purge of the current version", err, brain.CodeInvalidArgument)
	p, err := s.Purge(ctx, Purging{Ref: id, Version: h.Versions[1].ID, Reason: "leaked password", By: "cur@example.com"})
	if err != nil || p.Versions != 1 || p.Removed {
		t.Fatalf("Purge: %v %+v", err, p)
	}
	if ok, err := s.Settle(Mark{Op: MarkPurge, Path: brain.ID{Wing: testWing, Hall: "facts", Slug: "db"}.Path(), Hash: h.Versions[1].ContentHash}); err != nil || !ok {
		t.Fatalf("Settle of the purge: %v %v", ok, err)
	}
	p, err = s.Purge(ctx, Purging{Ref: testWing + "/facts/gone", Reason: "personal data", By: "cur@example.com"})
	if err != nil || p.Versions != 1 || !p.Removed {
		t.Fatalf("Purge of every version: %v %+v", err, p)
	}
	if _, err := s.Get(ctx, testWing+"/facts/gone"); err == nil {
		t.Fatal("the purged note is still there")
	}
	vs, err := s.Versions(ctx, id, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	purged := 0
	for _, v := range vs.Versions {
		if v.Purged {
			purged++
			if _, _, _, err := s.Restore(ctx, Restoration{Ref: id, Version: v.ID, Reason: "undo", By: "cur@example.com"}); err == nil {
				t.Fatal("a purged version was restored")
			}
		}
	}
	if purged != 1 {
		t.Fatalf("versions after the purge: %+v", vs.Versions)
	}
	if got := hitIDs(t, s, leak+" "+leak2+" password"); len(got) != 1 || got[0] != id {
		t.Fatalf("search after the purge: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, state} {
		for _, w := range []string{leak, leak2} {
			if grepDir(t, dir, w) {
				t.Errorf("%q is still on disk under %s after the purge", w, dir)
			}
		}
	}
}

// grepDir reports whether any file under dir holds s in its raw bytes,
// or, when dir is a git repository, any object git lists does.
func grepDir(t *testing.T, dir, s string) bool {
	t.Helper()
	places, err := diskgrep.Find(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range places {
		t.Logf("%s holds %q", p, s)
	}
	return len(places) > 0
}
