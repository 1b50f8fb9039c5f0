package history

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/gitstore"
)

// repo is the git repository a brain's history lives in, and where its
// files are.
type repo struct {
	worktree string // the worktree root (absolute, symlinks resolved)
	gitDir   string // the worktree's git directory (HEAD, index)
	common   string // the common directory (objects, refs, config, info)
	// prefix is the brain directory's path inside the worktree, "" or
	// ending in "/": a brain path rel is the tree path prefix+rel.
	prefix string
	mu     sync.Mutex
	// branch is the branch HEAD names (read at Open and before each
	// commit batch).
	branch plumbing.ReferenceName
	refs   gitstore.Refs
}

// openRepo opens the git repository of root (root or a parent, as git
// finds it), or initialises one at root/.git with branch main.
func openRepo(opt Options) (*repo, error) {
	r, err := git.PlainOpenWithOptions(opt.Root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		r, err = initRepo(opt.Root)
	}
	if err != nil {
		return nil, fmt.Errorf("history: open the git repository of %s: %w", opt.Root, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("history: the brain directory %s is inside a git repository without a worktree (a bare repository); give the brain its own directory: %w", opt.Root, err)
	}
	rp := &repo{}
	if rp.worktree, err = filepath.EvalSymlinks(wt.Filesystem.Root()); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	st, ok := r.Storer.(*filesystem.Storage)
	if !ok {
		return nil, errors.New("history: the repository is not on disk")
	}
	rp.gitDir = st.Filesystem().Root()
	rp.common = rp.gitDir
	if b, err := os.ReadFile(filepath.Join(rp.gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(rp.gitDir, c)
		}
		rp.common = filepath.Clean(c)
	}
	rp.refs = gitstore.Refs{Common: rp.common, Locks: gitstore.LockTimes{Timeout: opt.LockTimeout, Stale: opt.staleLock}}
	rel, err := filepath.Rel(rp.worktree, opt.Root)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("history: the brain directory %s is not inside the worktree %s", opt.Root, rp.worktree)
	}
	if rel = filepath.ToSlash(rel); rel != "." {
		rp.prefix = rel + "/"
	}
	if err := rp.checkFormat(); err != nil {
		return nil, err
	}
	if rp.branch, err = rp.headBranch(); err != nil {
		return nil, err
	}
	return rp, nil
}

// initRepo runs `git init -b main` on root with go-git, and makes what it
// wrote durable.
func initRepo(root string) (*git.Repository, error) {
	r, err := git.PlainInitWithOptions(root, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return nil, err
	}
	dot := filepath.Join(root, git.GitDirName)
	err = filepath.WalkDir(dot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return atomicfile.SyncDir(p)
		}
		return atomicfile.Sync(p)
	})
	if err == nil {
		err = atomicfile.SyncDir(root)
	}
	if err != nil {
		return nil, fmt.Errorf("make the new repository durable: %w", err)
	}
	return r, nil
}

// checkFormat refuses a repository whose objects are not SHA-1 (git's
// extensions.objectFormat), which this engine does not write.
func (r *repo) checkFormat() error {
	b, err := os.ReadFile(filepath.Join(r.common, "config"))
	if err != nil {
		return fmt.Errorf("history: read the repository's config: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.ToLower(strings.TrimSpace(l)), "=")
		if ok && strings.TrimSpace(k) == "objectformat" && strings.TrimSpace(v) != "sha1" {
			return fmt.Errorf("history: the repository at %s uses %s object names; history needs a sha1 repository", r.common, strings.TrimSpace(v))
		}
	}
	return nil
}

// headBranch reads HEAD, which must name a branch.
func (r *repo) headBranch() (plumbing.ReferenceName, error) {
	b, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("history: read HEAD: %w", err)
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: ")
	if !ok || !strings.HasPrefix(target, "refs/heads/") {
		return "", fmt.Errorf("history: the brain's git repository (%s) has a detached HEAD; history is committed on a branch: check out one (git -C %s switch main, or another branch) and start again", r.worktree, r.worktree)
	}
	return plumbing.ReferenceName(target), nil
}

// currentBranch is the branch commits go on.
func (r *repo) currentBranch() plumbing.ReferenceName {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.branch
}

// ensureExclude appends to info/exclude the patterns it must list so that
// the brain's generated and append-only files never show in git status;
// it never removes a line.
func (r *repo) ensureExclude() error {
	path := filepath.Join(r.common, "info", "exclude")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("history: read %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	add, p := "", "/"+r.prefix
	for _, l := range []string{p + "sessions/", p + "wiki/*/_index.md", p + ".brainstem/"} {
		if !have[l] {
			add += l + "\n"
		}
	}
	if add == "" {
		return nil
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	if len(old) == 0 || !bytes.Contains(old, []byte("brainstem")) {
		add = "# brainstem: generated tables of contents, session logs and shard state are not history\n" + add
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(old, add...), 0o644); err != nil {
		return fmt.Errorf("history: write %s: %w", path, err)
	}
	return nil
}

func (r *repo) treePath(rel string) string { return r.prefix + rel }

// brainPath is the brain-relative path of a worktree path, and whether it
// lies in the brain.
func (r *repo) brainPath(p string) (string, bool) {
	if r.prefix == "" {
		return p, true
	}
	return strings.CutPrefix(p, r.prefix)
}
