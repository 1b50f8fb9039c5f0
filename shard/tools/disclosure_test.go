package tools

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// escapePaths reads the path attack list of shard/layout.
func escapePaths(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "brain", "testdata", "escapes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, quoted, _ := strings.Cut(line, " ")
		p, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("escapes.txt: %q: %v", line, err)
		}
		out = append(out, p)
	}
	return out
}

// TestErrorsNameBrainRelativePathsOnly provokes every error path of the
// tools that involves a file or a name: symbolic links in place of a note,
// a hall, an inbox note, the inbox, a session log and the wing's sessions
// directory; a directory where a note should be; an over-sized note; every
// path of the layout attack list as id, path, name and session; missing
// notes. No answer, error or not, may contain the brain's absolute location
// or that of anything outside it: an agent only ever learns brain-relative
// paths.
func TestErrorsNameBrainRelativePathsOnly(t *testing.T) {
	s, _, root := fixture(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	if err := os.WriteFile(secret, []byte("---\ntitle: Secret\n---\nnot in the brain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "hall"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustCall(t, s, writer, "brain_write", `{"title":"Doomed","body":"its hall becomes a link","hall":"sources"}`, nil)
	mustCall(t, s, writer, "session_log", `{"session":"kept","entry":{"a":1}}`, nil)

	link := func(target, rel string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	link(secret, "wiki/payments/facts/linked.md")
	link(secret, "wiki/payments/decisions/use-idempotency-keys.md") // an indexed note replaced by a link
	link(filepath.Join(outside, "hall"), "wiki/payments/sources")   // a hall replaced by a link
	link(secret, "inbox/payments/linked.md")
	link(secret, "sessions/payments/linked.jsonl")
	if err := os.Mkdir(filepath.Join(root, "wiki", "payments", "hypotheses", "dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := "---\ntitle: Big\n---\n" + strings.Repeat("x", 4<<20)
	if err := os.WriteFile(filepath.Join(root, "wiki", "payments", "failures", "big.md"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}

	type req struct {
		c          Caller
		tool, args string
	}
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	reqs := []req{
		{reader, "brain_get", `{"id":"payments/facts/linked"}`},
		{reader, "brain_get", `{"path":"wiki/payments/facts/linked.md"}`},
		{reader, "brain_get", `{"id":"payments/decisions/use-idempotency-keys"}`},
		{reader, "brain_get", `{"id":"payments/sources/doomed"}`},
		{reader, "brain_get", `{"path":"inbox/payments/linked.md"}`},
		{reader, "brain_get", `{"id":"payments/hypotheses/dir"}`},
		{reader, "brain_get", `{"id":"payments/failures/big"}`},
		{reader, "brain_get", `{"id":"payments/facts/missing"}`},
		{reader, "brain_get", `{"path":"inbox/payments/missing.md"}`},
		{reader, "brain_links", `{"id":"payments/decisions/use-idempotency-keys"}`},
		{reader, "brain_links", `{"id":"payments/facts/linked"}`},
		{reader, "brain_list", `{}`},
		{reader, "brain_list", `{"hall":"sources"}`},
		{reader, "brain_query", `{"query":"idempotency link hall secret"}`},
		{reader, "brain_query", `{"query":"doomed","hall":"sources"}`},
		{reader, "brain_pending", `{}`},
		{writer, "brain_write", `{"title":"Linked","body":"b","hall":"facts"}`},
		{writer, "brain_write", `{"title":"In a linked hall","body":"b","hall":"sources"}`},
		{writer, "brain_write", `{"title":"Linked","body":"b","inbox":true}`},
		{writer, "brain_write", `{"title":"Dir","body":"b","hall":"hypotheses"}`},
		{writer, "brain_update", `{"id":"payments/facts/linked","body":"b","reason":"r"}`},
		{writer, "brain_update", `{"id":"payments/decisions/use-idempotency-keys","body":"b","reason":"r"}`},
		{writer, "brain_update", `{"id":"payments/sources/doomed","body":"b","reason":"r"}`},
		{writer, "brain_update", `{"id":"payments/failures/big","body":"b","reason":"r"}`},
		{writer, "brain_update", `{"id":"payments/hypotheses/dir","body":"b","reason":"r"}`},
		{writer, "brain_ingest_raw", `{"pages":[{"hall":"facts","slug":"linked","title":"t","body":"b"},{"hall":"sources","title":"t","body":"b"}]}`},
		{writer, "brain_ingest_raw", `{"dry_run":true,"pages":[{"hall":"facts","slug":"linked","title":"t","body":"b"},{"hall":"sources","title":"t","body":"b"}]}`},
		{writer, "session_log", `{"session":"linked","entry":{"a":1}}`},
		{curator, "brain_promote", `{"name":"linked","hall":"facts"}`},
		{curator, "brain_promote", `{"name":"maybe-retries-cause-storms","hall":"sources"}`},
		{curator, "brain_promote", `{"name":"maybe-retries-cause-storms","hall":"facts","slug":"linked"}`},
		{curator, "brain_promote", `{"name":"missing","hall":"facts"}`},
	}
	for _, p := range escapePaths(t) {
		reqs = append(reqs,
			req{reader, "brain_get", `{"id":` + q(p) + `}`},
			req{reader, "brain_get", `{"path":` + q(p) + `}`},
			req{reader, "brain_get", `{"path":` + q("inbox/payments/"+p) + `}`},
			req{reader, "brain_links", `{"id":` + q(p) + `}`},
			req{writer, "brain_update", `{"id":` + q(p) + `,"body":"b","reason":"r"}`},
			req{writer, "brain_write", `{"title":"t","body":"b","hall":"facts","slug":` + q(p) + `}`},
			req{writer, "session_log", `{"session":` + q(p) + `,"entry":{}}`},
			req{curator, "brain_promote", `{"name":` + q(p) + `,"hall":"facts"}`},
			req{curator, "brain_promote", `{"name":"maybe-retries-cause-storms","hall":"facts","slug":` + q(p) + `}`},
		)
	}
	// Last: the wing's sessions directory and inbox become links too.
	reqs = append(reqs, req{writer, "session_log", `{"session":"kept","entry":{"b":2}}`})
	forbidden := []string{root, outside, filepath.Dir(root), filepath.Dir(outside)}
	errorsSeen := 0
	check := func(r req) {
		t.Helper()
		res, isErr := call(t, s, r.c, r.tool, r.args)
		if isErr {
			errorsSeen++
		}
		for _, f := range forbidden {
			if strings.Contains(res, f) {
				t.Errorf("%s %.200s answered %s, which names %s", r.tool, r.args, res, f)
				break
			}
		}
	}
	for _, r := range reqs {
		check(r)
	}
	link(outside, "sessions/payments")
	link(outside, "inbox/payments")
	for _, r := range []req{
		{writer, "session_log", `{"session":"kept","entry":{"b":2}}`},
		{writer, "session_log", `{"session":"new","entry":{"b":2}}`},
		{reader, "brain_pending", `{}`},
		{reader, "brain_get", `{"path":"inbox/payments/maybe-retries-cause-storms.md"}`},
		{writer, "brain_write", `{"title":"Into a linked inbox","body":"b","inbox":true}`},
		{curator, "brain_promote", `{"name":"maybe-retries-cause-storms","hall":"facts"}`},
	} {
		check(r)
	}
	if errorsSeen < 100 {
		t.Fatalf("only %d of the calls failed: the test provokes too little", errorsSeen)
	}
	if b, err := os.ReadFile(secret); err != nil || !strings.Contains(string(b), "not in the brain") {
		t.Fatalf("the file outside the brain changed: %q %v", b, err)
	}
}
