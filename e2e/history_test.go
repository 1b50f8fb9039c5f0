package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"

	"github.com/brainstem/brainstem/tooling/diskgrep"
)

// The history story of issue 17, end to end: a real MCP client through
// the gateway to the dev shards (platform: alice curates, bob writes,
// carol reads), and the real git CLI reading the brain's repository.

// mustJSON calls a tool that must succeed and decodes its answer.
func mustJSON(t *testing.T, c *client.Client, tool, args string, v any) string {
	t.Helper()
	text, isErr := call(t, c, tool, args)
	if isErr {
		t.Fatalf("%s %s: %s", tool, args, text)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(text), v); err != nil {
			t.Fatalf("%s: %v: %s", tool, err, text)
		}
	}
	return text
}

type e2eVersion struct {
	Version, Path, By, Action, Tool, Reason, From string
	ContentHash                                   string `json:"content_hash"`
	Removed, Purged                               bool
}

type e2eHistory struct {
	ID, Path   string
	Versions   []e2eVersion
	NextCursor string `json:"next_cursor"`
}

func historyOf(t *testing.T, c *client.Client, id string) e2eHistory {
	t.Helper()
	var h e2eHistory
	mustJSON(t, c, "brain_history", fmt.Sprintf(`{"id":%q,"limit":100}`, id), &h)
	return h
}

// gitIn runs the git CLI in dir.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func queryIDs(t *testing.T, c *client.Client, args string) []string {
	t.Helper()
	var a struct {
		Hits []struct {
			ID, Path   string
			Unreviewed bool
		}
	}
	mustJSON(t, c, "brain_query", args, &a)
	var out []string
	for _, h := range a.Hits {
		out = append(out, h.ID+"|"+h.Path+"|"+fmt.Sprint(h.Unreviewed))
	}
	return out
}

func TestHistoryThroughTheGateway(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 },
		Shard:   func(c *shard.Config) { c.History.AllowPurge = true },
	})
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	bob := httpClient(t, env.MCPURL, token(t, env, "bob@example.com"))
	carol := httpClient(t, env.MCPURL, token(t, env, "carol@example.com"))
	const id = "platform/decisions/e2e-retries"

	// Write, then two updates by two people: three versions.
	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"decisions","slug":"e2e-retries","title":"Retries","body":"Retry at most five times.\n"}`, nil)
	mustJSON(t, bob, "brain_update", `{"id":"`+id+`","body":"Retry at most three times.\n","reason":"five overloaded the queue"}`, nil)
	mustJSON(t, alice, "brain_update", `{"id":"`+id+`","body":"Retry at most twice, with jitter.\n","reason":"jitter spreads the load"}`, nil)
	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"facts","slug":"e2e-linker","title":"Linker","body":"See [[decisions/e2e-retries]].\n"}`, nil)
	h := historyOf(t, carol, id)
	if len(h.Versions) != 3 {
		t.Fatalf("history: %+v", h)
	}
	for i, want := range []struct{ by, action, reason string }{
		{"alice@example.com", "update", "jitter spreads the load"},
		{"bob@example.com", "update", "five overloaded the queue"},
		{"alice@example.com", "create", ""},
	} {
		if v := h.Versions[i]; v.By != want.by || v.Action != want.action || v.Reason != want.reason {
			t.Errorf("version %d: %+v, want %+v", i, v, want)
		}
	}
	first, second := h.Versions[2], h.Versions[1]

	// The git CLI agrees: the same commits, authors and bytes.
	log := strings.Fields(gitIn(t, env.BrainDir, "log", "--format=%H %ae", "--", "wiki/"+id+".md"))
	var fromHistory []string
	for _, v := range h.Versions {
		fromHistory = append(fromHistory, v.Version, v.By)
	}
	if !slices.Equal(log, fromHistory) {
		t.Errorf("git log %v, brain_history %v", log, fromHistory)
	}

	// Old versions read and compared.
	var old struct {
		Body        string
		ContentHash string `json:"content_hash"`
		Version     string
	}
	mustJSON(t, carol, "brain_get", `{"id":"`+id+`","version":"`+first.Version+`"}`, &old)
	if old.Body != "Retry at most five times.\n" || old.ContentHash != first.ContentHash || old.Version != first.Version {
		t.Fatalf("old version: %+v", old)
	}
	if shown := gitIn(t, env.BrainDir, "show", first.Version+":wiki/"+id+".md"); !strings.HasSuffix(shown, old.Body) {
		t.Errorf("git show of the first version: %q", shown)
	}
	var d struct{ Diff string }
	mustJSON(t, carol, "brain_diff", `{"id":"`+id+`","from":"`+first.Version+`","to":"`+second.Version+`"}`, &d)
	if !strings.Contains(d.Diff, "-Retry at most five times.") || !strings.Contains(d.Diff, "+Retry at most three times.") {
		t.Fatalf("diff: %s", d.Diff)
	}

	// Restore: the first content comes back as a fourth version.
	var r struct {
		ContentHash string `json:"content_hash"`
	}
	mustJSON(t, bob, "brain_restore", `{"id":"`+id+`","version":"`+first.Version+`","reason":"five was fine after the queue fix"}`, &r)
	if r.ContentHash != first.ContentHash {
		t.Fatalf("restored hash %s, want %s", r.ContentHash, first.ContentHash)
	}
	if h := historyOf(t, carol, id); len(h.Versions) != 4 || h.Versions[0].Action != "restore" || h.Versions[0].By != "bob@example.com" {
		t.Fatalf("after restore: %+v", h.Versions)
	}

	// A reader may neither archive nor move.
	for _, c := range []struct{ tool, args string }{
		{"brain_archive", `{"id":"` + id + `","reason":"no"}`},
		{"brain_move", `{"id":"` + id + `","hall":"facts","reason":"no"}`},
		{"brain_purge", `{"id":"` + id + `","reason":"no"}`},
	} {
		if code, _ := callErr(t, carol, c.tool, c.args); code != "forbidden" {
			t.Errorf("carol's %s: %s, want forbidden", c.tool, code)
		}
		if code, _ := callErr(t, bob, c.tool, c.args); code != "forbidden" {
			t.Errorf("bob's (a writer's) %s: %s, want forbidden", c.tool, code)
		}
	}

	// Archive: gone from search and lists; listed as archived; back after a restore.
	found := func() bool {
		return slices.ContainsFunc(queryIDs(t, carol, `{"wing":"platform","query":"retry at most five times"}`), func(s string) bool { return strings.HasPrefix(s, id+"|") })
	}
	listed := func(archived bool) bool {
		var l struct{ Notes []struct{ ID string } }
		mustJSON(t, carol, "brain_list", fmt.Sprintf(`{"wing":"platform","hall":"decisions","archived":%v}`, archived), &l)
		return slices.ContainsFunc(l.Notes, func(n struct{ ID string }) bool { return n.ID == id })
	}
	if !found() || !listed(false) {
		t.Fatal("the note is not found before the archive")
	}
	mustJSON(t, alice, "brain_archive", `{"id":"`+id+`","reason":"replaced by the retry library"}`, nil)
	if found() || listed(false) || !listed(true) {
		t.Fatalf("after the archive: found %v, listed %v, listed as archived %v", found(), listed(false), listed(true))
	}
	if code, msg := callErr(t, carol, "brain_get", `{"id":"`+id+`"}`); code != "not_found" || !strings.Contains(msg, "archived by alice@example.com") {
		t.Fatalf("get of the archived note: %s %s", code, msg)
	}
	if code, _ := callErr(t, alice, "brain_archive", `{"id":"`+id+`","reason":"again"}`); code != "invalid_argument" {
		t.Fatalf("archiving an archived note: %s", code)
	}
	h = historyOf(t, carol, id)
	mustJSON(t, bob, "brain_restore", `{"id":"`+id+`","version":"`+h.Versions[1].Version+`","reason":"still needed"}`, nil)
	if !found() || !listed(false) || listed(true) {
		t.Fatal("the restored note is not back")
	}

	// Move: the old id answers with the new place; the link is rewritten.
	const to = "platform/facts/e2e-retry-limit"
	if code, _ := callErr(t, alice, "brain_move", `{"id":"`+id+`","hall":"facts","slug":"e2e-linker","reason":"clash"}`); code != "already_exists" {
		t.Fatalf("a move onto a note: %s", code)
	}
	var mv struct {
		ID             string
		LinksRewritten int `json:"links_rewritten"`
	}
	mustJSON(t, alice, "brain_move", `{"id":"`+id+`","hall":"facts","slug":"e2e-retry-limit","reason":"a limit, not a decision"}`, &mv)
	if mv.ID != to || mv.LinksRewritten != 1 {
		t.Fatalf("move: %+v", mv)
	}
	if code, msg := callErr(t, carol, "brain_get", `{"id":"`+id+`"}`); code != "moved" || !strings.Contains(msg, to) {
		t.Fatalf("get of the old id: %s %s", code, msg)
	}
	var linker struct{ Body string }
	mustJSON(t, carol, "brain_get", `{"id":"platform/facts/e2e-linker"}`, &linker)
	if !strings.Contains(linker.Body, "[[facts/e2e-retry-limit]]") {
		t.Fatalf("the link was not rewritten: %q", linker.Body)
	}
	if h := historyOf(t, carol, id); h.ID != to || len(h.Versions) != 7 || h.Versions[0].Action != "move" {
		t.Fatalf("history by the old id after the move: %+v", h)
	}
	// git log of both paths lists the very versions brain_history lists.
	h = historyOf(t, carol, to)
	fromHistory = fromHistory[:0]
	for _, v := range h.Versions {
		fromHistory = append(fromHistory, v.Version, v.By)
	}
	if log := strings.Fields(gitIn(t, env.BrainDir, "log", "--format=%H %ae", "--", "wiki/"+id+".md", "wiki/"+to+".md")); !slices.Equal(log, fromHistory) {
		t.Errorf("git log of both paths %v, brain_history %v", log, fromHistory)
	}

	// Purge: a leaked secret, updated away, then purged from history.
	const secret = "hunter2zebracornquokka"
	const leakID = "platform/facts/e2e-leak"
	mustJSON(t, bob, "brain_write", `{"wing":"platform","hall":"facts","slug":"e2e-leak","title":"DB access","body":"The password is `+secret+`.\n"}`, nil)
	mustJSON(t, bob, "brain_update", `{"id":"`+leakID+`","body":"The password is in the vault.\n","reason":"no secrets in the brain"}`, nil)
	lh := historyOf(t, carol, leakID)
	if !onDisk(t, env.BrainDir, secret) {
		t.Fatal("the secret is not on disk before the purge: the check proves nothing")
	}
	var p struct {
		PurgedVersions int  `json:"purged_versions"`
		Removed        bool `json:"removed"`
	}
	mustJSON(t, alice, "brain_purge", `{"id":"`+leakID+`","version":"`+lh.Versions[1].Version+`","reason":"leaked password"}`, &p)
	if p.PurgedVersions != 1 || p.Removed {
		t.Fatalf("purge: %+v", p)
	}
	lh = historyOf(t, carol, leakID)
	if len(lh.Versions) != 2 || !lh.Versions[1].Purged || lh.Versions[0].Purged {
		t.Fatalf("history after the purge: %+v", lh.Versions)
	}
	var notice struct{ Body string }
	mustJSON(t, carol, "brain_get", `{"id":"`+leakID+`","version":"`+lh.Versions[1].Version+`"}`, &notice)
	if !strings.Contains(notice.Body, "purged by alice@example.com") || !strings.Contains(notice.Body, "leaked password") {
		t.Fatalf("the purged version reads %q", notice.Body)
	}
	if audit := gitIn(t, env.BrainDir, "log", "-1", "--format=%ae%n%B"); !strings.HasPrefix(audit, "alice@example.com\n") ||
		!strings.Contains(audit, "Brainstem-Action: purge") || !strings.Contains(audit, "leaked password") {
		t.Fatalf("the audit commit:\n%s", audit)
	}
	if hits := queryIDs(t, carol, `{"wing":"platform","query":"`+secret+`"}`); len(hits) != 0 {
		t.Fatalf("search finds the purged secret: %v", hits)
	}
	for _, dir := range []string{env.BrainDir, env.DataDir} {
		if onDisk(t, dir, secret) {
			t.Errorf("the purged secret is still on disk under %s", dir)
		}
	}
	if out := gitIn(t, env.BrainDir, "fsck", "--strict"); strings.Contains(out, "error") {
		t.Errorf("git fsck after the purge:\n%s", out)
	}

	// The inbox is searchable, marked unreviewed, across wings too.
	mustJSON(t, bob, "brain_write", `{"wing":"platform","inbox":true,"title":"Idea","slug":"e2e-idea","body":"Maybe quasarflux caches warm up slowly.\n"}`, nil)
	inbox := "|inbox/platform/e2e-idea.md|true"
	if got := queryIDs(t, carol, `{"wing":"platform","query":"quasarflux","scope":"inbox"}`); len(got) != 1 || got[0] != inbox {
		t.Fatalf("inbox search: %v", got)
	}
	if got := queryIDs(t, carol, `{"wing":"platform","query":"quasarflux"}`); len(got) != 0 {
		t.Fatalf("a wiki search finds the inbox note: %v", got)
	}
	if got := queryIDs(t, carol, `{"query":"quasarflux","scope":"all"}`); !slices.Contains(got, inbox) {
		t.Fatalf("cross-wing search with scope all: %v", got)
	}

	// Session logs are listed and read.
	mustJSON(t, bob, "session_log", `{"wing":"platform","session":"e2e-s1","entry":{"did":"purged a secret"}}`, nil)
	mustJSON(t, bob, "session_log", `{"wing":"platform","session":"e2e-s1","entry":{"did":"moved a note"}}`, nil)
	var sl struct {
		Sessions []struct {
			Session string
			LastBy  string `json:"last_by"`
			Size    int64
		}
	}
	mustJSON(t, carol, "session_list", `{"wing":"platform"}`, &sl)
	if len(sl.Sessions) == 0 || sl.Sessions[0].Session != "e2e-s1" || sl.Sessions[0].LastBy != "bob@example.com" || sl.Sessions[0].Size == 0 {
		t.Fatalf("session_list: %+v", sl)
	}
	var sr struct {
		Entries []struct {
			By    string
			Entry json.RawMessage
		}
		Total int
	}
	mustJSON(t, carol, "session_read", `{"wing":"platform","session":"e2e-s1"}`, &sr)
	if sr.Total != 2 || len(sr.Entries) != 2 || string(sr.Entries[1].Entry) != `{"did":"moved a note"}` || sr.Entries[0].By != "bob@example.com" {
		t.Fatalf("session_read: %+v", sr)
	}
}

// onDisk reports whether s is in any file under dir, raw, or in any object
// of a git repository at dir (git cat-file --batch-all-objects).
func onDisk(t *testing.T, dir, s string) bool {
	t.Helper()
	places, err := diskgrep.Find(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range places {
		t.Logf("%s holds %q", p, s)
	}
	return len(places) > 0
}

// TestMoveReportsLinksFromOtherWings: the links into a moved note from the
// mover's other wings are listed in the move's answer (that wing's shard
// cannot rewrite them); a wing the mover cannot read is neither asked nor
// named, though a note there links to it too.
func TestMoveReportsLinksFromOtherWings(t *testing.T) {
	env := startLiveEnv(t)
	// people-ops without alice, before she calls anything.
	if err := os.WriteFile(env.PolicyPath("people-ops"), []byte("curators: [\"group:people-team\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := env.ReloadPolicy("people-ops"); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	alice := httpClient(t, env.MCPURL, token(t, env, "alice@example.com"))
	carol := httpClient(t, env.MCPURL, token(t, env, "carol@example.com", "people-team"))
	const id, to = "platform/decisions/e2e-moved", "platform/facts/e2e-moved"
	mustJSON(t, alice, "brain_write", `{"wing":"platform","hall":"decisions","slug":"e2e-moved","title":"Moved","body":"m\n"}`, nil)
	mustJSON(t, alice, "brain_write", `{"wing":"payments","hall":"facts","slug":"e2e-tunnel","title":"Tunnel","body":"See [[`+id+`]].\n"}`, nil)
	mustJSON(t, carol, "brain_write", `{"wing":"people-ops","hall":"facts","slug":"e2e-tunnel","title":"Tunnel","body":"See [[`+id+`]].\n"}`, nil)

	var links struct{ Backlinks []string }
	mustJSON(t, carol, "brain_links", `{"wing":"people-ops","id":"`+id+`"}`, &links)
	if !slices.Equal(links.Backlinks, []string{"people-ops/facts/e2e-tunnel"}) {
		t.Fatalf("people-ops' links into %s: %v", id, links.Backlinks)
	}
	if code, _ := callErr(t, alice, "brain_links", `{"wing":"people-ops","id":"`+id+`"}`); code != "unknown_wing" {
		t.Fatalf("alice asks people-ops: %s", code)
	}

	text := mustJSON(t, alice, "brain_move", `{"id":"`+id+`","hall":"facts","reason":"a fact"}`, nil)
	var mv struct {
		ID        string
		MovedFrom string   `json:"moved_from"`
		Other     []string `json:"linked_from_other_wings"`
		Unchecked []string `json:"linked_from_other_wings_unchecked"`
	}
	if err := json.Unmarshal([]byte(text), &mv); err != nil {
		t.Fatal(err)
	}
	if mv.ID != to || mv.MovedFrom != id || !slices.Equal(mv.Other, []string{"payments/facts/e2e-tunnel"}) || mv.Unchecked != nil {
		t.Fatalf("move: %s", text)
	}
	if strings.Contains(text, "people-ops") {
		t.Fatalf("the move's answer names a wing alice cannot read: %s", text)
	}
	// The link elsewhere keeps the old id, which answers where it went.
	if code, msg := callErr(t, alice, "brain_get", `{"id":"`+id+`"}`); code != "moved" || !strings.Contains(msg, to) {
		t.Fatalf("get of the old id: %s %s", code, msg)
	}
}
