package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/store"
)

// The crash test of idempotent writes: a child process runs keyed writes of
// every write tool in a loop and is SIGKILLed — at a random moment, right
// after an intent is recorded (before the change), or right after a change
// landed (before its commit). The parent reopens the wing and retries every
// call the child began, with the same key and arguments, and requires:
// every acknowledged answer comes back byte for byte, every retry
// succeeds, and every change is on disk exactly once.

const (
	crashRootEnv  = "BRAINSTEM_TOOLS_CRASH_ROOT"
	crashStageEnv = "BRAINSTEM_TOOLS_CRASH_STAGE" // stage at which the child kills itself
	crashKeyEnv   = "BRAINSTEM_TOOLS_CRASH_KEY"   // ... during the call with this key
	crashNthEnv   = "BRAINSTEM_TOOLS_CRASH_NTH"   // ... at the stage's n-th occurrence in that call
)

type crashOp struct {
	key, tool, args string
	c               Caller
}

// crashOps are the calls of round i, in order. They are a pure function of
// i so the parent can retry exactly what the child sent.
func crashOps(i int) []crashOp {
	k := func(p string) string { return fmt.Sprintf("%s-%d", p, i) }
	with := func(args, key string) string {
		return strings.TrimSuffix(args, "}") + `,"idempotency_key":"` + key + `"}`
	}
	return []crashOp{
		{k("w"), "brain_write", with(fmt.Sprintf(`{"title":"Note %d","body":%q,"hall":"facts"}`, i, strings.Repeat(fmt.Sprintf("body %d. ", i), 100)), k("w")), writer},
		{k("s"), "session_log", with(fmt.Sprintf(`{"session":"crash","entry":{"round":%d}}`, i), k("s")), writer},
		{k("u"), "brain_update", with(fmt.Sprintf(`{"id":"payments/facts/note-%d","body":"updated %d\n","reason":"crash test"}`, i, i), k("u")), writer},
		{k("i"), "brain_ingest_raw", with(fmt.Sprintf(`{"pages":[{"hall":"sources","title":"Page %d a","body":"a"},{"hall":"sources","title":"Page %d b","body":"b"},{"hall":"sources","title":"Page %d c","body":"c"}]}`, i, i, i), k("i")), writer},
		{k("n"), "brain_write", with(fmt.Sprintf(`{"title":"Inbox %d","body":"to promote","inbox":true}`, i), k("n")), writer},
		{k("p"), "brain_promote", with(fmt.Sprintf(`{"name":"inbox-%d","hall":"hypotheses"}`, i), k("p")), curator},
	}
}

func openCrashSet(t testing.TB, root string) (*Set, func()) {
	st, err := store.Open(context.Background(), store.Options{Root: root, Wing: wing, RescanInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	j, err := idempotency.Open(idempotency.Options{Path: filepath.Join(root, ".brainstem", wing, "idempotency.journal"), Settle: Settle(st)})
	if err != nil {
		t.Fatal(err)
	}
	return New(st, Options{Journal: j}), func() { j.Close(); st.Close() }
}

type crashEvent struct {
	Ev     string `json:"ev"` // begin, ack
	Key    string `json:"key"`
	Result string `json:"result,omitempty"`
	IsErr  bool   `json:"is_err,omitempty"`
}

func crashChildLoop(t *testing.T, root string) {
	s, _ := openCrashSet(t, root)
	stage, killKey := os.Getenv(crashStageEnv), os.Getenv(crashKeyEnv)
	nth, _ := strconv.Atoi(os.Getenv(crashNthEnv))
	current, seen := "", 0
	s.testStage = func(name string) {
		if name == stage && current == killKey {
			if seen++; seen == nth {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never returns
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for i := 0; i < 500; i++ { // bounded in case the parent is gone
		for _, op := range crashOps(i) {
			current = op.key
			enc.Encode(crashEvent{Ev: "begin", Key: op.key})
			res, isErr := s.Call(context.Background(), op.c, op.tool, []byte(op.args))
			enc.Encode(crashEvent{Ev: "ack", Key: op.key, Result: string(res), IsErr: isErr})
		}
	}
	os.Exit(3)
}

func TestCrashIdempotentWrites(t *testing.T) {
	if root := os.Getenv(crashRootEnv); root != "" {
		crashChildLoop(t, root)
		return
	}
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	tests := []struct {
		name       string
		stage, key string
		nth        int
		killAfter  int // random mode: kill at the first begin after this many acks
	}{
		{name: "write: after the intent", stage: "intent recorded", key: "w-2", nth: 1},
		{name: "write: after the change", stage: "change landed", key: "w-2", nth: 1},
		{name: "session_log: after the change", stage: "change landed", key: "s-2", nth: 1},
		{name: "update: after the intent", stage: "intent recorded", key: "u-2", nth: 1},
		{name: "update: after the change", stage: "change landed", key: "u-2", nth: 1},
		{name: "ingest: after the second page's change", stage: "change landed", key: "i-2", nth: 2},
		{name: "ingest: after the third page's intent", stage: "intent recorded", key: "i-2", nth: 3},
		{name: "promote: after the change", stage: "change landed", key: "p-2", nth: 1},
		{name: "random 1", killAfter: 40},
		{name: "random 2", killAfter: 57},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashIdempotentWrites$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashRootEnv+"="+root, crashStageEnv+"="+tt.stage, crashKeyEnv+"="+tt.key, crashNthEnv+"="+strconv.Itoa(tt.nth))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			acked := map[string]crashEvent{}
			var begun []string
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var ev crashEvent
				if json.Unmarshal(sc.Bytes(), &ev) != nil {
					continue // other test output
				}
				switch ev.Ev {
				case "begin":
					begun = append(begun, ev.Key)
					if tt.killAfter > 0 && len(acked) >= tt.killAfter {
						cmd.Process.Signal(syscall.SIGKILL)
					}
				case "ack":
					if ev.IsErr {
						t.Errorf("child: %s answered an error: %s", ev.Key, ev.Result)
					}
					acked[ev.Key] = ev
				}
			}
			err = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("child was not killed: %v", err)
			}
			inflight := begun[len(begun)-1]
			if _, ok := acked[inflight]; ok {
				inflight = ""
			}
			t.Logf("killed with %d calls acknowledged; in flight: %q", len(acked), inflight)
			verifyAfterCrash(t, root, begun, acked)
		})
	}
}

func verifyAfterCrash(t *testing.T, root string, begun []string, acked map[string]crashEvent) {
	s, closeSet := openCrashSet(t, root)
	defer closeSet()
	ops := map[string]crashOp{}
	for i := 0; i*6 <= len(begun); i++ {
		for _, op := range crashOps(i) {
			ops[op.key] = op
		}
	}
	answers := map[string]string{}
	for _, key := range begun {
		op := ops[key]
		res, isErr := s.Call(context.Background(), op.c, op.tool, []byte(op.args))
		if isErr {
			t.Errorf("retry of %s failed: %s", key, res)
			continue
		}
		if a, ok := acked[key]; ok && a.Result != string(res) {
			t.Errorf("retry of acknowledged %s answered\n%s\nnot the acknowledged\n%s", key, res, a.Result)
		}
		if again, _ := s.Call(context.Background(), op.c, op.tool, []byte(op.args)); string(again) != string(res) {
			t.Errorf("a second retry of %s answered %s, not %s", key, again, res)
		}
		answers[key] = string(res)
	}
	// Every change is on disk exactly once.
	ctx := context.Background()
	rounds := 0
	for _, key := range begun {
		if strings.HasPrefix(key, "w-") {
			rounds++
		}
	}
	countMD := func(dir string) int { return countFiles(t, filepath.Join(root, dir)) }
	if got := countMD("wiki/payments/facts"); got != rounds {
		t.Errorf("%d notes in facts, want %d", got, rounds)
	}
	log, _ := os.ReadFile(filepath.Join(root, "sessions", wing, "crash.jsonl"))
	for _, key := range begun {
		var i int
		fmt.Sscanf(key[2:], "%d", &i)
		switch key[0] {
		case 's':
			if n := strings.Count(string(log), fmt.Sprintf(`"entry":{"round":%d}`, i)); n != 1 {
				t.Errorf("session entry of round %d appears %d times", i, n)
			}
			var r sessionResult
			json.Unmarshal([]byte(answers[key]), &r)
			if lines := strings.Split(string(log), "\n"); r.Line < 1 || r.Line > len(lines) || !strings.Contains(lines[r.Line-1], fmt.Sprintf(`{"round":%d}`, i)) {
				t.Errorf("%s answered line %d, which does not hold its entry", key, r.Line)
			}
		case 'u':
			var w writeResult
			json.Unmarshal([]byte(answers[fmt.Sprintf("w-%d", i)]), &w)
			n, err := st(s).Get(ctx, fmt.Sprintf("payments/facts/note-%d", i))
			if err != nil {
				t.Errorf("note %d: %v", i, err)
				continue
			}
			if n.Get(store.KeySupersedes) != w.ContentHash || n.Body != fmt.Sprintf("updated %d\n", i) {
				t.Errorf("note %d was not updated exactly once on top of its creation: supersedes %s, created %s", i, n.Get(store.KeySupersedes), w.ContentHash)
			}
			var u writeResult
			json.Unmarshal([]byte(answers[key]), &u)
			if u.ContentHash != n.Hash {
				t.Errorf("%s answered hash %s, the note has %s", key, u.ContentHash, n.Hash)
			}
		case 'i':
			var r ingestResult
			json.Unmarshal([]byte(answers[key]), &r)
			if r.Created != 3 || r.Failed != 0 {
				t.Errorf("%s: %s", key, answers[key])
			}
			for _, p := range r.Pages {
				if n, err := st(s).Get(ctx, p.ID); err != nil || n.Hash != p.ContentHash {
					t.Errorf("%s: page %s: %v", key, p.ID, err)
				}
			}
		case 'p':
			if _, err := os.Stat(filepath.Join(root, "inbox", wing, fmt.Sprintf("inbox-%d.md", i))); err == nil {
				t.Errorf("the inbox note of %s is still there", key)
			}
			if _, err := st(s).Get(ctx, fmt.Sprintf("payments/hypotheses/inbox-%d", i)); err != nil {
				t.Errorf("promoted note of %s: %v", key, err)
			}
		}
	}
	if got, want := countMD("wiki/payments/sources"), 3*strings.Count(strings.Join(begun, " "), "i-"); got != want {
		t.Errorf("%d ingested pages, want %d", got, want)
	}
}

func st(s *Set) *store.Store { return s.st }
