package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/search"
	fm "github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/store"
)

// TestConcurrentWritersUpdatersPromoters runs writers, optimistic updaters
// (expected_hash, retry on conflict), promoters and readers at once in one
// wing under -race, then checks: no acknowledged update is lost (conflicts
// were reported, never silent), contended creates and promotions had one
// winner each, no file is torn, and the index and _index.md match what a
// fresh scan of the disk gives.
func TestConcurrentWritersUpdatersPromoters(t *testing.T) {
	s, st, root := newSet(t)
	ctx := context.Background()
	const (
		writers, notesPerWriter = 4, 6
		updaters, updatesEach   = 5, 4
		promoters, inboxNotes   = 3, 6
	)
	mustCall(t, s, writer, "brain_write", `{"title":"Counter","body":"start\n","hall":"facts"}`, nil)
	for i := range inboxNotes {
		mustCall(t, s, writer, "brain_write", fmt.Sprintf(`{"title":"Inbox %d","body":"inbox body %d","inbox":true}`, i, i), nil)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	created := map[string]int{} // contended slug → wins
	acked := map[string]bool{}  // update markers acknowledged
	promoted := map[string]int{}
	conflicts := 0

	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range notesPerWriter {
				// Own note, plus one slug every writer races for.
				res, isErr := s.Call(ctx, writer, "brain_write", []byte(fmt.Sprintf(`{"title":"W%d note %d","body":"uniqueword%dx%d","hall":"sources"}`, w, i, w, i)))
				if isErr {
					fail("write own: %s", res)
				}
				res, isErr = s.Call(ctx, writer, "brain_write", []byte(fmt.Sprintf(`{"title":"Contended %d","body":"by writer %d","hall":"decisions"}`, i, w)))
				switch {
				case !isErr:
					mu.Lock()
					created[fmt.Sprint(i)]++
					mu.Unlock()
				case !strings.Contains(string(res), `"already_exists"`):
					fail("contended write: %s", res)
				}
			}
		}()
	}
	for u := range updaters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < updatesEach; {
				var g struct {
					ContentHash string `json:"content_hash"`
					Body        string `json:"body"`
				}
				res, isErr := s.Call(ctx, reader, "brain_get", []byte(`{"id":"payments/facts/counter"}`))
				if isErr || json.Unmarshal(res, &g) != nil {
					fail("get counter: %s", res)
					return
				}
				marker := fmt.Sprintf("u%d-%d", u, k)
				args, _ := json.Marshal(map[string]string{"id": "payments/facts/counter", "body": g.Body + marker + "\n", "reason": marker, "expected_hash": g.ContentHash})
				res, isErr = s.Call(ctx, writer, "brain_update", args)
				switch {
				case !isErr:
					mu.Lock()
					acked[marker] = true
					mu.Unlock()
					k++
				case strings.Contains(string(res), `"conflict"`):
					mu.Lock()
					conflicts++
					mu.Unlock()
				default:
					fail("update: %s", res)
					return
				}
			}
		}()
	}
	for range promoters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range inboxNotes {
				res, isErr := s.Call(ctx, curator, "brain_promote", []byte(fmt.Sprintf(`{"name":"inbox-%d","hall":"hypotheses"}`, i)))
				switch {
				case !isErr:
					mu.Lock()
					promoted[fmt.Sprint(i)]++
					mu.Unlock()
				case strings.Contains(string(res), `"not_found"`), strings.Contains(string(res), `"already_exists"`):
				default:
					fail("promote: %s", res)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // a reader hammering the index meanwhile
		defer wg.Done()
		for range 30 {
			for _, c := range []struct{ tool, args string }{{"brain_query", `{"query":"contended inbox note"}`}, {"brain_list", `{"limit":200}`}, {"brain_pending", `{}`}} {
				if res, isErr := s.Call(ctx, reader, c.tool, []byte(c.args)); isErr {
					fail("%s: %s", c.tool, res)
				}
			}
		}
	}()
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}

	// No lost update: every acknowledged marker is in the final body, once.
	var g struct{ Body string }
	mustCall(t, s, reader, "brain_get", `{"id":"payments/facts/counter"}`, &g)
	if len(acked) != updaters*updatesEach {
		t.Errorf("%d updates acknowledged, want %d", len(acked), updaters*updatesEach)
	}
	for m := range acked {
		if strings.Count(g.Body, m+"\n") != 1 {
			t.Errorf("acknowledged update %s lost or duplicated", m)
		}
	}
	if lines := strings.Count(g.Body, "\n"); lines != 1+len(acked) {
		t.Errorf("counter has %d lines, want %d", lines, 1+len(acked))
	}
	t.Logf("%d conflicts reported and retried", conflicts)
	for i := range notesPerWriter {
		if created[fmt.Sprint(i)] != 1 {
			t.Errorf("contended slug %d created %d times", i, created[fmt.Sprint(i)])
		}
	}
	for i := range inboxNotes {
		if promoted[fmt.Sprint(i)] != 1 {
			t.Errorf("inbox-%d promoted %d times", i, promoted[fmt.Sprint(i)])
		}
	}
	if res := mustCall(t, s, reader, "brain_pending", `{}`, nil); res != `{"pending":[]}` {
		t.Errorf("inbox after promotions: %s", res)
	}

	// No torn file, no temporary file.
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		if strings.HasSuffix(p, ".md") && d.Name() != "_index.md" {
			raw, _ := os.ReadFile(p)
			doc, err := fm.Parse(raw)
			if err != nil {
				t.Errorf("torn note %s: %v", p, err)
			} else if v, _ := doc.Get("created_by"); v == "" {
				t.Errorf("note %s lost its frontmatter", p)
			}
		}
		return nil
	})

	// The index agrees with the disk: a fresh store over the same files
	// lists the same notes, and the live _index.md is what it generates.
	live := listAll(t, s)
	if err := st.SyncIndex(); err != nil { // _index.md is written behind by default
		t.Fatal(err)
	}
	toc, _ := os.ReadFile(filepath.Join(root, "wiki/payments/_index.md"))
	fresh, err := store.Open(ctx, store.Options{Root: root, Wing: wing, RescanInterval: -1, History: store.HistoryOptions{Off: true}}) // a second reader of the wing
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if again := listAll(t, New(fresh, Options{})); again != live {
		t.Errorf("live listing differs from a fresh scan:\n%s\n---\n%s", live, again)
	}
	if toc2, _ := os.ReadFile(filepath.Join(root, "wiki/payments/_index.md")); string(toc2) != string(toc) {
		t.Errorf("_index.md differs from a fresh scan's")
	}
	wantNotes := 1 + writers*notesPerWriter + notesPerWriter + inboxNotes
	if n := strings.Count(live, "\n"); n != wantNotes {
		t.Errorf("%d notes listed, want %d", n, wantNotes)
	}
	for w := range writers {
		for i := range notesPerWriter {
			var r search.Result
			mustCall(t, s, reader, "brain_query", fmt.Sprintf(`{"query":"uniqueword%dx%d"}`, w, i), &r)
			if len(r.Hits) != 1 {
				t.Errorf("note of writer %d #%d not found by its unique word", w, i)
			}
		}
	}
}

// listAll lists every note (id, title, hash) through the tools.
func listAll(t *testing.T, s *Set) string {
	var b strings.Builder
	cursor := ""
	for {
		var l listResult
		mustCall(t, s, reader, "brain_list", `{"limit":200,"cursor":"`+cursor+`"}`, &l)
		for _, n := range l.Notes {
			var g struct {
				ContentHash string `json:"content_hash"`
			}
			mustCall(t, s, reader, "brain_get", `{"id":"`+n.ID+`"}`, &g)
			fmt.Fprintf(&b, "%s %s %s\n", n.ID, n.Title, g.ContentHash)
		}
		if cursor = l.NextCursor; cursor == "" {
			return b.String()
		}
	}
}

// TestConcurrentHistoryOfOneNote: 20 callers update, move (between two
// places) and archive-and-restore one note at once. Each call succeeds or
// is refused; afterwards the note's history is one linear lineage holding
// exactly one version per acknowledged change, with its author and
// reason, its newest version is the file on disk, and git agrees.
func TestConcurrentHistoryOfOneNote(t *testing.T) {
	s, st, root := newSet(t)
	ctx := context.Background()
	places := [2]string{"payments/facts/contended", "payments/decisions/contended"}
	mustCall(t, s, writer, "brain_write", `{"title":"Contended","body":"v0\n","hall":"facts","slug":"contended"}`, nil)
	const callers, rounds = 20, 6
	var mu sync.Mutex
	acked := map[string]string{} // reason → the action it must be recorded as
	// land retries one change, wherever the note is now, until it is
	// acknowledged: a call may be refused while another caller has the note
	// archived or moved, but never with an internal error, and a bounded
	// number of tries always lands (each refusal means someone else's
	// change landed).
	land := func(c Caller, action, reason string, call func(id string) ([]byte, bool)) bool {
		for range 500 {
			for _, id := range places {
				res, isErr := call(id)
				if !isErr {
					if !strings.Contains(string(res), `"unchanged":true`) { // a restore to what is there is no change
						mu.Lock()
						acked[reason] = action
						mu.Unlock()
					}
					return true
				}
				if code, _ := errCode(t, string(res)); code == brain.CodeInternal {
					t.Errorf("%s %s by %s: %s", action, id, c.Email, res)
					return false
				}
			}
		}
		t.Errorf("%s %q by %s: never acknowledged", action, reason, c.Email)
		return false
	}
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			c := Caller{Email: fmt.Sprintf("c%02d@example.com", i), Caps: curator.Caps}
			for r := range rounds {
				reason := fmt.Sprintf("c%02d-r%d", i, r)
				switch i % 3 {
				case 0:
					land(c, "update", reason, func(id string) ([]byte, bool) {
						return s.Call(ctx, c, "brain_update", []byte(fmt.Sprintf(`{"id":%q,"body":"%s\n","reason":%q}`, id, reason, reason)))
					})
				case 1:
					land(c, "move", reason, func(id string) ([]byte, bool) {
						other := places[0]
						if id == places[0] {
							other = places[1]
						}
						return s.Call(ctx, c, "brain_move", []byte(fmt.Sprintf(`{"id":%q,"hall":%q,"reason":%q}`, id, strings.Split(other, "/")[1], reason)))
					})
				case 2:
					var archivedAt string
					if !land(c, "archive", reason, func(id string) ([]byte, bool) {
						res, isErr := s.Call(ctx, c, "brain_archive", []byte(fmt.Sprintf(`{"id":%q,"reason":%q}`, id, reason)))
						archivedAt = id
						return res, isErr
					}) {
						return
					}
					// Bring it back: restore the version before this
					// caller's archive (others may have changed it since;
					// restoring an older version is a change too).
					back := reason + "-back"
					land(c, "restore", back, func(id string) ([]byte, bool) {
						h, err := st.Versions(ctx, archivedAt, "", 2)
						if err != nil {
							t.Error(err)
							return nil, false
						}
						return s.Call(ctx, c, "brain_restore", []byte(fmt.Sprintf(`{"id":%q,"version":%q,"reason":%q}`, id, h.Versions[1].ID, back)))
					})
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := range callers {
		for r := range rounds {
			if reason := fmt.Sprintf("c%02d-r%d", i, r); acked[reason] == "" {
				t.Fatalf("change %s was not acknowledged", reason)
			}
		}
	}

	// Where is the note now? Its lineage, by its first id.
	var vs []history.Version
	cursor := ""
	for {
		h, err := st.Versions(ctx, places[0], cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, h.Versions...)
		if cursor = h.Next; cursor == "" {
			break
		}
	}
	seen := map[string]bool{}
	for _, v := range vs[:len(vs)-1] {
		want, ok := acked[v.Reason]
		if !ok || want != v.Action || seen[v.Reason] || v.Author != strings.SplitN(v.Reason, "-", 2)[0]+"@example.com" {
			t.Errorf("version %s: %s by %s (%q): not one acknowledged change, or twice", v.ID, v.Action, v.Author, v.Reason)
		}
		seen[v.Reason] = true
	}
	if len(vs)-1 != len(acked) || vs[len(vs)-1].Action != "create" {
		t.Errorf("%d versions after the create for %d acknowledged changes", len(vs)-1, len(acked))
	}
	newest := vs[0]
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(newest.Path)))
	if newest.Removed || err != nil || store.HashOf(raw) != newest.ContentHash {
		t.Errorf("the newest version %+v is not the file on disk (%v)", newest, err)
	}
	for _, p := range places {
		if p != strings.TrimSuffix(strings.TrimPrefix(newest.Path, "wiki/"), ".md") {
			if _, err := os.Stat(filepath.Join(root, "wiki", p+".md")); err == nil {
				t.Errorf("%s exists besides the newest version at %s", p, newest.Path)
			}
		}
	}
	// git: one linear history; its commits of the note are the versions.
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	if m := git("rev-list", "--merges", "HEAD"); m != "" {
		t.Errorf("merge commits in history: %s", m)
	}
	logged := strings.Fields(git("log", "--format=%H", "--", "wiki/"+places[0]+".md", "wiki/"+places[1]+".md"))
	if len(logged) != len(vs) {
		t.Fatalf("git log lists %d commits of the note, history %d versions", len(logged), len(vs))
	}
	for i, v := range vs {
		if logged[i] != v.ID {
			t.Errorf("commit %d: git %s, history %s", i, logged[i], v.ID)
		}
	}
	t.Logf("%d acknowledged changes by %d callers, %d versions", len(acked), callers, len(vs))
}
