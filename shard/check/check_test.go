package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/deploy/examples"
	"github.com/brainstem/brainstem/shard/check"
	"github.com/brainstem/brainstem/shard/store"
)

const (
	P = "wiki/platform"
	M = P + "/facts/scratch-note.md"                     // written by sampleCopy; nothing links to it
	N = P + "/failures/2026-04-dns-outage-ndots.md"      // a note other notes link to
	I = "inbox/platform/2026-11-20-retry-budget-idea.md" // an inbox note with a hall
)

const scratch = "---\ntitle: Scratch note for the checker test\nwing: platform\nhall: facts\ntags: [test]\ncreated_by: test@example.com\ncreated_at: 2026-11-30T00:00:00Z\n---\nLinks to [[platform/facts/cluster-inventory]].\n"

// sampleCopy copies the sample brain into a temp dir and adds M.
func sampleCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "brain")
	if err := os.CopyFS(dir, examples.Brain()); err != nil {
		t.Fatal(err)
	}
	write(t, dir, M, scratch)
	return dir
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mv(t *testing.T, dir, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new in a file of the brain.
func edit(t *testing.T, dir, rel, old, new string) {
	t.Helper()
	s := read(t, dir, rel)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", rel, old)
	}
	write(t, dir, rel, strings.Replace(s, old, new, 1))
}

// TestBrain: the sample brain is clean, and every kind of defect is
// reported with its path (the cases of the former check-brain.sh, and
// more).
func TestBrain(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		path   string // "" → no problem
		msg    string
	}{
		{"sample", func(*testing.T, string) {}, "", ""},
		{"upper-slug", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/Scratch-Note.md") }, P + "/facts/Scratch-Note.md", "slug has 'S'"},
		{"double-hyphen", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/scratch--note.md") }, P + "/facts/scratch--note.md", "doubled '-'"},
		{"trailing-hyphen", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/scratch-note-.md") }, P + "/facts/scratch-note-.md", "leading, trailing or doubled '-'"},
		{"long-slug", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/"+strings.Repeat("a", 97)+".md") }, P + "/facts/" + strings.Repeat("a", 97) + ".md", "the limit is 96"},
		{"max-slug", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/"+strings.Repeat("a", 96)+".md") }, "", ""},
		{"not-md", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/scratch-note.txt") }, P + "/facts/scratch-note.txt", "is not a note"},
		{"loose-file", func(t *testing.T, d string) { write(t, d, P+"/notes.md", scratch) }, P + "/notes.md", "not in a hall"},
		{"bad-hall", func(t *testing.T, d string) { mv(t, d, M, P+"/ideas/x.md") }, P + "/ideas/", "not a hall"},
		{"bad-wing", func(t *testing.T, d string) { write(t, d, "wiki/Platform_2/facts/x.md", scratch) }, "wiki/Platform_2/", "not a wing"},
		{"top-level-entries-ignored", func(t *testing.T, d string) {
			write(t, d, "README.md", "hi")
			write(t, d, "drafts/x.md", "x")
			write(t, d, ".git/HEAD", "ref")
		}, "", ""},
		{"too-deep", func(t *testing.T, d string) { mv(t, d, M, P+"/facts/old/x.md") }, P + "/facts/old/", "a directory inside a hall"},
		{"symlink", func(t *testing.T, d string) {
			if err := os.Symlink("../facts/scratch-note.md", filepath.Join(d, P, "sources", "link.md")); err != nil {
				t.Skip(err)
			}
		}, P + "/sources/link.md", "symbolic link"},
		{"bad-session", func(t *testing.T, d string) { write(t, d, "sessions/platform/Log.txt", "{}\n") }, "sessions/platform/Log.txt", "not a session log"},
		{"session-ok", func(t *testing.T, d string) { write(t, d, "sessions/platform/s-0001.jsonl", "{\"a\":1}\n{}\n") }, "", ""},
		{"session-bad-line", func(t *testing.T, d string) { write(t, d, "sessions/platform/s-1.jsonl", "{}\n[1]\n") }, "sessions/platform/s-1.jsonl", "line 2 is not a JSON object"},
		{"index-generated", func(t *testing.T, d string) { write(t, d, P+"/_index.md", "# toc\n") }, "", ""},
		{"temp-file", func(t *testing.T, d string) { write(t, d, P+"/facts/.tmp-123", "torn") }, P + "/facts/.tmp-123", "interrupted write"},
		{"gitkeep-ok", func(t *testing.T, d string) { write(t, d, P+"/facts/.gitkeep", "") }, "", ""},
		{"too-large", func(t *testing.T, d string) { write(t, d, M, scratch+strings.Repeat("x", 1<<20)) }, M, "over the 1048576-byte limit"},
		{"no-frontmatter", func(t *testing.T, d string) { write(t, d, M, strings.TrimPrefix(scratch, "---\n")) }, M, "no frontmatter"},
		{"no-close", func(t *testing.T, d string) { write(t, d, M, strings.Replace(scratch, "---\nLinks", "Links", 1)) }, M, "never closed"},
		{"crlf-ok", func(t *testing.T, d string) { write(t, d, M, strings.ReplaceAll(scratch, "\n", "\r\n")) }, "", ""},
		{"wing-mismatch", func(t *testing.T, d string) { edit(t, d, M, "wing: platform", "wing: payments") }, M, "does not match the path's wing"},
		{"hall-mismatch", func(t *testing.T, d string) { edit(t, d, M, "hall: facts", "hall: sources") }, M, "does not match the path's hall"},
		{"empty-wing", func(t *testing.T, d string) { edit(t, d, M, "wing: platform", "wing: \"\"") }, M, `"wing" is empty`},
		{"missing-author", func(t *testing.T, d string) { edit(t, d, M, "created_by: test@example.com\n", "") }, M, `lacks "created_by"`},
		{"missing-hall", func(t *testing.T, d string) { edit(t, d, M, "hall: facts\n", "") }, M, `lacks "hall"`},
		{"inbox-no-hall", func(t *testing.T, d string) { edit(t, d, I, "hall: hypotheses\n", "") }, "", ""},
		{"inbox-bad-hall", func(t *testing.T, d string) { edit(t, d, I, "hall: hypotheses", "hall: ideas") }, I, `suggested hall "ideas"`},
		{"inbox-bad-name", func(t *testing.T, d string) { mv(t, d, I, "inbox/platform/2026 idea.md") }, "inbox/platform/2026 idea.md", "not an inbox note name"},
		{"key-order-ok", func(t *testing.T, d string) {
			edit(t, d, M, "title: Scratch note for the checker test\nwing: platform\n", "wing: platform\ntitle: Scratch note for the checker test\n")
		}, "", ""},
		{"duplicate-key", func(t *testing.T, d string) { edit(t, d, M, "tags: [test]\n", "tags: [a]\ntags: [test]\n") }, M, "frontmatter cannot be read"},
		{"title-colon", func(t *testing.T, d string) {
			edit(t, d, M, "title: Scratch note for the checker test", "title: Inventory: production")
		}, M, "frontmatter cannot be read"},
		{"title-quoted", func(t *testing.T, d string) {
			edit(t, d, M, "title: Scratch note for the checker test", "title: \"Inventory: production\"")
		}, "", ""},
		{"bad-tags", func(t *testing.T, d string) { edit(t, d, M, "tags: [test]", "tags: kubernetes") }, M, "tags must be a list"},
		{"bad-author", func(t *testing.T, d string) { edit(t, d, M, "created_by: test@example.com", "created_by: dana") }, M, "not an email address"},
		{"bad-date", func(t *testing.T, d string) {
			edit(t, d, M, "created_at: 2026-11-30T00:00:00Z", "created_at: 2026-02-02 08:30")
		}, M, "not an RFC 3339 time"},
		{"broken-link", func(t *testing.T, d string) { write(t, d, M, scratch+"[[platform/facts/no-such-note]]\n") }, M, "does not exist (wiki/platform/facts/no-such-note.md)"},
		{"malformed-link", func(t *testing.T, d string) { write(t, d, M, scratch+"[[platform/no-such-note]]\n") }, M, "not of the form"},
		{"link-bad-hall", func(t *testing.T, d string) { write(t, d, M, scratch+"[[platform/ideas/x]]\n") }, M, "not of the form"},
		{"same-wing-link-ok", func(t *testing.T, d string) {
			write(t, d, M, scratch+"[[facts/cluster-inventory|clusters]] [[platform/facts/cluster-inventory#top]]\n")
		}, "", ""},
		{"link-to-deleted", func(t *testing.T, d string) { os.Remove(filepath.Join(d, N)) }, "", "does not exist (" + N + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := sampleCopy(t)
			tt.mutate(t, dir)
			rep, err := check.Brain(context.Background(), dir, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.msg == "" {
				if !rep.OK() {
					t.Fatalf("problems in a valid brain: %+v", rep.Problems)
				}
				return
			}
			found := false
			for _, p := range rep.Problems {
				if (tt.path == "" || p.Path == tt.path) && strings.Contains(p.Message, tt.msg) {
					found = true
				}
			}
			if !found || rep.OK() {
				t.Fatalf("want a problem at %q containing %q; got %+v", tt.path, tt.msg, rep.Problems)
			}
		})
	}
}

// TestBrainReportsEveryProblem: one report holds every problem of the
// brain, sorted by path, and counts what a shard would load.
func TestBrainReportsEveryProblem(t *testing.T) {
	dir := sampleCopy(t)
	mv(t, dir, M, P+"/facts/Bad_Slug.md")
	write(t, dir, P+"/facts/linker.md", strings.Replace(scratch, "cluster-inventory", "missing", 1))
	write(t, dir, "wiki/ops/decisions/x.md", "no frontmatter [[ops/facts/nope]]\n")
	rep, err := check.Brain(context.Background(), dir, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"wiki/ops/decisions/x.md: no frontmatter",
		"wiki/ops/decisions/x.md: link [[ops/facts/nope]] points at a note that does not exist",
		P + "/facts/Bad_Slug.md: not a note name: slug has 'B'",
		P + "/facts/linker.md: link [[platform/facts/missing]] points at a note that does not exist",
	}
	if len(rep.Problems) != len(want) {
		t.Fatalf("problems %+v, want %d", rep.Problems, len(want))
	}
	for i, w := range want {
		if got := rep.Problems[i].Path + ": " + rep.Problems[i].Message; !strings.HasPrefix(got, w) {
			t.Errorf("problem %d = %q, want prefix %q", i, got, w)
		}
	}
	clean, _ := check.Brain(context.Background(), sampleCopy(t), check.Options{})
	if rep.Notes != clean.Notes+1 || rep.PerWing["ops"] != 1 || strings.Join(rep.Wings, ",") != "ops,payments,people-ops,platform" {
		t.Errorf("counts: %d notes (clean %d), per wing %v, wings %v", rep.Notes, clean.Notes, rep.PerWing, rep.Wings)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(text.String()), "\n"); len(lines) != 5 || !strings.HasSuffix(lines[4], ": 4 problems") {
		t.Errorf("text report:\n%s", text.String())
	}
	if b, err := json.Marshal(rep); err != nil || !json.Valid(b) {
		t.Errorf("JSON report: %v", err)
	}
}

// TestBrainMatchesTheStore: the files check reports as not loadable are
// exactly those the shard's store skips, and the notes it counts are the
// ones the store loads.
func TestBrainMatchesTheStore(t *testing.T) {
	dir := sampleCopy(t)
	mv(t, dir, M, P+"/facts/trailing-.md")
	write(t, dir, P+"/facts/diagram.png", "png")
	write(t, dir, P+"/ideas/x.md", scratch)
	write(t, dir, P+"/loose.md", scratch)
	write(t, dir, P+"/facts/nested/x.md", scratch)
	write(t, dir, P+"/facts/big.md", strings.Repeat("x", 3000))
	rep, err := check.Brain(context.Background(), dir, check.Options{MaxNoteBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.Options{Root: dir, Wing: "platform", RescanInterval: -1, MaxNoteBytes: 2000, NoSnapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var skipped, reported []string
	for _, sk := range st.Skipped() {
		skipped = append(skipped, sk.Path)
	}
	for _, p := range rep.Problems {
		if strings.HasPrefix(p.Path, P+"/") && !strings.Contains(p.Message, "link") {
			reported = append(reported, p.Path)
		}
	}
	if strings.Join(skipped, "\n") != strings.Join(reported, "\n") {
		t.Errorf("the store skips\n%s\ncheck reports\n%s", strings.Join(skipped, "\n"), strings.Join(reported, "\n"))
	}
	if st.Len() != rep.PerWing["platform"] {
		t.Errorf("the store loads %d notes of platform, check counts %d", st.Len(), rep.PerWing["platform"])
	}
	if check.DefaultMaxNoteBytes != store.DefaultMaxNoteBytes {
		t.Errorf("check's default size limit %d is not the shard's %d", check.DefaultMaxNoteBytes, store.DefaultMaxNoteBytes)
	}
}

func TestBrainNotABrain(t *testing.T) {
	dir := t.TempDir()
	if _, err := check.Brain(context.Background(), dir, check.Options{}); !errors.Is(err, check.ErrNotBrain) {
		t.Errorf("a directory without wiki/: %v", err)
	}
	if _, err := check.Brain(context.Background(), filepath.Join(dir, "nope"), check.Options{}); err == nil {
		t.Error("a missing directory: no error")
	}
}

// TestTextReportCounts: the summary line says "1 problem", "1 wing", "1
// note" in the singular and every other count in the plural.
func TestTextReportCounts(t *testing.T) {
	rep := &check.Report{Root: "b", Wings: []string{"ops"}, Notes: 1, Inbox: 0, Sessions: 2,
		Problems: []check.Problem{{Path: "wiki/ops/x.md", Message: "bad"}}}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "wiki/ops/x.md: bad\nbrain b: 1 wing (ops), 1 note, 0 inbox notes, 2 session logs: 1 problem\n"; text.String() != want {
		t.Errorf("text report %q, want %q", text.String(), want)
	}
}
