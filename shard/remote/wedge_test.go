package remote

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/layout"
)

// wedgeSeeds reads testdata/wedge-trees.txt: the remote's tree attacks
// of issue 34, each as lines of a mode letter and a path.
func wedgeSeeds(t testing.TB) []string {
	raw, err := os.ReadFile("testdata/wedge-trees.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, strings.ReplaceAll(line, " ; ", "\n"))
		}
	}
	if len(out) < 10 {
		t.Fatalf("wedge-trees.txt has %d attacks", len(out))
	}
	return out
}

// FuzzPushedTree: whatever tree the remote pushes, once it is integrated
// (merged, applied, read by history), a write at every note path the
// pushed paths suggest commits, and the wing never stops committing.
func FuzzPushedTree(f *testing.F) {
	for _, s := range wedgeSeeds(f) {
		f.Add(s)
	}
	tmpl := brainRepo(f) // copied for each input: no git process per input
	f.Fuzz(func(t *testing.T, pushed string) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(tmpl)); err != nil {
			t.Fatal(err)
		}
		w := openWedgeBrain(t, dir)
		files := treeOf(t, w.r, headOf(t, w.r))
		var paths []string
		for i, line := range strings.Split(pushed, "\n") {
			if i == 16 || len(line) < 3 || len(line) > 200 {
				continue
			}
			mode := map[byte]filemode.FileMode{'x': filemode.Executable, 'l': filemode.Symlink}[line[0]]
			if mode == 0 {
				mode = filemode.Regular
			}
			p := line[2:]
			files[p] = entry{Mode: mode, Hash: blob(t, w.r, "---\ntitle: pushed\n---\npushed "+p+"\n")}
			delete(files, strings.TrimSuffix(p, "/")) // the remote replaced a note by a directory
			paths = append(paths, p)
		}
		local := headOf(t, w.r)
		remote, err := w.tryCommit(files, local)
		if err != nil {
			return // a tree git itself cannot write
		}
		in, err := w.r.Integrate(local, remote, service, 0)
		if errors.Is(err, ErrBadTree) {
			return // refused whole: nothing changes
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.r.Apply(local, in); err != nil {
			t.Fatal(err)
		}
		for _, p := range append(notePaths(paths), "wiki/eng/facts/planned-note.md", "wiki/eng/facts/a.md") {
			w.write(p)
		}
		if err := w.h.Flush(context.Background()); err != nil {
			t.Fatalf("the wing stopped committing after the remote pushed %q: %v (stuck: %v)", pushed, err, w.h.Stuck())
		}
	})
}

// TestPushedTreeAttacks runs the seeds through a remote served over HTTP
// as well: fetched, integrated, applied, written to, and pushed back.
func TestPushedTreeAttacks(t *testing.T) {
	for _, s := range wedgeSeeds(t) {
		t.Run(strings.ReplaceAll(s, "/", "_"), func(t *testing.T) {
			w := newWedgeBrain(t)
			files := treeOf(t, w.r, headOf(t, w.r))
			for _, line := range strings.Split(s, "\n") {
				files[line[2:]] = entry{Mode: filemode.Regular, Hash: blob(t, w.r, "x\n")}
			}
			delete(files, "wiki/eng/facts/a.md")
			local := headOf(t, w.r)
			remote, err := w.tryCommit(files, local)
			if err != nil {
				t.Fatal(err)
			}
			in, err := w.r.Integrate(local, remote, service, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.r.Apply(local, in); err != nil {
				t.Fatal(err)
			}
			w.write("wiki/eng/facts/planned-note.md")
			w.write("wiki/eng/facts/a.md")
			w.write("inbox/eng/idea.md")
			if err := w.h.Flush(context.Background()); err != nil {
				t.Fatalf("stopped committing: %v", err)
			}
			tree := runGit(t, agent, w.dir, "ls-tree", "-r", "--name-only", "HEAD")
			for _, p := range []string{"wiki/eng/facts/planned-note.md\n", "wiki/eng/facts/a.md\n", "inbox/eng/idea.md\n"} {
				if !strings.Contains(tree, p) {
					t.Errorf("the head lacks %s:\n%s", p, tree)
				}
			}
			if len(in.Rejected) == 0 {
				t.Error("nothing was reported rejected")
			}
		})
	}
}

type wedgeBrain struct {
	t   *testing.T
	dir string
	r   *Remote
	h   *history.History
}

func newWedgeBrain(t *testing.T) *wedgeBrain {
	t.Helper()
	return openWedgeBrain(t, brainRepo(t))
}

// openWedgeBrain opens the remote and the history of wing eng of the
// brain repository dir.
func openWedgeBrain(t *testing.T, dir string) *wedgeBrain {
	t.Helper()
	r, err := Open(dir, Config{URL: "http://127.0.0.1:9/none.git", Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Open(context.Background(), history.Options{
		Root: dir, Wing: "eng", StateDir: filepath.Join(t.TempDir(), "history"),
		Tracked: func(rel string) bool { return layout.Tracked(rel, "eng") },
		Dirs:    []string{"wiki/eng", "inbox/eng"},
		Files:   func() ([]string, error) { return wingFiles(dir) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &wedgeBrain{t: t, dir: dir, r: r, h: h}
}

func wingFiles(dir string) ([]string, error) {
	var out []string
	for _, top := range []string{"wiki/eng", "inbox/eng"} {
		err := filepath.WalkDir(filepath.Join(dir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone, or not a directory: nothing of the wing there
			}
			rel, _ := filepath.Rel(dir, p)
			if rel = filepath.ToSlash(rel); d.Type().IsRegular() && layout.Tracked(rel, "eng") {
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tryCommit is commitTree for trees git may refuse to encode.
func (w *wedgeBrain) tryCommit(files map[string]entry, parent plumbing.Hash) (h plumbing.Hash, err error) {
	if _, err := storeTree(w.r, files); err != nil {
		return h, err
	}
	return commitTree(w.t, w.r, files, parent, "mallory"), nil
}

// write is the store's write path for a note at rel: whatever the
// directory holds there is replaced as the store would (or the write is
// skipped when the disk refuses it, as the store would refuse it).
func (w *wedgeBrain) write(rel string) {
	w.t.Helper()
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	if fi, err := os.Lstat(abs); err == nil && !fi.Mode().IsRegular() {
		return // the store refuses a write over what is not a note file
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return // a file where a directory must be on disk: the store refuses the write
	}
	content := []byte("---\ntitle: Local\n---\nwritten here\n")
	op := history.Op{Path: rel, Content: content}
	if old, err := os.ReadFile(abs); err == nil {
		op.Base, op.HadBase = sha256.Sum256(old), true
	}
	p, err := w.h.Begin(history.Change{Ops: []history.Op{op}, Author: "ann@acme.com", Action: "write", Tool: "test"})
	if err != nil {
		w.t.Fatalf("Begin %s: %v", rel, err)
	}
	if err := os.WriteFile(abs, content, 0o644); err != nil {
		p.Abandon()
		return
	}
	p.Landed()
}

// notePaths maps pushed paths to the note paths of wing eng they run
// through or name: where a local write would meet the pushed entry.
func notePaths(pushed []string) []string {
	var out []string
	for _, p := range pushed {
		segs := strings.Split(p, "/")
		if len(segs) < 3 || segs[1] != "eng" {
			continue
		}
		slug := func(i int) string {
			if i >= len(segs) {
				return "x"
			}
			s := layout.Slugify(strings.TrimSuffix(segs[i], ".md"))
			if brain.ValidSlug(s) != nil {
				return "x"
			}
			return s
		}
		switch segs[0] {
		case brain.TopWiki:
			hall := segs[2]
			if brain.ValidHall(hall) != nil {
				hall = "facts"
			}
			out = append(out, "wiki/eng/"+hall+"/"+slug(3)+".md")
		case brain.TopInbox:
			out = append(out, "inbox/eng/"+slug(2)+".md")
		}
	}
	return out
}
