package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/frontmatter"
)

const crashEnv = "BRAINSTEM_STORE_CRASH_CHILD"

// crashChild is the child process of TestCrashDurability: it creates and
// then updates notes forever, printing "begin <op> <id>" before each write
// and "ack <id> <hash>" once the store has acknowledged it.
func crashChild(root string) {
	s, err := Open(context.Background(), Options{Root: root, Wing: testWing, RescanInterval: -1})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for i := 0; i < 10000; i++ { // bounded in case the parent is gone
		id := fmt.Sprintf("payments/facts/note-%d", i)
		fmt.Printf("begin create %s\n", id)
		n, err := s.Create(ctx, NewNote{Title: fmt.Sprintf("Note %d", i), Body: strings.Repeat(fmt.Sprintf("body of note %d. ", i), 200), Hall: "facts", By: "crash@example.com"})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("ack %s %s\n", n.ID, n.Hash)
		fmt.Printf("begin update %s\n", id)
		n, err = s.Update(ctx, Change{ID: id, Body: strings.Repeat(fmt.Sprintf("updated body %d. ", i), 300), Reason: "crash test", ExpectedHash: n.Hash, By: "crash@example.com"})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Printf("ack %s %s\n", n.ID, n.Hash)
	}
	os.Exit(3)
}

// TestCrashDurability SIGKILLs a process in the middle of a write loop and
// reopens the store: every acknowledged write is there with its exact hash,
// the write in flight left either the old or the new version (never a torn
// file), and no temporary file is visible after Open.
func TestCrashDurability(t *testing.T) {
	if root := os.Getenv(crashEnv); root != "" {
		crashChild(root)
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	// 40 acks end on an update, so the kill hits a create; 41 hits an update.
	for _, after := range []int{40, 41} {
		t.Run(fmt.Sprintf("kill after %d acks", after), func(t *testing.T) { crashAndReopen(t, after) })
	}
}

func crashAndReopen(t *testing.T, killAfter int) {
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDurability$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+root)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // never leave the child running
	acked := map[string]string{}             // id → last acknowledged hash
	inflight, op := "", ""
	sc := bufio.NewScanner(out)
	acks, killed := 0, false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "begin":
			op, inflight = f[1], f[2]
		case len(f) == 3 && f[0] == "ack":
			acked[f[1]] = f[2]
			inflight = ""
			acks++
		case len(f) > 0 && f[0] == "error":
			t.Fatalf("child: %s", sc.Text())
		}
		if acks >= killAfter && inflight != "" && !killed {
			// Kill as a write begins, so it most likely lands mid-write.
			// Lines already in the pipe are still read: they were
			// acknowledged before the kill.
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acks without being killed", acks)
	}

	s := openAt(t, root)
	ctx := context.Background()
	for id, hash := range acked {
		n, err := s.Get(ctx, id)
		if err != nil {
			t.Errorf("acknowledged %s lost: %v", id, err)
			continue
		}
		if n.Hash == hash {
			continue
		}
		// Only the update in flight at the kill may have landed without
		// its ack; then it must supersede the acknowledged version.
		if id != inflight || op != "update" || n.Get(KeySupersedes) != hash {
			t.Errorf("%s has hash %s, acknowledged %s", id, n.Hash, hash)
		}
	}
	if inflight != "" && op == "create" {
		if n, err := s.Get(ctx, inflight); err == nil {
			if _, perr := frontmatter.Parse(n.Raw); perr != nil || n.Get(KeyCreatedBy) != "crash@example.com" {
				t.Errorf("note created in flight is torn: %q", n.Raw)
			}
		}
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), atomicfile.TempPrefix) {
			t.Errorf("temporary file visible after Open: %s", p)
		}
		return err
	})
	want := len(acked)
	if inflight != "" && op == "create" {
		if _, err := s.Get(ctx, inflight); err == nil {
			want++
		}
	}
	if s.Len() != want {
		t.Errorf("index holds %d notes, want %d", s.Len(), want)
	}
	if hits, _ := s.Search(ctx, "updated", SearchOptions{Limit: 50}); len(hits) == 0 {
		t.Error("updated notes not found in the reopened index")
	}
	t.Logf("killed after %d acknowledged writes (%d notes); in flight: %s %s", acks, len(acked), op, inflight)
}
