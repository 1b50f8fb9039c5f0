package hooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// gitRepo makes a repository named name with a README and commits, and
// returns its directory; the test is skipped without git.
func gitRepo(t testing.TB, name, readme string, subjects ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on $PATH")
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "retry-budget")
	run("add", ".")
	for i, s := range subjects {
		if i == 0 {
			run("commit", "-q", "-m", s)
		} else {
			run("commit", "-q", "--allow-empty", "-m", s)
		}
	}
	return dir
}

func TestReadRepo(t *testing.T) {
	dir := gitRepo(t, "payments-retries", "<img src=logo.png>\n\n# Payments retries\n\nHow the PSP client retries.\n",
		"Add exponential backoff to PSP capture", "fix: idempotency keys on retried payment API calls")
	sub := filepath.Join(dir, "psp")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got := readRepo(context.Background(), "", sub)
	want := repoInfo{Name: "payments-retries", Branch: "retry-budget", Title: "Payments retries",
		Subjects: []string{"fix: idempotency keys on retried payment API calls", "Add exponential backoff to PSP capture"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("readRepo = %+v, want %+v", got, want)
	}
	q := got.query()
	for _, w := range []string{"payments", "retries", "budget", "exponential", "backoff", "psp", "idempotency"} {
		if !strings.Contains(" "+q+" ", " "+w+" ") {
			t.Errorf("query %q lacks %q", q, w)
		}
	}
	for _, noise := range []string{"fix", "add", "readme"} {
		if strings.Contains(" "+q+" ", " "+noise+" ") {
			t.Errorf("query %q holds %q", q, noise)
		}
	}
	if _, changed := gitStatus(context.Background(), "", dir); changed {
		t.Error("a clean repository has changes")
	}
	if err := os.WriteFile(filepath.Join(dir, "psp", "client.go"), []byte("package psp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, changed := gitStatus(context.Background(), "", dir); !changed || d == "" {
		t.Error("a new file is no change")
	}
}

// TestReadRepoOutsideGit: outside a repository the directory's name and
// README are all there is; without git, the same.
func TestReadRepoOutsideGit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notes-tool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("\nA tool for ledger notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{"", filepath.Join(dir, "no-git-here")} {
		if got := readRepo(context.Background(), bin, dir); got.Name != "notes-tool" || got.Title != "A tool for ledger notes" || got.Branch != "" {
			t.Errorf("readRepo(%q) = %+v", bin, got)
		}
	}
}

// TestStatePrune: session files older than stateTTL and temporary files a
// killed hook left go; recent ones stay.
func TestStatePrune(t *testing.T) {
	cache, now := t.TempDir(), time.Now()
	old := &sessionState{Version: stateVersion, SessionID: "old", Started: now}
	recent := &sessionState{Version: stateVersion, SessionID: "recent", Started: now}
	for _, st := range []*sessionState{old, recent} {
		if err := st.save(context.Background(), cache); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(stateDir(cache), ".tmp-123")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	long := now.Add(-stateTTL - time.Hour)
	for _, p := range []string{statePath(cache, "old"), tmp} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	pruneStates(context.Background(), cache, now)
	for p, want := range map[string]bool{statePath(cache, "old"): false, tmp: false, statePath(cache, "recent"): true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
	if got := loadState(cache, "recent", now); got.SessionID != "recent" || !got.Started.Equal(recent.Started) {
		t.Errorf("loadState = %+v", got)
	}
}
