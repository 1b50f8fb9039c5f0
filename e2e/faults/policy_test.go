package faults

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// policyBound is how soon a policy edit on disk must be enforced (issue
// 11): the shard checks its file every 2 s (--policy-poll) and at once on
// SIGHUP, and checks the policy on every call.
const policyBound = 5 * time.Second

// TestPolicyEdit: a shard's policy file is edited on disk while two users
// read. Removing a reader (the file rewritten in place, no signal) refuses
// that reader within 5 s while the other keeps reading; granting them
// again with a SIGHUP admits them within the gateway's deny_ttl (5 s: it
// remembers a refusal that long); removing them again with a SIGHUP
// refuses them at once. Each is measured from the edit.
func TestPolicyEdit(t *testing.T) {
	const w = "platform"
	c := newCluster(t, clusterOpt{})
	path := filepath.Join(c.dir, "policy-"+w+".yaml")
	kept, removed := c.newUser("alice@example.com"), c.newUser("bob@example.com")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var mu sync.Mutex
	var calls []callRec
	var wg sync.WaitGroup
	for _, u := range []*user{kept, removed} {
		wg.Go(func() {
			for ctx.Err() == nil {
				r := u.call("brain_query", w, `{"wing":"platform","query":"retry"}`)
				mu.Lock()
				calls = append(calls, r)
				mu.Unlock()
				if !ctxSleep(ctx, 50*time.Millisecond) {
					return
				}
			}
		})
	}
	// until waits for bob's first call started after since whose outcome
	// is (or is not) ok, and returns how long after since it ended.
	until := func(since time.Time, ok bool, limit time.Duration) time.Duration {
		t.Helper()
		deadline := since.Add(limit + 5*time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			for _, r := range calls {
				if r.user == removed.email && r.start.After(since) && (r.code == "ok") == ok {
					mu.Unlock()
					return r.end().Sub(since)
				}
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("bob's calls did not turn ok=%v within %s of the edit", ok, limit+5*time.Second)
		return 0
	}
	edit := func(body string) time.Time {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // in place, as an editor or a mounted ConfigMap's kubelet might
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(body); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	hup := func() {
		t.Helper()
		if err := c.shard(w).cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	const onlyAlice = "readers: [\"email:alice@example.com\"]\nwriters: [\"email:alice@example.com\"]\ncurators: [\"email:alice@example.com\"]\n"
	const everyone = "readers: [\"*\"]\nwriters: [\"*\"]\ncurators: [\"*\"]\n"

	ctxSleep(ctx, time.Second) // both read
	tEdit := edit(onlyAlice)
	refused := until(tEdit, false, policyBound)
	tGrant := edit(everyone)
	hup()
	admitted := until(tGrant, true, policyBound)
	tEdit2 := edit(onlyAlice + "# again\n")
	hup()
	refused2 := until(tEdit2, false, policyBound)
	ctxSleep(ctx, 500*time.Millisecond)
	stop()
	wg.Wait()

	var bobCode string
	for _, r := range calls {
		if r.user == removed.email && r.start.After(tEdit2.Add(refused2)) {
			bobCode = r.code
		}
	}
	aliceCalls := summarize(filter(calls, func(r callRec) bool { return r.user == kept.email }))
	report(t, "reader removed by editing the file (poll every 2 s): refused %s after the edit (answer %s)", ms(refused), bobCode)
	report(t, "reader granted again with SIGHUP: admitted %s after the edit (the gateway's deny_ttl is 5 s)", ms(admitted))
	report(t, "reader removed again with SIGHUP: refused %s after the edit", ms(refused2))
	report(t, "the reader who stayed: %s", aliceCalls)
	if refused > policyBound || refused2 > policyBound {
		t.Errorf("a removed reader was refused %s / %s after the edit, want within %s", ms(refused), ms(refused2), policyBound)
	}
	if admitted > policyBound+time.Second {
		t.Errorf("a granted reader was admitted %s after the edit, want within deny_ttl (5 s) and a second", ms(admitted))
	}
	if aliceCalls.codes["ok"] != aliceCalls.n {
		t.Errorf("the reader who stayed in the policy had failures: %s", aliceCalls)
	}
	if n := c.shardMetric(w, `brainstem_shard_policy_reloads_total{result="ok"}`); n != "3" {
		t.Errorf("the shard counted %q policy reloads, want 3 (one per edit)", n)
	}
}
