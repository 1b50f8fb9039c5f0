package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"

	"github.com/brainstem/brainstem/tooling/diskgrep"
)

// secret is text a purge must remove from every byte under the brain and
// the state directory.
const secret = "the-launch-code-is-0000-1111"

func purgeBrain(t *testing.T) (*testBrain, *History, []Version) {
	t.Helper()
	b := newBrain(t)
	opt := b.options()
	opt.AllowPurge = true
	opt.packEvery = 3 // pack often, so the secret also sits in packs
	h := b.open(opt)
	p := "wiki/pay/facts/launch.md"
	b.write(h, "ann@acme.com", Op{Path: p, Content: []byte(note("Launch", "public"))})
	b.write(h, "ann@acme.com", Op{Path: p, Content: []byte(note("Launch", secret))})
	b.write(h, "bob@acme.com", Op{Path: p, Content: []byte(note("Launch", "redacted"))})
	b.write(h, "bob@acme.com", Op{Path: "wiki/pay/facts/other.md", Content: []byte(note("Other", "unrelated"))})
	flush(t, h)
	h.q.poke()
	vs, _, err := h.Versions(context.Background(), p, "", 10)
	if err != nil || len(vs) != 3 {
		t.Fatalf("%+v %v", vs, err)
	}
	return b, h, vs
}

func TestPurgeOneVersion(t *testing.T) {
	ctx := context.Background()
	b, h, vs := purgeBrain(t)
	p := "wiki/pay/facts/launch.md"
	res, err := h.Purge(ctx, PurgeRequest{Path: p, Version: vs[1].ID, Author: "cur@acme.com", Reason: "a secret was pasted", Tool: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.RemoveFile || len(res.Purged) != 1 || !res.Purged[0].Purged || res.Rewritten < 2 {
		t.Fatalf("result %+v", res)
	}
	after, _, err := h.Versions(ctx, p, "", 10)
	// The audit commit changes no file, so it is no version of the note.
	if err != nil || len(after) != 3 || !after[1].Purged || after[0].Purged || after[2].Purged {
		t.Fatalf("versions after the purge %+v %v", after, err)
	}
	if res.Audit == "" || !strings.Contains(b.git("log", "-1", "--format=%an%n%B", res.Audit), "Brainstem-Action: purge") {
		t.Errorf("audit commit %q", res.Audit)
	}
	_, body, err := h.Read(ctx, p, after[1].ID)
	if err != nil || !strings.HasPrefix(string(body), purgeNotice+"cur@acme.com at ") || !strings.Contains(string(body), "a secret was pasted") {
		t.Fatalf("purged version reads %q, %v", body, err)
	}
	if _, cur, err := h.Read(ctx, p, after[0].ID); err != nil || !strings.Contains(string(cur), "redacted") {
		t.Fatalf("current version %q %v", cur, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, b, secret)
	if st := b.git("status", "--porcelain"); st != "" {
		t.Errorf("git status after the purge:\n%s", st)
	}
	// A new History (another shard, or a restart) reads the rewritten
	// history from the snapshot; one without it rebuilds it from git.
	os.Remove(filepath.Join(b.state, snapshotName))
	h2 := b.open(b.options())
	again, _, err := h2.Versions(ctx, p, "", 10)
	if err != nil || len(again) != 3 || !again[1].Purged || again[1].ID != after[1].ID {
		t.Fatalf("rebuilt versions %+v %v", again, err)
	}
}

func TestPurgeEveryVersion(t *testing.T) {
	ctx := context.Background()
	b, h, _ := purgeBrain(t)
	p := "wiki/pay/facts/launch.md"
	b.write(h, "ann@acme.com", Op{Path: p, Content: []byte(note("Launch", "again "+secret))})
	flush(t, h)
	res, err := h.Purge(ctx, PurgeRequest{Path: p, Author: "cur@acme.com", Reason: "the whole note was a mistake"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.RemoveFile || len(res.Purged) != 4 {
		t.Fatalf("result %+v", res)
	}
	if err := os.Remove(filepath.Join(b.root, p)); err != nil { // the caller's part
		t.Fatal(err)
	}
	vs, _, err := h.Versions(ctx, p, "", 10)
	if err != nil || len(vs) != 5 || !vs[0].Removed || vs[0].Action != ActionPurge {
		t.Fatalf("versions %+v %v", vs, err)
	}
	for _, v := range vs[1:] {
		if !v.Purged {
			t.Errorf("version %s not purged", v.ID)
		}
	}
	if rm := h.Removed("wiki/pay/"); len(rm) != 1 || rm[0].Path != p {
		t.Errorf("Removed = %+v", rm)
	}
	h.Close()
	assertGone(t, b, secret)
	if st := b.git("status", "--porcelain"); st != "" {
		t.Errorf("git status after the purge:\n%s", st)
	}
}

func TestPurgeRefusals(t *testing.T) {
	ctx := context.Background()
	b, h, vs := purgeBrain(t)
	p := "wiki/pay/facts/launch.md"
	b.git("tag", "before-purge", vs[1].ID)
	for _, tc := range []struct {
		name string
		req  PurgeRequest
		code brain.Code
		says string
	}{
		{"blank reason", PurgeRequest{Path: p, Version: vs[1].ID, Author: "c@acme.com", Reason: "  "}, brain.CodeInvalidArgument, "needs a reason"},
		{"unknown version", PurgeRequest{Path: p, Version: strings.Repeat("ab", 20), Author: "c@acme.com", Reason: "r"}, brain.CodeNotFound, "no version"},
		{"not a version id", PurgeRequest{Path: p, Version: "HEAD~1", Author: "c@acme.com", Reason: "r"}, brain.CodeInvalidArgument, "40-hex"},
		{"another note's version", PurgeRequest{Path: "wiki/pay/facts/other.md", Version: vs[1].ID, Author: "c@acme.com", Reason: "r"}, brain.CodeInvalidArgument, "not a version of"},
		{"current version", PurgeRequest{Path: p, Version: vs[0].ID, Author: "c@acme.com", Reason: "r"}, brain.CodeInvalidArgument, "update or archive the note first"},
		{"unknown note", PurgeRequest{Path: "wiki/pay/facts/none.md", Author: "c@acme.com", Reason: "r"}, brain.CodeNotFound, "no history"},
		{"reached by a tag", PurgeRequest{Path: p, Version: vs[1].ID, Author: "c@acme.com", Reason: "r"}, brain.CodeInvalidArgument, "refs/tags/before-purge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headBefore := b.git("rev-parse", "HEAD")
			_, err := h.Purge(ctx, tc.req)
			e, ok := brain.As(err)
			if !ok || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("err = %v, want %s saying %q", err, tc.code, tc.says)
			}
			if strings.Contains(e.Message, b.root) {
				t.Errorf("the message names a host path: %s", e.Message)
			}
			if b.git("rev-parse", "HEAD") != headBefore {
				t.Error("a refused purge changed the history")
			}
		})
	}
	opt := b.options()
	opt.StateDir = filepath.Join(b.root, ".brainstem", "other")
	opt.Wing = "pay2"
	off := b.open(opt)
	_, err := off.Purge(ctx, PurgeRequest{Path: p, Author: "c@acme.com", Reason: "r"})
	if e, ok := brain.As(err); !ok || !strings.Contains(e.Message, "disabled") {
		t.Fatalf("purge without AllowPurge: %v", err)
	}
}

// assertGone checks that text is nowhere under the brain (and its state
// directory): in no file's raw bytes, no object git lists, nothing git
// fsck finds unreachable.
func assertGone(t *testing.T, b *testBrain, text string) {
	t.Helper()
	places, err := diskgrep.Find(b.root, text)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range places {
		t.Errorf("%s holds the purged text", p)
	}
	if un := b.git("fsck", "--unreachable", "--no-reflogs"); strings.TrimSpace(un) != "" {
		t.Errorf("unreachable objects after the purge:\n%s", un)
	}
	if out, err := b.gitErr("fsck", "--strict"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// TestPurgeDropsRefs: a ref under PurgeRequest.DropRefs (a remote's
// tracking ref) that reaches the content refuses no purge: it is deleted
// with the rewrite and its bytes leave the disk; a ref outside still
// refuses.
func TestPurgeDropsRefs(t *testing.T) {
	ctx := context.Background()
	b, h, vs := purgeBrain(t)
	p := "wiki/pay/facts/launch.md"
	b.git("update-ref", "refs/remotes/brainstem/main", "HEAD")
	req := PurgeRequest{Path: p, Version: vs[1].ID, Author: "cur@acme.com", Reason: "a secret was pasted"}
	if _, err := h.Purge(ctx, req); err == nil || !strings.Contains(err.Error(), "refs/remotes/brainstem/main") {
		t.Fatalf("purge without DropRefs: %v", err)
	}
	req.DropRefs = []string{"refs/remotes/other/"}
	if _, err := h.Purge(ctx, req); err == nil {
		t.Fatal("a prefix that does not cover the ref let the purge through")
	}
	req.DropRefs = []string{"refs/remotes/brainstem/"}
	b.git("pack-refs", "--all") // packed (and no loose file): not dropped
	if _, err := h.Purge(ctx, req); err == nil {
		t.Fatal("a packed ref under DropRefs let the purge through")
	}
	b.git("update-ref", "refs/remotes/brainstem/main", "HEAD") // packed and loose
	if _, err := h.Purge(ctx, req); err == nil {
		t.Fatal("a ref both loose and packed let the purge through")
	}
	head := strings.TrimSpace(b.git("rev-parse", "HEAD"))
	b.git("update-ref", "-d", "refs/remotes/brainstem/main")
	loose := filepath.Join(b.root, ".git", "refs", "remotes", "brainstem", "main")
	if err := os.MkdirAll(filepath.Dir(loose), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, []byte(head+"\n"), 0o644); err != nil { // loose only, as go-git writes it
		t.Fatal(err)
	}
	res, err := h.Purge(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blobs) != 1 || len(res.Blobs[0]) != 40 {
		t.Fatalf("Blobs = %v", res.Blobs)
	}
	if _, err := b.gitErr("rev-parse", "--verify", "refs/remotes/brainstem/main"); err == nil {
		t.Error("the dropped ref is still there")
	}
	h.Close()
	assertGone(t, b, secret)
}
