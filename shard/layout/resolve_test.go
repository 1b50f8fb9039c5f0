package layout

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

type escapeCase struct {
	line int
	want error
	path string
}

func loadEscapes(t testing.TB) []escapeCase {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "brain", "testdata", "escapes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sentinels := map[string]error{
		"ErrEscape":      brain.ErrEscape,
		"ErrInvalidName": brain.ErrInvalidName,
		"ErrInvalidHall": brain.ErrInvalidHall,
		"ErrTooLong":     brain.ErrTooLong,
	}
	var out []escapeCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, quoted, ok := strings.Cut(line, " ")
		want, known := sentinels[name]
		if !ok || !known {
			t.Fatalf("escapes.txt:%d: want '<sentinel> <quoted path>', got %q", n, line)
		}
		p, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("escapes.txt:%d: %v", n, err)
		}
		out = append(out, escapeCase{n, want, p})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("escapes.txt has only %d cases", len(out))
	}
	return out
}

// tempBrain makes a small brain under a fresh temp dir and returns its root.
func tempBrain(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"wiki/payments/facts", "wiki/payments/decisions", "wiki/other/facts", "inbox/payments", "sessions/payments"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"wiki/payments/facts/a.md", "wiki/payments/_index.md", "inbox/payments/draft.md", "sessions/payments/s1.jsonl"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestResolveRejectsEscapes(t *testing.T) {
	root := tempBrain(t)
	for _, c := range loadEscapes(t) {
		got, err := Resolve(root, c.path)
		if err == nil {
			t.Errorf("escapes.txt:%d: Resolve(%q) = %q, want an error", c.line, c.path, got)
			continue
		}
		if got != "" {
			t.Errorf("escapes.txt:%d: Resolve returned %q with an error", c.line, got)
		}
		if !errors.Is(err, c.want) {
			t.Errorf("escapes.txt:%d: Resolve(%q) error %q does not wrap %v", c.line, c.path, err, c.want)
		}
		if e, ok := brain.As(err); !ok || e.Code != brain.CodeInvalidArgument {
			t.Errorf("escapes.txt:%d: error %q is not a *brain.Error with code invalid_argument", c.line, err)
		}
	}
}

func TestResolveAccepts(t *testing.T) {
	root := tempBrain(t)
	for _, rel := range []string{
		"wiki/payments",
		"wiki/payments/facts",
		"wiki/payments/facts/a.md",
		"wiki/payments/facts/new-note.md",
		"wiki/payments/_index.md",
		"wiki/payments/hypotheses/not-yet-created.md", // missing hall dir
		"wiki/newwing/facts/x.md",                     // missing wing dir
		"inbox/payments/draft.md",
		"inbox/payments/.draft.md.tmp-123", // temp files of atomic writes
		"sessions/payments/s1.jsonl",
		"sessions/payments/2026-01-05T10-00-00Z_A.b.jsonl",
		"wiki/payments/facts/a.md/below-a-file", // ENOTDIR: fine, opening it fails later
		"wiki/payments/" + strings.Repeat("d", 255),
	} {
		got, err := Resolve(root, rel)
		if err != nil {
			t.Errorf("Resolve(%q): %v", rel, err)
			continue
		}
		if want := filepath.Join(root, filepath.FromSlash(rel)); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", rel, got, want)
		}
	}
	// An unclean root is cleaned.
	if got, err := Resolve(root+"/./", "wiki/payments/facts/a.md"); err != nil || got != filepath.Join(root, "wiki/payments/facts/a.md") {
		t.Errorf("unclean root: %q, %v", got, err)
	}
	if _, err := Resolve("", "wiki/payments/facts/a.md"); !errors.Is(err, brain.ErrEscape) {
		t.Errorf("empty root: %v, want brain.ErrEscape", err)
	}
}

func TestResolveSymlinks(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) // makes a symlink
		rels  []string                        // each must be refused
		ok    []string                        // each must still resolve
	}{
		{
			name: "hall dir pointing outside the brain",
			setup: func(t *testing.T, root string) {
				symlink(t, outside, filepath.Join(root, "wiki/payments/failures"))
			},
			rels: []string{"wiki/payments/failures", "wiki/payments/failures/secret.md", "wiki/payments/failures/new.md"},
			ok:   []string{"wiki/payments/facts/a.md", "wiki/payments/decisions/x.md"},
		},
		{
			name: "hall dir pointing into another wing",
			setup: func(t *testing.T, root string) {
				symlink(t, filepath.Join(root, "wiki/other/facts"), filepath.Join(root, "wiki/payments/sources"))
			},
			rels: []string{"wiki/payments/sources/x.md"},
		},
		{
			name: "relative link climbing out",
			setup: func(t *testing.T, root string) {
				symlink(t, "../../other", filepath.Join(root, "wiki/payments/hypotheses"))
			},
			rels: []string{"wiki/payments/hypotheses/facts/x.md"},
		},
		{
			name: "wing dir is a link",
			setup: func(t *testing.T, root string) {
				symlink(t, filepath.Join(root, "wiki/other"), filepath.Join(root, "wiki/linked"))
			},
			rels: []string{"wiki/linked", "wiki/linked/facts/x.md"},
			ok:   []string{"wiki/other/facts/x.md"},
		},
		{
			name: "top dir is a link",
			setup: func(t *testing.T, root string) {
				if err := os.RemoveAll(filepath.Join(root, "sessions")); err != nil {
					t.Fatal(err)
				}
				symlink(t, outside, filepath.Join(root, "sessions"))
			},
			rels: []string{"sessions/payments/s1.jsonl", "sessions/payments"},
		},
		{
			name: "note file is a link to a file outside",
			setup: func(t *testing.T, root string) {
				symlink(t, filepath.Join(outside, "secret.md"), filepath.Join(root, "wiki/payments/facts/leak.md"))
			},
			rels: []string{"wiki/payments/facts/leak.md"},
			ok:   []string{"wiki/payments/facts/a.md"},
		},
		{
			name: "dangling link",
			setup: func(t *testing.T, root string) {
				symlink(t, filepath.Join(outside, "does-not-exist"), filepath.Join(root, "inbox/payments/dangling.md"))
			},
			rels: []string{"inbox/payments/dangling.md"},
		},
		{
			name: "link to a sibling inside the same wing is refused too",
			setup: func(t *testing.T, root string) {
				symlink(t, "a.md", filepath.Join(root, "wiki/payments/facts/alias.md"))
			},
			rels: []string{"wiki/payments/facts/alias.md"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tempBrain(t)
			tt.setup(t, root)
			for _, rel := range tt.rels {
				got, err := Resolve(root, rel)
				if !errors.Is(err, brain.ErrEscape) {
					t.Errorf("Resolve(%q) = %q, %v; want brain.ErrEscape", rel, got, err)
				} else if !strings.Contains(err.Error(), "symbolic link") {
					t.Errorf("error %q does not mention the link", err)
				} else if strings.Contains(err.Error(), root) || strings.Contains(err.Error(), outside) {
					t.Errorf("error %q names an absolute path: only brain-relative paths may reach an agent", err)
				}
			}
			for _, rel := range tt.ok {
				if _, err := Resolve(root, rel); err != nil {
					t.Errorf("Resolve(%q): %v", rel, err)
				}
			}
		})
	}
}

// The brain root itself may be a symlink (operators mount volumes that way).
func TestResolveRootMayBeALink(t *testing.T) {
	real := tempBrain(t)
	link := filepath.Join(t.TempDir(), "brain")
	symlink(t, real, link)
	got, err := Resolve(link, "wiki/payments/facts/a.md")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(got); err != nil || string(b) != "x" {
		t.Fatalf("read %q: %q, %v", got, b, err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

// checkInside asserts the FuzzResolve property: p is root/<top>/<wing>[/…]
// and no existing component below root is a symlink.
func checkInside(t *testing.T, root, rel, p string) {
	t.Helper()
	r, err := filepath.Rel(root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		t.Fatalf("Resolve(%q) = %q escapes root %q", rel, p, root)
	}
	parts := strings.Split(filepath.ToSlash(r), "/")
	if len(parts) < 2 {
		t.Fatalf("Resolve(%q) = %q is not inside a wing", rel, p)
	}
	if top := parts[0]; top != brain.TopWiki && top != brain.TopInbox && top != brain.TopSessions {
		t.Fatalf("Resolve(%q) = %q: top %q", rel, p, top)
	}
	if err := brain.ValidWing(parts[1]); err != nil {
		t.Fatalf("Resolve(%q) = %q: wing: %v", rel, p, err)
	}
	cur := root
	for _, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			break
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			t.Fatalf("Resolve(%q) = %q goes through the link %q", rel, p, cur)
		}
	}
}

func FuzzResolve(f *testing.F) {
	root := tempBrain(f)
	outside := f.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "wiki/payments/failures")); err != nil {
		f.Skipf("symlinks unavailable: %v", err)
	}
	if err := os.Symlink("../other", filepath.Join(root, "wiki/payments/sources")); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"wiki/payments/facts/a.md", "wiki/payments/failures/x.md", "wiki/payments/sources/facts/x.md",
		"inbox/payments/draft.md", "sessions/payments/s1.jsonl", "wiki/payments/_index.md",
		"../x", "wiki/../../x", "wiki/payments/..", "/etc/passwd", `wiki\payments`, "wiki/payments/a\x00",
		"wiki/payments//x", "wiki/payments/con.md", "wiki/payments/x.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		p, err := Resolve(root, rel)
		if err != nil {
			if p != "" {
				t.Fatalf("Resolve(%q) returned %q with error %v", rel, p, err)
			}
			if !errors.Is(err, brain.ErrInvalidName) && !errors.Is(err, brain.ErrInvalidHall) && !errors.Is(err, brain.ErrEscape) && !errors.Is(err, brain.ErrTooLong) {
				t.Fatalf("Resolve(%q) error %v wraps no sentinel", rel, err)
			}
			return
		}
		checkInside(t, root, rel, p)
		if want := filepath.Join(root, filepath.FromSlash(rel)); p != want {
			t.Fatalf("Resolve(%q) = %q, want %q", rel, p, want)
		}
	})
}
