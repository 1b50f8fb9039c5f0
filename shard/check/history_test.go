package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/shard/store"
)

// TestHistoryDisagreement: a brain whose files were changed while no
// shard ran (and so are not in history yet) is reported file by file;
// the same brain once a shard has recorded them is clean.
func TestHistoryDisagreement(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	open := func() *store.Store {
		st, err := store.Open(ctx, store.Options{Root: root, Wing: "payments", RescanInterval: -1, NoWatch: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	for _, slug := range []string{"kept", "edited", "deleted"} {
		if _, err := st.Create(ctx, store.NewNote{Title: slug, Hall: "facts", Slug: slug, Body: "body " + slug, By: "ann@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Brain(ctx, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a brain in step with its history: %+v", rep.Problems)
	}

	dir := filepath.Join(root, "wiki", "payments", "facts")
	if err := os.WriteFile(filepath.Join(dir, "edited.md"), []byte("---\ntitle: edited\nwing: payments\nhall: facts\ncreated_by: a@b.c\ncreated_at: 2026-01-01T00:00:00Z\n---\nchanged by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "deleted.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "added.md"), []byte("---\ntitle: added\nwing: payments\nhall: facts\ncreated_by: a@b.c\ncreated_at: 2026-01-01T00:00:00Z\n---\nnew\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Brain(ctx, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"wiki/payments/facts/edited.md":  "differs from its last version",
		"wiki/payments/facts/deleted.md": "gone but history's last version has it",
		"wiki/payments/facts/added.md":   "no version in history",
	}
	got := map[string]string{}
	for _, p := range rep.Problems {
		got[p.Path] = p.Message
	}
	for path, msg := range want {
		if !strings.Contains(got[path], msg) {
			t.Errorf("%s: %q, want a problem saying %q", path, got[path], msg)
		}
	}
	if len(rep.Problems) != len(want) {
		t.Errorf("problems: %+v", rep.Problems)
	}

	st = open() // records the outside edits
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err = Brain(ctx, root, Options{}); err != nil || !rep.OK() {
		t.Fatalf("after a shard recorded the edits: %v %+v", err, rep.Problems)
	}
}
