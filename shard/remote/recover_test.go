package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/tooling/gitserver"
)

// pullFixture is a wing that has pushed to a bare repository in which a
// person then committed n new notes: the wing's next round pulls them.
func pullFixture(t *testing.T, n int) (dir, bare string) {
	t.Helper()
	dir = brainRepo(t)
	bare, err := gitserver.InitBare(t.TempDir(), "brain.git")
	if err != nil {
		t.Fatal(err)
	}
	runGit(t, agent, dir, "push", "--quiet", bare, "main")
	work := filepath.Join(t.TempDir(), "w")
	runGit(t, ada, t.TempDir(), "clone", "--quiet", bare, work)
	for i := range n {
		p := filepath.Join(work, fmt.Sprintf("wiki/eng/facts/n%d.md", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(noteBody(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runGit(t, ada, work, "add", "-A")
	commitFile(t, ada, work, "wiki/eng/facts/a.md", "---\ntitle: A\n---\nedited by Ada\n", fmt.Sprintf("Ada adds %d notes", n))
	runGit(t, ada, work, "push", "--quiet", "origin", "main")
	return dir, bare
}

func noteBody(i int) string { return fmt.Sprintf("---\ntitle: N%d\n---\nbody %d\n", i, i) }

// stale counts the pulled notes of the fixture that are not on disk as
// the branch has them.
func stale(t *testing.T, dir string, n int) int {
	t.Helper()
	bad := 0
	for i := range n {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("wiki/eng/facts/n%d.md", i)))
		if err != nil || string(b) != noteBody(i) {
			bad++
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "wiki/eng/facts/a.md")); !strings.Contains(string(b), "edited by Ada") {
		bad++
	}
	return bad
}

// TestRecoverFinishesPull: the state a crash leaves after the branch moved
// to the pull and before its notes were renamed into place (the journal,
// the notes still old), made from a real pull; Recover writes them as the
// branch has them, and drops a journal whose merge the branch never
// reached without touching a note.
func TestRecoverFinishesPull(t *testing.T) {
	const n = 50
	dir, bare := pullFixture(t, n)
	r, err := Open(dir, Config{URL: bare, Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewSyncer(r, service, nil, nil).Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if bad := stale(t, dir, n); bad != 0 {
		t.Fatalf("after the pull, %d notes are not the branch's", bad)
	}
	head := strings.TrimSpace(runGit(t, agent, dir, "rev-parse", "main"))
	journal := filepath.Join(dir, ".git", filepath.FromSlash(ApplyFile))
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf("wiki/eng/facts/n%d.md", i))
	}
	paths = append(paths, "wiki/eng/facts/a.md")
	// The crash: some notes not renamed yet, one renamed.
	for i := range n - 1 {
		os.Remove(filepath.Join(dir, fmt.Sprintf("wiki/eng/facts/n%d.md", i)))
	}
	os.WriteFile(filepath.Join(dir, "wiki/eng/facts/a.md"), []byte("---\ntitle: A\n---\nfirst\n"), 0o644)
	if err := writeJournal(journal, applyJournal{Commit: head, Paths: paths}); err != nil {
		t.Fatal(err)
	}
	got, err := Recover(dir)
	if err != nil || got != n+1 {
		t.Fatalf("Recover = %d, %v; want %d notes", got, err, n+1)
	}
	if bad := stale(t, dir, n); bad != 0 {
		t.Fatalf("after Recover, %d notes are not the branch's", bad)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("the journal stays: %v", err)
	}

	// A journal the branch never reached: the crash came before the move.
	os.WriteFile(filepath.Join(dir, "wiki/eng/facts/a.md"), []byte("local\n"), 0o644)
	if err := writeJournal(journal, applyJournal{Commit: strings.Repeat("ab", 20), Paths: paths}); err != nil {
		t.Fatal(err)
	}
	if got, err := Recover(dir); err != nil || got != 0 {
		t.Fatalf("Recover of an unreached merge = %d, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "wiki/eng/facts/a.md")); string(b) != "local\n" {
		t.Fatalf("an unreached merge's journal changed a note: %q", b)
	}
	if got, err := Recover(dir); err != nil || got != 0 {
		t.Fatalf("Recover with no journal = %d, %v", got, err)
	}
}

// TestRecoverRefusesBadJournal: a journal that is not one, or names a
// path out of the brain, is refused with ErrJournal and changes nothing.
func TestRecoverRefusesBadJournal(t *testing.T) {
	dir := brainRepo(t)
	head := strings.TrimSpace(runGit(t, agent, dir, "rev-parse", "main"))
	journal := filepath.Join(dir, ".git", filepath.FromSlash(ApplyFile))
	os.MkdirAll(filepath.Dir(journal), 0o755)
	for _, tt := range []struct{ name, body string }{
		{"not json", "{"},
		{"no commit", `{"paths":["wiki/eng/facts/a.md"]}`},
		{"escape", `{"commit":"` + head + `","paths":["../outside.md"]}`},
		{"absolute", `{"commit":"` + head + `","paths":["/etc/passwd"]}`},
	} {
		if err := os.WriteFile(journal, []byte(tt.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Recover(dir); !errors.Is(err, ErrJournal) {
			t.Errorf("%s: Recover = %v, want ErrJournal", tt.name, err)
		}
		if _, err := os.Stat(journal); err != nil {
			t.Errorf("%s: the refused journal was removed", tt.name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "wiki/eng/facts/a.md")); !strings.Contains(string(b), "first") {
		t.Fatalf("a refused journal changed a note: %q", b)
	}
}

const applyChildEnv = "BRAINSTEM_REMOTE_APPLY_CHILD"

// TestApplyChild is the child of TestCrashMidApply: one round, pulling.
func TestApplyChild(t *testing.T) {
	dir := os.Getenv(applyChildEnv)
	if dir == "" {
		t.Skip("the child of TestCrashMidApply")
	}
	r, err := Open(dir, Config{URL: os.Getenv(applyChildEnv + "_URL"), Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewSyncer(r, service, nil, nil).Round(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCrashMidApply kills a pulling process with SIGKILL as soon as the
// wing's branch moves to the pull (its notes being renamed into place):
// after Recover every note is the branch's. The kill may land after the
// last rename; the test says how many notes the crash had left stale.
func TestCrashMidApply(t *testing.T) {
	if testing.Short() {
		t.Skip("a pull of 3,000 notes")
	}
	const n = 3000
	dir, bare := pullFixture(t, n)
	ref := filepath.Join(dir, ".git", "refs", "heads", "main")
	before, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestApplyChild$")
	cmd.Env = append(os.Environ(), applyChildEnv+"="+dir, applyChildEnv+"_URL="+bare)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	moved := false
	for !moved {
		select {
		case err := <-exited:
			t.Fatalf("the child ended before its branch moved: %v", err)
		default:
		}
		b, err := os.ReadFile(ref)
		moved = err == nil && len(b) > 0 && string(b) != string(before)
	}
	cmd.Process.Kill() // SIGKILL: no defer, no flush
	<-exited
	left := stale(t, dir, n)
	got, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if bad := stale(t, dir, n); bad != 0 {
		t.Fatalf("after Recover, %d notes are not the branch's", bad)
	}
	t.Logf("the crash left %d of %d notes stale; Recover wrote %d", left, n+1, got)
}
