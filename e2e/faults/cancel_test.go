package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// cpuBudget is what a cancelled call may cost a shard, from the call to
// the shard's CPU being quiet again (issue 34).
const cpuBudget = time.Second

// TestCancelledCallCPU (issue 34): a brain_diff or a brain_query whose
// client goes away costs the shard at most a second of CPU, however long
// the call would have run. The diff is issue 34's reproduction: a note of
// 131,072 lines "a" updated to 131,072 lines "b"; before the fix the shard
// computed it for about 95 s, long after the gateway had answered
// timeout. Each call is made twice: the client goes away right after
// sending it (the gateway then sees it gone, often before it calls the
// shard), and once the shard has started on it (its CPU grew), so that the
// call surely reached the shard's handler. The shard is its own process:
// its CPU time (utime + stime) is read from /proc, so the test client's
// and the gateway's do not count.
func TestCancelledCallCPU(t *testing.T) {
	c := newCluster(t, clusterOpt{})
	const w = "payments"
	u := c.newUser("alice@example.com")
	diff := bigNoteDiff(t, u, w)
	pid := c.shard(w).cmd.Process.Pid
	if _, err := procCPU(pid); err != nil {
		t.Skipf("cannot read the shard's CPU time: %v", err)
	}
	for _, tc := range []struct {
		tool, args string
		mustReach  bool // the shard is seen working on the call before the client goes away
	}{
		{"brain_diff", diff, true},
		{"brain_query", `{"wing":"` + w + `","query":"b a retry budget"}`, false},
	} {
		for _, atOnce := range []bool{true, false} {
			before := quietCPU(t, pid)
			started := false
			err := u.callGone(tc.tool, tc.args, func() {
				if !atOnce {
					started = shardStarted(pid, before)
				}
			})
			after := quietCPU(t, pid)
			when := "right after sending"
			if !atOnce {
				when = fmt.Sprintf("once the shard was working on it (seen: %v)", started)
			}
			report(t, "%s, client gone %s (%v): the shard's CPU grew %s (budget %s)", tc.tool, when, err, ms(after-before), ms(cpuBudget))
			if after-before > cpuBudget {
				t.Errorf("a cancelled %s (client gone %s) cost the shard %s of CPU, want at most %s", tc.tool, when, after-before, cpuBudget)
			}
			if !atOnce && tc.mustReach && !started {
				t.Errorf("%s: the shard was not seen working on the call within %s: the check proves nothing", tc.tool, startWait)
			}
		}
	}

	// The same diff, waited for, is a successful answer: too different.
	before := quietCPU(t, pid)
	rec := mustOK(t, u.call("brain_diff", w, diff))
	var d struct {
		TooDifferent bool `json:"too_different"`
		FromLines    int  `json:"from_lines"`
	}
	if err := json.Unmarshal([]byte(rec.text), &d); err != nil || !d.TooDifferent || d.FromLines < 131072 {
		t.Fatalf("brain_diff: %v %.300s", err, rec.text)
	}
	report(t, "brain_diff of issue 34 answered too_different in %s, %s of the shard's CPU", ms(rec.latency), ms(quietCPU(t, pid)-before))
}

// bigNoteDiff writes issue 34's note in wing w, a note of 131,072 lines
// "a", updates it to 131,072 lines "b", and returns the brain_diff
// arguments of the two versions.
func bigNoteDiff(t *testing.T, u *user, w string) string {
	t.Helper()
	body := func(line string) string { return strings.Repeat(line+"\n", 131072) }
	write, _ := json.Marshal(map[string]any{"wing": w, "hall": "facts", "title": "Big", "slug": "big-issue-34", "body": body("a")})
	mustOK(t, u.call("brain_write", w, string(write)))
	update, _ := json.Marshal(map[string]any{"id": w + "/facts/big-issue-34", "body": body("b"), "reason": "issue 34"})
	mustOK(t, u.call("brain_update", w, string(update)))
	var h struct {
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
	}
	rec := mustOK(t, u.call("brain_history", w, `{"id":"`+w+`/facts/big-issue-34"}`))
	if err := json.Unmarshal([]byte(rec.text), &h); err != nil || len(h.Versions) != 2 {
		t.Fatalf("history: %v %.300s", err, rec.text)
	}
	return `{"id":"` + w + `/facts/big-issue-34","from":"` + h.Versions[1].Version + `"}`
}

// startWait bounds the wait for the shard to start on a call.
const startWait = 500 * time.Millisecond

// shardStarted waits until the process's CPU time is past base (the shard
// is working on the call), polling every 2 ms for at most startWait.
func shardStarted(pid int, base time.Duration) bool {
	for deadline := time.Now().Add(startWait); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if now, err := procCPU(pid); err == nil && now > base {
			return true
		}
	}
	return false
}

func mustOK(t *testing.T, rec callRec) callRec {
	t.Helper()
	if rec.code != "ok" {
		t.Fatalf("%s: %s %.300s", rec.tool, rec.code, rec.text)
	}
	return rec
}

// callGone calls tool and goes away once the request is written and
// wait returned: the request's context is cancelled, which closes its
// connection.
func (u *user) callGone(tool, args string, wait func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		go func() {
			wait()
			cancel()
		}()
	}})
	_, err := u.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}})
	return err
}

// quietCPU waits until the process's CPU time stops growing (less than
// 10 ms in half a second) and returns it; after 10 s it returns what it
// has, so that a process that keeps computing fails the budget.
func quietCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	last, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		now, err := procCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if now-last < 10*time.Millisecond {
			return now
		}
		last = now
	}
	return last
}

// procCPU is the CPU time (user and system) process pid has used, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields counted from 3 start after the last ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
