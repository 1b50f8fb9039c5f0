package history

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// TestConcurrentWriters: 20 goroutines changing one path (as the store
// does, one at a time under the note's lock) and others renaming and
// removing notes leave one linear history holding every change.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	h := b.open(b.options())
	const writers, each = 20, 10
	p := "wiki/pay/facts/hot.md"
	var noteLock sync.Mutex // the store's per-note lock
	want := map[string]bool{}
	var wantMu sync.Mutex
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Sprintf("writer %d change %d\n", w, i)
				noteLock.Lock()
				pend, err := h.Begin(Change{Ops: []Op{{Path: p, Content: []byte(body)}}, Author: fmt.Sprintf("w%d@acme.com", w), Action: "update"})
				if err != nil {
					noteLock.Unlock()
					t.Error(err)
					return
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(b.root, p)), 0o755); err != nil {
					t.Error(err)
				}
				if err := os.WriteFile(filepath.Join(b.root, p), []byte(body), 0o644); err != nil {
					t.Error(err)
				}
				pend.Landed()
				noteLock.Unlock()
				wantMu.Lock()
				want[hashOf(body)] = true
				wantMu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() { // renames and removals of other notes meanwhile
		defer wg.Done()
		for i := range 10 {
			from, to := fmt.Sprintf("wiki/pay/facts/m%d.md", i), fmt.Sprintf("wiki/pay/decisions/m%d.md", i)
			b.write(h, "mover@acme.com", Op{Path: from, Content: []byte("moving " + from)})
			b.write(h, "mover@acme.com", Op{Path: to, From: from, Content: []byte("moved " + to)})
			if i%2 == 0 {
				b.write(h, "mover@acme.com", Op{Path: to, Remove: true})
			}
		}
	}()
	wg.Wait()
	vs, _, err := h.Versions(ctx, p, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != writers*each {
		t.Fatalf("%d versions of %s, want %d", len(vs), p, writers*each)
	}
	for _, v := range vs {
		if !want[v.ContentHash] {
			t.Errorf("version %s holds content nobody wrote", v.ID)
		}
	}
	if raw := b.read(p); hashOf(raw) != vs[0].ContentHash {
		t.Errorf("the newest version is not the file")
	}
	h.Close()
	if merges := strings.TrimSpace(b.git("rev-list", "--merges", "HEAD")); merges != "" {
		t.Errorf("merges in a linear history: %s", merges)
	}
	if n := strings.Count(b.git("rev-list", "HEAD"), "\n"); n != writers*each+25 {
		t.Errorf("%d commits, want %d", n, writers*each+25)
	}
	if out, err := b.gitErr("fsck", "--strict", "--full"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	// Batches of several commits went into packs, merged as they come.
	counts := b.git("count-objects", "-v")
	if packs := countField(counts, "packs"); packs > 12 {
		t.Errorf("%d packs after one test:\n%s", packs, counts)
	}
	t.Log(counts)
}

// TestTwoWingsOneRepository: two Historys on one repository (two wings,
// as in development) commit concurrently without losing a commit, and a
// commit made meanwhile with the git CLI is picked up by both.
func TestTwoWingsOneRepository(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	pay := b.open(b.options())
	ops := b.open(b.optionsFor("ops", filepath.Join(b.root, ".brainstem", "ops", "history")))
	const n = 30
	var wg sync.WaitGroup
	for _, w := range []struct {
		h    *History
		wing string
	}{{pay, "pay"}, {ops, "ops"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				b.write(w.h, "ann@acme.com", Op{Path: fmt.Sprintf("wiki/%s/facts/n%d.md", w.wing, i%5), Content: []byte(fmt.Sprintf("%s %d", w.wing, i))})
				if i == n/2 && w.wing == "pay" {
					b.put("wiki/pay/facts/by-hand.md", "a person's note\n")
					if err := handCommit(b, "wiki/pay/facts/by-hand.md", "Add a note by hand"); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	flush(t, pay)
	flush(t, ops)
	for _, w := range []struct {
		h    *History
		wing string
	}{{pay, "pay"}, {ops, "ops"}} {
		total := 0
		for i := range 5 {
			vs, _, err := w.h.Versions(ctx, fmt.Sprintf("wiki/%s/facts/n%d.md", w.wing, i), "", 100)
			if err != nil {
				t.Fatal(err)
			}
			total += len(vs)
		}
		if total != n {
			t.Errorf("wing %s has %d versions, want %d", w.wing, total, n)
		}
	}
	vs, _, err := pay.Versions(ctx, "wiki/pay/facts/by-hand.md", "", 10)
	if err != nil || len(vs) != 1 || vs[0].Action != ActionOutside || vs[0].Author != "person@acme.com" {
		t.Fatalf("the hand commit: %+v %v", vs, err)
	}
	if _, _, err := ops.Versions(ctx, "wiki/pay/facts/by-hand.md", "", 10); err == nil {
		t.Error("the ops wing lists a note of the pay wing")
	}
	pay.Close()
	ops.Close()
	if got := strings.Count(b.git("rev-list", "HEAD"), "\n"); got != 2*n+1 {
		t.Errorf("%d commits, want %d (no initial commit: both wings start empty)", got, 2*n+1)
	}
	if st := b.git("status", "--porcelain"); st != "" {
		t.Errorf("git status:\n%s", st)
	}
	if out, err := b.gitErr("fsck", "--strict"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

// handCommit commits a file with the git CLI, as a person in the brain
// would, trying again when git loses the race for the ref or index lock
// against the shards (git refuses then; a person would retry).
func handCommit(b *testBrain, path, msg string) error {
	var out string
	var err error
	for range 200 {
		if out, err = b.gitErr("add", path); err != nil {
			continue
		}
		if out, err = b.gitErr("commit", "-q", "-m", msg, "--", path); err == nil {
			return nil
		}
	}
	return fmt.Errorf("git commit kept failing: %v\n%s", err, out)
}

// TestSharedRepositoryWhilePacking: three Historys on one repository, as
// the shards of a brain directory are, two of them writing from several
// goroutines (commit batches become packs, packs are merged and deleted
// every few batches) while the third is opened and closed again and
// again, as a shard restarted after kill -9 is, and their histories are
// read. Every Open and every read succeeds, and no History logs a
// warning or an error: no failed commit, no history taken for rewritten.
// Reads once failed here when another process's merge deleted the packs
// go-git had listed.
func TestSharedRepositoryWhilePacking(t *testing.T) {
	ctx := context.Background()
	b := newBrain(t)
	var logs logcheck.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := func(wing string) Options {
		opt := b.optionsFor(wing, filepath.Join(b.root, ".brainstem", wing, "history"))
		opt.Logger, opt.packEvery = logger.With("wing", wing), 40
		return opt
	}
	writers := map[string]*History{"pay": b.open(opts("pay")), "ops": b.open(opts("ops"))}
	const goroutines, writes = 3, 150
	var wg sync.WaitGroup
	for wing, h := range writers {
		for g := range goroutines {
			wg.Go(func() {
				for i := range writes {
					b.write(h, "ann@acme.com", Op{Path: fmt.Sprintf("wiki/%s/facts/g%d-n%d.md", wing, g, i%4), Content: []byte(fmt.Sprintf("%s %d %d", wing, g, i))})
				}
			})
		}
	}
	written := make(chan struct{})
	go func() { wg.Wait(); close(written) }()
	// eng reads every commit pay and ops make: it is opened again each
	// round, and its reads first catch up with the branch head.
	eng := b.open(opts("eng"))
	rounds := 0
	for running := true; running; rounds++ {
		select {
		case <-written:
			running = false
		default:
		}
		eng.Close()
		var err error
		if eng, err = Open(ctx, opts("eng")); err != nil {
			<-written
			t.Fatalf("open eng, round %d: %v", rounds+1, err)
		}
		_, _, err = eng.Versions(ctx, "wiki/eng/facts/none.md", "", 1)
		if e, ok := brain.As(err); !ok || e.Code != brain.CodeNotFound {
			<-written
			t.Fatalf("eng catching up: %v", err)
		}
		for wing, w := range writers {
			vs, _, err := w.Versions(ctx, fmt.Sprintf("wiki/%s/facts/g0-n0.md", wing), "", 100)
			if e, ok := brain.As(err); ok && e.Code == brain.CodeNotFound {
				err = nil // not committed yet
			}
			for _, v := range vs {
				if err == nil {
					_, _, err = w.Read(ctx, v.Path, v.ID)
				}
			}
			if err != nil {
				<-written
				t.Fatalf("read the history of %s: %v", wing, err)
			}
		}
	}
	eng.Close()
	for wing, h := range writers {
		flush(t, h)
		total := 0
		for g := range goroutines {
			for n := range 4 {
				vs, _, err := h.Versions(ctx, fmt.Sprintf("wiki/%s/facts/g%d-n%d.md", wing, g, n), "", 100)
				if err != nil {
					t.Fatal(err)
				}
				total += len(vs)
			}
		}
		if total != goroutines*writes {
			t.Errorf("wing %s has %d versions, want %d", wing, total, goroutines*writes)
		}
	}
	for _, h := range writers {
		h.Close() // no pack merged while git checks the repository
	}
	packs, _ := filepath.Glob(filepath.Join(b.root, ".git", "objects", "pack", "pack-*.pack"))
	t.Logf("%d rounds of opens and reads while %d commits were written; %d packs at the end", rounds, 2*goroutines*writes, len(packs))
	if logs.String() != "" {
		t.Errorf("warnings or errors were logged:\n%s", logs.String())
	}
	if out, err := b.gitErr("fsck", "--strict"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}
