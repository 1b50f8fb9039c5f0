package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// testBrain is a brain directory for one test, with the layout rule the
// store passes (wiki/<wing>/<hall>/<slug>.md and inbox/<wing>/<name>.md,
// never _index.md).
type testBrain struct {
	t     testing.TB
	root  string
	state string
	wing  string
	clock *testClock
}

// testClock is an injected clock that moves one second a call.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func newBrain(t testing.TB) *testBrain {
	t.Helper()
	root := t.TempDir()
	return &testBrain{t: t, root: root, state: filepath.Join(root, ".brainstem", "pay", "history"), wing: "pay",
		clock: &testClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}}
}

func tracked(wing string) func(string) bool {
	return func(rel string) bool {
		parts := strings.Split(rel, "/")
		if !strings.HasSuffix(rel, ".md") || strings.HasSuffix(rel, "/_index.md") {
			return false
		}
		switch {
		case len(parts) == 4 && parts[0] == "wiki" && parts[1] == wing:
			return true
		case len(parts) == 3 && parts[0] == "inbox" && parts[1] == wing:
			return true
		}
		return false
	}
}

func (b *testBrain) options() Options {
	return b.optionsFor(b.wing, b.state)
}

func (b *testBrain) optionsFor(wing, state string) Options {
	isTracked := tracked(wing)
	return Options{
		Root: b.root, Wing: wing, StateDir: state, Tracked: isTracked,
		Dirs: []string{"wiki/" + wing, "inbox/" + wing},
		Files: func() ([]string, error) {
			var out []string
			for _, top := range []string{"wiki/" + wing, "inbox/" + wing} {
				err := filepath.WalkDir(filepath.Join(b.root, top), func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						if os.IsNotExist(err) {
							return nil
						}
						return err
					}
					rel, _ := filepath.Rel(b.root, p)
					if rel = filepath.ToSlash(rel); !d.IsDir() && isTracked(rel) {
						out = append(out, rel)
					}
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
			return out, nil
		},
		Now:       b.clock.Now,
		staleLock: 200 * time.Millisecond,
	}
}

func (b *testBrain) open(opt Options) *History {
	b.t.Helper()
	h, err := Open(context.Background(), opt)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { h.Close() })
	return h
}

// put writes a file of the brain directly (an outside edit, or the
// setup of a brain).
func (b *testBrain) put(rel, content string) {
	b.t.Helper()
	p := filepath.Join(b.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := atomicfile.WriteFile(p, []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *testBrain) read(rel string) string {
	b.t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.root, filepath.FromSlash(rel)))
	if err != nil {
		b.t.Fatal(err)
	}
	return string(raw)
}

// write is the store's write path: Begin, the durable file change, Landed.
func (b *testBrain) write(h *History, author string, ops ...Op) *Pending {
	b.t.Helper()
	for i := range ops {
		if old, err := os.ReadFile(filepath.Join(b.root, filepath.FromSlash(ops[i].Path))); err == nil {
			ops[i].Base, ops[i].HadBase = sha256.Sum256(old), true
		}
	}
	p, err := h.Begin(Change{Ops: ops, Author: author, Action: "update", Tool: "test", Reason: "because"})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, op := range ops {
		abs := filepath.Join(b.root, filepath.FromSlash(op.Path))
		switch {
		case op.Remove:
			if err := os.Remove(abs); err != nil {
				b.t.Fatal(err)
			}
		default:
			b.put(op.Path, string(op.Content))
			if op.From != "" {
				if err := os.Remove(filepath.Join(b.root, filepath.FromSlash(op.From))); err != nil {
					b.t.Fatal(err)
				}
			}
		}
	}
	p.Landed()
	return p
}

// git runs the git CLI in the brain and returns its output.
func (b *testBrain) git(args ...string) string {
	b.t.Helper()
	out, err := b.gitErr(args...)
	if err != nil {
		b.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (b *testBrain) gitErr(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", b.root}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.root, "GIT_AUTHOR_NAME=Person",
		"GIT_AUTHOR_EMAIL=person@acme.com", "GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@acme.com")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func flush(t testing.TB, h *History) {
	t.Helper()
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func note(title, body string) string {
	return "---\ntitle: " + title + "\n---\n" + body + "\n"
}
