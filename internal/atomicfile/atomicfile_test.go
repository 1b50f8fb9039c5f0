package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// leftovers lists the temporary files left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer than the first"} {
		if err := WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := read(t, p); got != content {
			t.Errorf("content %q, want %q", got, content)
		}
	}
	if runtime.GOOS != "windows" {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v (%v), want 0600", st.Mode().Perm(), err)
		}
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestCreateFileNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "note.md")
	if err := CreateFile(p, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := CreateFile(p, []byte("theirs"), 0o644)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v, want fs.ErrExist", err)
	}
	if got := read(t, p); got != "mine" {
		t.Errorf("content %q after a refused create, want the first", got)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestPendingCleanup(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "snapshot")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := New(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if pf.Path() != p || filepath.Dir(pf.Name()) != dir {
		t.Fatalf("pending %s for %s", pf.Name(), pf.Path())
	}
	if _, err := pf.WriteString("half-written"); err != nil {
		t.Fatal(err)
	}
	pf.Cleanup() // a write that failed half way
	pf.Cleanup() // and again: nothing more
	if got := read(t, p); got != "old" {
		t.Errorf("content %q after a cleaned-up write, want the old", got)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
	if err := pf.Replace(); err == nil {
		t.Error("Replace after Cleanup succeeded")
	}
}

func TestErrorsLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	// The destination's directory does not exist: nothing is created.
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into a missing directory: %v", err)
	}
	// Replacing a directory fails and leaves no temporary file.
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "d"), []byte("x"), 0o644); err == nil {
		t.Error("replacing a directory succeeded")
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil && runtime.GOOS != "windows" {
		t.Error("SyncDir of a missing directory succeeded")
	}
}
