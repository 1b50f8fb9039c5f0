package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestBatch: until Commit every destination keeps its old bytes (or stays
// absent), the files are hidden temporaries; Commit puts every new file in
// place, removes what was to be removed, and leaves no temporary file.
func TestBatch(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	old, gone, fresh := filepath.Join(dir, "old"), filepath.Join(sub, "gone"), filepath.Join(sub, "fresh")
	for _, p := range []string{old, gone} {
		if err := WriteFile(p, []byte("before"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b Batch
	t.Cleanup(b.Cleanup)
	for p, data := range map[string]string{old: "after", fresh: "new"} {
		if err := b.Add(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.Remove(gone)
	b.Remove(filepath.Join(sub, "never-there"))
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, old); got != "before" {
		t.Fatalf("before Commit the destination holds %q", got)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before Commit the new file exists (%v)", err)
	}
	if len(leftovers(t, dir)) != 1 || len(leftovers(t, sub)) != 1 {
		t.Fatalf("the staged files are not temporaries: %v %v", leftovers(t, dir), leftovers(t, sub))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, old)+"|"+read(t, fresh), "after|new"; got != want {
		t.Errorf("after Commit: %q, want %q", got, want)
	}
	if _, err := os.Stat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed file is still there (%v)", err)
	}
	if l := append(leftovers(t, dir), leftovers(t, sub)...); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// TestBatchCleanup: a batch given up (its commit never made) changes no
// destination and leaves no temporary file.
func TestBatchCleanup(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b Batch
	if err := b.Add(p, []byte("dropped"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Remove(p)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	b.Cleanup()
	if got := read(t, p); got != "kept" {
		t.Errorf("the destination holds %q", got)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// TestBatchAddFails: a file that cannot be staged (its directory is
// missing) is an error and leaves nothing.
func TestBatchAddFails(t *testing.T) {
	var b Batch
	t.Cleanup(b.Cleanup)
	if err := b.Add(filepath.Join(t.TempDir(), "no", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("no error for a missing directory")
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("an empty batch's Commit: %v", err)
	}
}
