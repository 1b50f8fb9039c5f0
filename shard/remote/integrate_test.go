package remote

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/shard/gitstore"
)

var service = Identity{Name: "Brainstem", Email: "history@brainstem.invalid"}

func blob(t *testing.T, r *Remote, content string) plumbing.Hash {
	t.Helper()
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, _ := obj.Writer()
	w.Write([]byte(content))
	w.Close()
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// storeTree is anyTree into a loose batch of r's repository, made
// durable.
func storeTree(r *Remote, files map[string]entry) (plumbing.Hash, error) {
	b := r.objs.Batch()
	h, err := anyTree(b, files)
	if err == nil {
		err = b.Commit()
	}
	return h, err
}

// anyTree puts the nested trees of the flat files into b and returns the
// root's hash. Unlike writeTree (whose merges settleShape made one git
// can hold) it writes a file and a directory of one name side by side: a
// remote's attack (wedge_test.go).
func anyTree(b gitstore.Sink, files map[string]entry) (plumbing.Hash, error) {
	type dir struct {
		files map[string]entry
		dirs  map[string]bool
	}
	dirs := map[string]*dir{"": {files: map[string]entry{}, dirs: map[string]bool{}}}
	var ensure func(p string) *dir
	ensure = func(p string) *dir {
		if d, ok := dirs[p]; ok {
			return d
		}
		d := &dir{files: map[string]entry{}, dirs: map[string]bool{}}
		dirs[p] = d
		parent, name := splitDir(p)
		ensure(parent).dirs[name] = true
		return d
	}
	for p, e := range files {
		parent, name := splitDir(p)
		ensure(parent).files[name] = e
	}
	var build func(p string) (plumbing.Hash, error)
	build = func(p string) (plumbing.Hash, error) {
		d := dirs[p]
		var es []object.TreeEntry
		for name, e := range d.files {
			es = append(es, object.TreeEntry{Name: name, Mode: e.Mode, Hash: e.Hash})
		}
		for name := range d.dirs {
			h, err := build(strings.TrimPrefix(p+"/"+name, "/"))
			if err != nil {
				return plumbing.ZeroHash, err
			}
			es = append(es, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		sort.Slice(es, func(i, j int) bool {
			return gitstore.EntryLess(es[i].Name, es[i].Mode == filemode.Dir, es[j].Name, es[j].Mode == filemode.Dir)
		})
		var raw []byte
		for _, e := range es {
			raw = gitstore.AppendTreeEntry(raw, e.Mode, e.Name, e.Hash)
		}
		return b.PutTree(raw, plumbing.ZeroHash)
	}
	return build("")
}

func splitDir(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// commitTree stores a commit of files on parent by author.
func commitTree(t *testing.T, r *Remote, files map[string]entry, parent plumbing.Hash, author string) plumbing.Hash {
	t.Helper()
	tree, err := storeTree(r, files)
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: author, Email: author + "@example.com", When: time.Unix(1700000000, 0)}
	c := &object.Commit{Author: sig, Committer: sig, Message: "by " + author + "\n", TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := r.repo.Storer.NewEncodedObject()
	c.Encode(obj)
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func headOf(t *testing.T, r *Remote) plumbing.Hash {
	t.Helper()
	ref, err := r.repo.Storer.Reference(r.local)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash()
}

func treeOf(t *testing.T, r *Remote, commit plumbing.Hash) map[string]entry {
	t.Helper()
	c, err := r.repo.CommitObject(commit)
	if err != nil {
		t.Fatal(err)
	}
	files, err := flatten(r.repo.Storer, c.TreeHash)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestIntegrateConflictRemoteWins: a person and the agent change one note
// and each adds one; after the merge the remote's version is current, the
// agent's stays in history, both additions are there, the conflict is
// reported, and the merge pushes; the person's next pull has it all.
func TestIntegrateConflictRemoteWins(t *testing.T) {
	ctx := context.Background()
	url, tokenFile := httpRemote(t)
	dir := brainRepo(t)
	r, err := Open(dir, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "c")
	runGit(t, ada, t.TempDir(), "clone", "--quiet", strings.Replace(url, "http://", "http://git:"+token+"@", 1), clone)
	commitFile(t, ada, clone, "wiki/eng/facts/a.md", "---\ntitle: A\n---\nAda's\n", "Ada edits a")
	commitFile(t, ada, clone, "wiki/eng/facts/b.md", "---\ntitle: B\n---\nb\n", "Ada adds b")
	commitFile(t, ada, clone, "wiki/ops/facts/o.md", "---\ntitle: O\n---\nother wing\n", "Ada adds to ops")
	runGit(t, ada, clone, "push", "--quiet", "origin", "main")
	commitFile(t, agent, dir, "wiki/eng/facts/a.md", "---\ntitle: A\n---\nagent's\n", "agent edits a")
	commitFile(t, agent, dir, "wiki/eng/facts/c.md", "---\ntitle: C\n---\nc\n", "agent adds c")
	local := headOf(t, r)

	remote, err := r.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in, err := r.Integrate(local, remote, service, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Conflicts) != 1 || in.Conflicts[0].Path != "wiki/eng/facts/a.md" || len(in.Rejected) != 0 {
		t.Fatalf("conflicts %+v rejected %+v", in.Conflicts, in.Rejected)
	}
	if got := strings.Join(in.Changed, " "); got != "wiki/eng/facts/a.md wiki/eng/facts/b.md" {
		t.Fatalf("changed %s", got)
	}
	merged := treeOf(t, r, in.Commit)
	for _, p := range []string{"wiki/eng/facts/a.md", "wiki/eng/facts/b.md", "wiki/eng/facts/c.md", "wiki/ops/facts/o.md"} {
		if _, ok := merged[p]; !ok {
			t.Errorf("the merge lacks %s", p)
		}
	}
	if merged["wiki/eng/facts/a.md"].Hash != in.Conflicts[0].Remote {
		t.Error("the remote's version is not current")
	}
	runGit(t, agent, dir, "update-ref", "refs/heads/main", in.Commit.String(), local.String())
	if _, err := r.Push(ctx); err != nil {
		t.Fatalf("push of the merge: %v", err)
	}
	runGit(t, ada, clone, "pull", "--quiet", "--ff-only")
	if b, _ := os.ReadFile(filepath.Join(clone, "wiki/eng/facts/c.md")); !strings.Contains(string(b), "c") {
		t.Fatalf("the person's pull lacks the agent's note: %q", b)
	}
	old := runGit(t, ada, clone, "show", "HEAD^1:wiki/eng/facts/a.md")
	if !strings.Contains(old, "agent's") {
		t.Fatalf("the agent's version is not in history: %q", old)
	}
}

// TestIntegrateSidesAlone: a change on one side only is taken as is, with
// no conflict; unrelated histories merge from the empty tree.
func TestIntegrateSidesAlone(t *testing.T) {
	r, err := Open(brainRepo(t), Config{URL: "/srv/brain.git", Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	local := headOf(t, r)
	files := treeOf(t, r, local)
	files["wiki/eng/facts/r.md"] = entry{Mode: filemode.Regular, Hash: blob(t, r, "---\ntitle: R\n---\nr\n")}
	remote := commitTree(t, r, files, local, "bob")
	in, err := r.Integrate(local, remote, service, 0)
	if err != nil || len(in.Conflicts) != 0 || strings.Join(in.Changed, ",") != "wiki/eng/facts/r.md" {
		t.Fatalf("%+v %v", in, err)
	}
	other := commitTree(t, r, map[string]entry{"wiki/ops/facts/o.md": {Mode: filemode.Regular, Hash: blob(t, r, "o\n")}}, plumbing.ZeroHash, "ops")
	in, err = r.Integrate(local, other, service, 0)
	if err != nil || len(in.Conflicts) != 0 || len(in.Changed) != 0 {
		t.Fatalf("unrelated: %+v %v", in, err)
	}
	merged := treeOf(t, r, in.Commit)
	if _, ok := merged["wiki/eng/facts/a.md"]; !ok {
		t.Fatal("the wing's note left the merge of an unrelated remote")
	}
	if _, ok := merged["wiki/ops/facts/o.md"]; !ok {
		t.Fatal("the other wing's note left the merge")
	}
}

type badFile struct {
	kind, path, content string
	mode                filemode.FileMode
}

func readBadFiles(t *testing.T) []badFile {
	t.Helper()
	f, err := os.Open("testdata/bad-files.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []badFile
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "|", 4)
		if len(parts) != 4 {
			t.Fatalf("bad-files.txt: %q", line)
		}
		mode, err := strconv.ParseUint(parts[2], 8, 32)
		if err != nil {
			t.Fatal(err)
		}
		content := strings.ReplaceAll(parts[3], `\n`, "\n")
		if n, ok := strings.CutPrefix(content, "@"); ok {
			size, _ := strconv.Atoi(n)
			content = strings.Repeat("x", size)
		}
		out = append(out, badFile{kind: parts[0], path: parts[1], content: content, mode: filemode.FileMode(mode)})
	}
	if len(out) < 10 {
		t.Fatalf("bad-files.txt has %d entries", len(out))
	}
	return out
}

// TestIntegrateBadFiles: each bad file of the list is reported with its
// kind, never among the changes to load, and kept in the merge exactly as
// the remote has it (so a push never changes it).
func TestIntegrateBadFiles(t *testing.T) {
	r, err := Open(brainRepo(t), Config{URL: "/srv/brain.git", Wing: "eng"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	local := headOf(t, r)
	for _, bf := range readBadFiles(t) {
		t.Run(bf.path, func(t *testing.T) {
			files := treeOf(t, r, local)
			bad := entry{Mode: bf.mode, Hash: blob(t, r, bf.content)}
			files[bf.path] = bad
			files["wiki/eng/facts/good.md"] = entry{Mode: filemode.Regular, Hash: blob(t, r, "---\ntitle: G\n---\ng\n")}
			in, err := r.Integrate(local, commitTree(t, r, files, local, "mallory"), service, 1024)
			if bf.kind == "tree" {
				if !errors.Is(err, ErrBadTree) {
					t.Fatalf("Integrate = %v, want ErrBadTree", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Rejected) != 1 || in.Rejected[0].Path != bf.path || in.Rejected[0].Kind != bf.kind {
				t.Fatalf("rejected %+v, want %s for %s", in.Rejected, bf.kind, bf.path)
			}
			if strings.Join(in.Changed, ",") != "wiki/eng/facts/good.md" {
				t.Fatalf("changed %v: only the good note loads", in.Changed)
			}
			if got := treeOf(t, r, in.Commit)[bf.path]; got != bad {
				t.Fatalf("the merge changed the bad file: %+v", got)
			}
		})
	}
}
