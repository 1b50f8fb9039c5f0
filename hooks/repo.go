package hooks

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/brainstem/brainstem/search"
)

// What the hooks read of the repository in the working directory, through
// the git command line of the person's machine (the brain's shards need
// no git binary; a developer's machine that runs Claude Code in a
// repository has one). Every git command runs with optional locks off, so
// that nothing is written to the repository, and is bounded by the hook's
// time box; without git, or outside a repository, the directory's name is
// all there is.
const (
	maxGitOutput    = 1 << 20
	recentCommits   = 5
	maxReadmeBytes  = 8 << 10
	maxContextTerms = 24
)

// repoInfo is the repository of the working directory.
type repoInfo struct {
	Name     string   // the top directory's name (the working directory's outside a repository)
	Branch   string   // "" when detached or not a repository
	Subjects []string // the most recent commit subjects
	Title    string   // the README's first heading or line
}

// git runs a git command in dir and returns its output, "" on any failure.
func git(ctx context.Context, bin, dir string, args ...string) string {
	bin = cmp.Or(bin, "git")
	cmd := exec.CommandContext(ctx, bin, append([]string{"--no-optional-locks", "-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if cmd.Run() != nil || out.over {
		return ""
	}
	return out.String()
}

// limitedBuffer keeps the first maxGitOutput bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxGitOutput {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// readRepo reads the repository around dir.
func readRepo(ctx context.Context, bin, dir string) repoInfo {
	info := repoInfo{Name: filepath.Base(dir)}
	top := strings.TrimSpace(git(ctx, bin, dir, "rev-parse", "--show-toplevel"))
	if top == "" {
		info.Title = readmeTitle(dir)
		return info
	}
	info.Name = filepath.Base(top)
	info.Branch = strings.TrimSpace(git(ctx, bin, dir, "symbolic-ref", "--quiet", "--short", "HEAD"))
	for line := range strings.Lines(git(ctx, bin, dir, "log", "-n", strconv.Itoa(recentCommits), "--format=%s")) {
		if s := strings.TrimSpace(line); s != "" && len(info.Subjects) < recentCommits {
			info.Subjects = append(info.Subjects, s)
		}
	}
	info.Title = readmeTitle(top)
	return info
}

// gitStatus is the digest of `git status --porcelain` in dir, "" when
// clean, not a repository or git fails; changed reports a non-empty status.
func gitStatus(ctx context.Context, bin, dir string) (digest string, changed bool) {
	out := git(ctx, bin, dir, "status", "--porcelain", "--untracked-files=normal")
	if strings.TrimSpace(out) == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(out))
	return hex.EncodeToString(sum[:]), true
}

// readmeTitle is the first Markdown heading of dir's README (or its first
// non-empty line), "" without one.
func readmeTitle(dir string) string {
	for _, name := range []string{"README.md", "README", "README.markdown", "README.rst", "README.txt", "readme.md"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		defer f.Close()
		first := ""
		sc := bufio.NewScanner(io.LimitReader(f, maxReadmeBytes))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if h, ok := strings.CutPrefix(line, "#"); ok {
				return strings.TrimSpace(strings.TrimLeft(h, "#"))
			}
			if first == "" && line != "" && !strings.HasPrefix(line, "<") && !strings.HasPrefix(line, "[!") {
				first = line
			}
		}
		return first
	}
	return ""
}

// repoNoise are words of branch names and commit subjects that say nothing
// about what a repository is about.
func repoNoise(term string) bool {
	switch term {
	case "main", "master", "develop", "dev", "head", "feature", "feat", "fix", "fixes", "chore", "wip", "merge", "merged", "branch",
		"pull", "request", "add", "adds", "added", "update", "updates", "updated", "remove", "removed", "bump", "readme", "md", "refactor",
		"test", "tests", "docs", "ci", "release", "version", "initial", "commit", "use", "make", "new", "change", "changes":
		return true
	}
	return false
}

// query is the brain_query text of the repository: its distinct searchable
// words (as the gateway tokenizes them), name and README title first, at
// most maxContextTerms.
func (r repoInfo) query() string {
	var terms []string
	for _, part := range append([]string{r.Name, r.Title, r.Branch}, r.Subjects...) {
		for _, t := range search.Terms(part) {
			if len(terms) < maxContextTerms && len(t) > 1 && !repoNoise(t) && !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
	}
	return strings.Join(terms, " ")
}
