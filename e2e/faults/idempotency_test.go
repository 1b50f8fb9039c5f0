package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// quotedKey finds the key an outcome_unknown message tells the agent to
// retry with.
var quotedKey = regexp.MustCompile(`"idempotency_key": "([A-Za-z0-9._:-]+)"`)

// TestLostWriteRetriedWithTheGatewaysKey: a real shard applies a write
// whose answers never reach the gateway (a relay drops the shard's
// packets): the gateway finds the connection silent, sends the write once
// more, cannot reconnect, and answers outcome_unknown quoting the gw-… key
// it sent the write with (the agent gave none). Once the network heals,
// the agent's retry with that key as its idempotency_key is answered from
// the shard's journal: the first answer, the note on disk exactly once.
func TestLostWriteRetriedWithTheGatewaysKey(t *testing.T) {
	const w = "platform"
	c := newCluster(t, clusterOpt{relay: []string{w}})
	u := c.newUser("alice@example.com")
	if r := u.call("brain_query", w, `{"wing":"platform","query":"retry"}`); r.code != "ok" {
		t.Fatalf("warm-up: %s %s", r.code, r.text)
	}
	title := fmt.Sprintf("Lost answer %d", time.Now().UnixNano())
	args := map[string]any{"wing": w, "hall": "facts", "title": title, "body": "Written once, whatever the network does.\n"}
	first, _ := json.Marshal(args)

	c.relays[w].drop.Store(true)
	r := u.call("brain_write", w, string(first))
	var te struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(r.text), &te)
	m := quotedKey.FindStringSubmatch(te.Error.Message)
	if r.code != "outcome_unknown" || m == nil || !strings.HasPrefix(m[1], "gw-") {
		t.Fatalf("a write whose answers are lost: %s %s, want outcome_unknown quoting a gw- key", r.code, r.text)
	}
	key := m[1]
	report(t, "write with its answers dropped: outcome_unknown after %s, quoting key %s", ms(r.latency), key)
	if got := c.metric(`brainstem_gateway_lost_write_retries_total{wing="platform"}`); got != "1" {
		t.Errorf("lost_write_retries_total = %q, want 1 (sent once more)", got)
	}
	if files := notesTitled(t, c, w, title); len(files) != 1 {
		t.Fatalf("before the retry the note is on disk %d times, want once (the shard applied the write): %v", len(files), files)
	}

	c.relays[w].drop.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for c.metric(`brainstem_gateway_shard_connected{wing="platform"}`) != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not reconnect within 30 s of the network healing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	args["idempotency_key"] = key
	again, _ := json.Marshal(args)
	rr, wr := u.writeArgs(w, string(again))
	if rr.code != "ok" || wr == nil {
		t.Fatalf("retry with the quoted key: %s %s", rr.code, rr.text)
	}
	files := notesTitled(t, c, w, title)
	if len(files) != 1 || files[0] != filepath.Join(c.brain, filepath.FromSlash(wr.Path)) {
		t.Fatalf("after the retry the note is on disk as %v, want once, at %s", files, wr.Path)
	}
	if lost := c.verifyWrites([]written{*wr}); lost != 0 {
		t.Fatal("the answer of the retry does not match the note on disk")
	}
	if got := c.shardMetric(w, "brainstem_shard_idempotency_replays_total"); got != "1" {
		t.Errorf("the shard's idempotency_replays_total = %q, want 1 (the retry answered from the journal)", got)
	}
	report(t, "retry with the gateway's key: answered from the shard's journal (%s), note on disk once", ms(rr.latency))
}

// notesTitled lists the note files of wing (wiki and inbox; not the
// _index.md tables of contents) whose text holds title.
func notesTitled(t *testing.T, c *cluster, wing, title string) []string {
	t.Helper()
	var out []string
	for _, top := range []string{"wiki", "inbox"} {
		root := filepath.Join(c.brain, top, wing)
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) && p == root {
					return nil
				}
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".md") || strings.HasPrefix(d.Name(), "_") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), title) {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// notesByTitle maps the title of every note of wing (wiki and inbox, not
// the _index.md tables) to the files that carry it.
func notesByTitle(t *testing.T, c *cluster, wing string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range notesTitled(t, c, wing, "") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "title: "); ok {
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				} else if len(v) > 1 && v[0] == '\'' && v[len(v)-1] == '\'' {
					v = strings.ReplaceAll(v[1:len(v)-1], "''", "'")
				}
				out[v] = append(out[v], p)
				break
			}
		}
	}
	return out
}
