package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/tooling/gitserver"
)

const token = "tok-9f8e7d6c5b4a"

var (
	agent = gitserver.Person{Name: "Brainstem", Email: "history@brainstem.invalid"}
	ada   = gitserver.Person{Name: "Ada", Email: "ada@example.com"}
)

func runGit(t testing.TB, p gitserver.Person, dir string, args ...string) string {
	t.Helper()
	out, err := p.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// brainRepo makes a brain directory whose repository has one commit of
// wiki/eng/facts/a.md.
func brainRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, agent, dir, "init", "--quiet", "--initial-branch=main", ".")
	commitFile(t, agent, dir, "wiki/eng/facts/a.md", "---\ntitle: A\n---\nfirst\n", "add a")
	return dir
}

func commitFile(t testing.TB, p gitserver.Person, dir, rel, body, msg string) {
	t.Helper()
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, p, dir, "add", rel)
	runGit(t, p, dir, "commit", "--quiet", "-m", msg)
}

// httpRemote serves an empty bare repository over smart HTTP with basic
// auth (user "git", password token) and returns its URL and a token file.
func httpRemote(t *testing.T) (url, tokenFile string) {
	t.Helper()
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(root, "git", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tokenFile = filepath.Join(t.TempDir(), "token")
	mustWrite(t, tokenFile, []byte(token+"\n"), 0o600)
	return srv.URL + "/brain.git", tokenFile
}

func TestPushHTTPThenPersonPullsAndPushes(t *testing.T) {
	ctx := context.Background()
	url, tokenFile := httpRemote(t)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !p.From.IsZero() || p.To.IsZero() {
		t.Fatalf("first push %+v", p)
	}
	// The person clones, sees the agent's note, edits it and adds one.
	clone := filepath.Join(t.TempDir(), "c")
	authURL := strings.Replace(url, "http://", "http://git:"+token+"@", 1)
	runGit(t, ada, t.TempDir(), "clone", "--quiet", authURL, clone)
	if b, _ := os.ReadFile(filepath.Join(clone, "wiki/eng/facts/a.md")); !strings.Contains(string(b), "first") {
		t.Fatalf("the clone has %q", b)
	}
	commitFile(t, ada, clone, "wiki/eng/facts/a.md", "---\ntitle: A\n---\nedited by Ada\n", "Ada edits a")
	commitFile(t, ada, clone, "wiki/eng/facts/b.md", "---\ntitle: B\n---\nnew\n", "Ada adds b")
	runGit(t, ada, clone, "push", "--quiet", "origin", "main")

	// The agent commits too: the remote moved, so nothing is pushed.
	commitFile(t, agent, dir, "wiki/eng/facts/c.md", "---\ntitle: C\n---\nagent\n", "add c")
	if _, err := r.Push(ctx); !errors.Is(err, ErrRemoteMoved) {
		t.Fatalf("push over a moved remote = %v, want ErrRemoteMoved", err)
	}
	head, err := r.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Commit(head)
	if err != nil {
		t.Fatal(err)
	}
	if c.Author.Email != ada.Email || c.Message != "Ada adds b\n" {
		t.Fatalf("fetched head by %s: %q", c.Author.Email, c.Message)
	}
	if _, err := c.File("wiki/eng/facts/b.md"); err != nil {
		t.Fatalf("the fetched tree lacks Ada's note: %v", err)
	}
}

func TestPushUpToDateAndAgain(t *testing.T) {
	ctx := context.Background()
	url, tokenFile := httpRemote(t)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Push(ctx)
	if err != nil || again.From != first.To || again.To != first.To {
		t.Fatalf("second push %+v, %v", again, err)
	}
	commitFile(t, agent, dir, "wiki/eng/facts/d.md", "d\n", "add d")
	next, err := r.Push(ctx)
	if err != nil || next.From != first.To || next.To == first.To {
		t.Fatalf("third push %+v, %v", next, err)
	}
	// The person's clone has every commit, once.
	clone := filepath.Join(t.TempDir(), "c")
	runGit(t, ada, t.TempDir(), "clone", "--quiet", strings.Replace(url, "http://", "http://git:"+token+"@", 1), clone)
	if n := strings.TrimSpace(runGit(t, ada, clone, "rev-list", "--count", "HEAD")); n != "2" {
		t.Fatalf("the remote has %s commits, want 2", n)
	}
}

// TestPushBesideRefLock: a fetch and a push made while the history
// engine holds the branch's ref lock (refs/heads/main.lock, empty while a
// commit is being made, then holding the next head) succeed: the lock is
// no reference.
func TestPushBesideRefLock(t *testing.T) {
	ctx := context.Background()
	url, tokenFile := httpRemote(t)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".git", "refs", "heads", "main.lock")
	head := strings.TrimSpace(runGit(t, agent, dir, "rev-parse", "main"))
	for _, content := range []string{"", head + "\n"} {
		mustWrite(t, lock, []byte(content), 0o644)
		if _, err := r.Fetch(ctx); err != nil {
			t.Fatalf("fetch beside the lock %q: %v", content, err)
		}
		p, err := r.Push(ctx)
		if err != nil || p.To.String() != head {
			t.Fatalf("push beside the lock %q: %+v, %v", content, p, err)
		}
	}
}

// TestPushSeesNewPacks: a commit made after the first push whose objects
// are only in a new pack (as the history engine writes them) is pushed:
// go-git, which lists the packs once, is made to list them again.
func TestPushSeesNewPacks(t *testing.T) {
	ctx := context.Background()
	url, tokenFile := httpRemote(t)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		commitFile(t, agent, dir, fmt.Sprintf("wiki/eng/facts/p%d.md", i), "p\n", "add p")
		runGit(t, agent, dir, "repack", "-d", "-q") // the loose objects go to a new pack
		head := strings.TrimSpace(runGit(t, agent, dir, "rev-parse", "main"))
		if p, err := r.Push(ctx); err != nil || p.To.String() != head {
			t.Fatalf("push %d after a new pack: %+v, %v", i, p, err)
		}
	}
}

func TestWrongCredentials(t *testing.T) {
	url, _ := httpRemote(t)
	wrong := filepath.Join(t.TempDir(), "token")
	const bad = "wrong-secret-1234"
	mustWrite(t, wrong, []byte(bad), 0o600)
	r, err := Open(brainRepo(t), Config{URL: url, Wing: "eng", TokenFile: wrong, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Push(context.Background())
	if !errors.Is(err, ErrCredentials) {
		t.Fatalf("push with a wrong token = %v, want ErrCredentials", err)
	}
	if strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), token) {
		t.Fatalf("the error quotes a secret: %v", err)
	}
	missing, _ := Open(brainRepo(t), Config{URL: url, Wing: "eng", TokenFile: filepath.Join(t.TempDir(), "none")}, nil)
	if _, err := missing.Push(context.Background()); !errors.Is(err, ErrSecretFile) {
		t.Fatalf("push with no token file = %v, want ErrSecretFile", err)
	}
}

func TestPushGitDaemon(t *testing.T) {
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "brain.git"); err != nil {
		t.Fatal(err)
	}
	d, err := gitserver.StartDaemon(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r, err := Open(brainRepo(t), Config{URL: d.URL + "/brain.git", Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Push(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := runGit(t, ada, filepath.Join(root, "brain.git"), "rev-parse", "main")
	if strings.TrimSpace(out) != p.To.String() {
		t.Fatalf("the daemon's main is %s, pushed %s", out, p.To)
	}
}

func TestOpenRefusesNestedRootAndPurge(t *testing.T) {
	dir := brainRepo(t)
	cfg := Config{URL: "/srv/brain.git", Wing: "eng"}
	if _, err := Open(filepath.Join(dir, "wiki"), cfg, nil); !errors.Is(err, ErrNestedRoot) {
		t.Fatalf("Open of a nested directory = %v", err)
	}
	r, err := Open(dir, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckPurge(); !errors.Is(err, ErrPurgeNeedsForcePush) {
		t.Fatalf("CheckPurge = %v", err)
	}
	cfg.ForcePushOnPurge = true
	if r, _ = Open(dir, cfg, nil); r.CheckPurge() != nil {
		t.Fatal("CheckPurge refused with ForcePushOnPurge")
	}
}

// mustWrite writes a file of the test or fails it.
func mustWrite(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}
