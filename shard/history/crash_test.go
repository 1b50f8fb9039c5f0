package history

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const crashChildEnv = "BRAINSTEM_HISTORY_CRASH_CHILD"

// TestCrashChild is the child of TestCrash: a write loop through Begin,
// a durable file change and Landed, reporting every change it begins
// ("B …") and every change acknowledged ("A …") on file descriptor 3.
func TestCrashChild(t *testing.T) {
	root := os.Getenv(crashChildEnv)
	if root == "" {
		t.Skip("the child of TestCrash")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashChildEnv+"_SEED"), 10, 64)
	out := bufio.NewWriter(os.NewFile(3, "report"))
	b := brainAt(t, root)
	h, err := Open(context.Background(), b.options())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	authors := []string{"ann@acme.com", "bob@acme.com", "cy@acme.com"}
	for i := 0; ; i++ {
		op, line := b.nextOp(rng, i)
		author := authors[rng.IntN(len(authors))]
		p, err := h.Begin(Change{Ops: []Op{op}, Author: author, Action: "update"})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "B %s %s\n", line, author)
		out.Flush()
		b.apply(op)
		p.Landed()
		fmt.Fprintf(out, "A %s %s\n", line, author)
		out.Flush()
	}
}

// brainAt is a test brain in an existing directory.
func brainAt(t testing.TB, root string) *testBrain {
	b := &testBrain{t: t, root: root, state: filepath.Join(root, ".brainstem", "pay", "history"), wing: "pay",
		clock: &testClock{t: time.Now().UTC().Truncate(time.Second)}}
	return b
}

// nextOp picks a change of one of a few notes: a new version mostly, now
// and then a rename or a removal. line describes it for the report:
// "put <path> <sha256>", "mv <from> <to> <sha256>" or "rm <path>".
func (b *testBrain) nextOp(rng *rand.Rand, i int) (Op, string) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	path := func(n string) string { return "wiki/pay/facts/" + n + ".md" }
	var have, free []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(b.root, filepath.FromSlash(path(n)))); err == nil {
			have = append(have, path(n))
		} else {
			free = append(free, path(n))
		}
	}
	body := []byte(fmt.Sprintf("---\ntitle: note\n---\nversion %d, %d\n%s\n", i, rng.Uint64(), strings.Repeat("text ", rng.IntN(50))))
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	switch r := rng.IntN(10); {
	case r == 0 && len(have) > 1:
		p := have[rng.IntN(len(have))]
		return Op{Path: p, Remove: true, HadBase: true, Base: b.sum(p)}, "rm " + p
	case r == 1 && len(have) > 0 && len(free) > 0:
		from, to := have[rng.IntN(len(have))], free[rng.IntN(len(free))]
		return Op{Path: to, From: from, Content: body}, "mv " + from + " " + to + " " + hash
	}
	p := path(names[rng.IntN(len(names))])
	op := Op{Path: p, Content: body}
	if _, err := os.Stat(filepath.Join(b.root, filepath.FromSlash(p))); err == nil {
		op.Base, op.HadBase = b.sum(p), true
	}
	return op, "put " + p + " " + hash
}

func (b *testBrain) sum(rel string) [32]byte {
	raw, _ := os.ReadFile(filepath.Join(b.root, filepath.FromSlash(rel)))
	return sha256.Sum256(raw)
}

// apply makes the files hold op, durably (as the store does).
func (b *testBrain) apply(op Op) {
	abs := func(p string) string { return filepath.Join(b.root, filepath.FromSlash(p)) }
	if op.Remove {
		if err := os.Remove(abs(op.Path)); err != nil {
			b.t.Fatal(err)
		}
		return
	}
	b.put(op.Path, string(op.Content))
	if op.From != "" {
		if err := os.Remove(abs(op.From)); err != nil {
			b.t.Fatal(err)
		}
	}
}

// TestCrash kills the child write loop with SIGKILL at random moments,
// several rounds, and after each reopens the history: every acknowledged
// change is in it with its author and content hash, it holds nothing
// that was not on disk (each version's content was begun by the child,
// and the newest version of each path is what the file holds), and git
// fsck passes.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	b := newBrain(t)
	b.put("wiki/pay/facts/a.md", note("A", "before"))
	begun := map[string]bool{hashOf(note("A", "before")): true}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var acked []string
	for round := range 5 {
		acked = append(acked, runChild(t, b.root, rng.Uint64(), 5+rng.IntN(60), begun)...)
		h, err := Open(context.Background(), b.options())
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		flush(t, h)
		t.Logf("round %d: %d acknowledged so far", round, len(acked))
		checkCrashHistory(t, b, h, acked, begun)
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if out, err := b.gitErr("fsck", "--strict"); err != nil {
			t.Fatalf("round %d: git fsck: %v\n%s", round, err, out)
		}
	}
	t.Logf("%d acknowledged changes over 5 rounds", len(acked))
}

// runChild runs the child until it has acknowledged n changes, kills it,
// and returns its acknowledgements; every content it began goes into
// begun.
func runChild(t *testing.T, root string, seed uint64, n int, begun map[string]bool) []string {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+root, crashChildEnv+"_SEED="+strconv.FormatUint(seed, 10))
	cmd.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var acked []string
	sc := bufio.NewScanner(r)
	read := func() {
		line := sc.Text()
		f := strings.Fields(line)
		if f[0] == "B" && f[1] != "rm" {
			begun[f[len(f)-2]] = true
		}
		if f[0] == "A" {
			acked = append(acked, strings.TrimPrefix(line, "A "))
		}
	}
	for len(acked) < n && sc.Scan() {
		read()
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The child went on until the kill: what it began meanwhile may be on
	// disk and in history, so read the rest of its report too.
	for sc.Scan() {
		read()
	}
	r.Close()
	if len(acked) < n {
		t.Fatalf("the child stopped after %d acknowledgements:\n%s", len(acked), stderr.String())
	}
	return acked
}

func checkCrashHistory(t *testing.T, b *testBrain, h *History, acked []string, begun map[string]bool) {
	t.Helper()
	h.mu.RLock()
	defer h.mu.RUnlock()
	var all []Version
	for _, l := range h.ix.lineages() {
		for i := range l.vs {
			all = append(all, l.vs[i].public())
		}
	}
	has := func(match func(v Version) bool) bool {
		for _, v := range all {
			if match(v) {
				return true
			}
		}
		return false
	}
	for i, a := range acked {
		f := strings.Fields(a)
		author := f[len(f)-1]
		var ok bool
		switch f[0] {
		case "put":
			ok = has(func(v Version) bool { return v.Path == f[1] && v.ContentHash == f[2] && v.Author == author })
		case "mv":
			ok = has(func(v Version) bool { return v.Path == f[2] && v.ContentHash == f[3] && v.Author == author })
		case "rm":
			ok = has(func(v Version) bool { return v.Path == f[1] && v.Removed && v.Author == author })
		}
		if !ok {
			t.Errorf("acknowledged change %d %q is not in history", i, a)
		}
	}
	for _, v := range all {
		if !v.Removed && !begun[v.ContentHash] {
			t.Errorf("history holds content nobody wrote: %+v", v)
		}
	}
	var paths []string
	for p := range h.ix.byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		v := h.ix.byPath[p].newest()
		raw, err := os.ReadFile(filepath.Join(b.root, filepath.FromSlash(p)))
		switch {
		case err != nil && !v.removed:
			t.Errorf("%s: history's newest version has content, the file is gone", p)
		case err == nil && (v.removed || hex.EncodeToString(v.sum[:]) != hashOf(string(raw))):
			t.Errorf("%s: history's newest version is not what the file holds", p)
		}
	}
}
