package docstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config says how to run the docs' commands.
type Config struct {
	Root string // the repository: commands and the stack run here
	Bin  string // a built brainstem: `brainstem` and `go run ./cmd/brainstem` run it
	// Npx maps "package@version" to the installed program that
	// `npx package@version` runs (CI's pinned install). A command naming
	// a package not in it, or naming none, fails: the docs pin what CI runs.
	Npx     map[string]string
	Timeout time.Duration                    // for one command; 2 minutes when zero
	Logf    func(format string, args ...any) // progress, or nil
}

// Summary counts a file's code blocks and the commands run.
type Summary struct {
	Run, Output, Stack, Skip int // the shell blocks, by marker
	Other                    int // code blocks that are not shell: diagrams, configuration, JSON
	Commands                 int // commands run
}

// Add adds o's counts to s.
func (s *Summary) Add(o Summary) {
	s.Run += o.Run
	s.Output += o.Output
	s.Stack += o.Stack
	s.Skip += o.Skip
	s.Other += o.Other
	s.Commands += o.Commands
}

// Failure is a block that no longer does what its docs say, at a line.
type Failure struct {
	File string
	Line int
	Msg  string
}

func (f *Failure) Error() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Msg) }

// lineErr is an error of Parse or Steps that starts with a line number.
var lineErr = regexp.MustCompile(`^(?:docstest: )?(\d+): (.*)$`)

// asFailure turns an error naming a line into a Failure of file name.
func asFailure(name string, err error) error {
	if m := lineErr.FindStringSubmatch(err.Error()); m != nil {
		var n int
		fmt.Sscan(m[1], &n)
		return &Failure{File: name, Line: n, Msg: m[2]}
	}
	return &Failure{File: name, Msg: err.Error()}
}

// Check parses a markdown file, counts its blocks, and fails on a
// malformed marker and on every shell block without one (a *Failure each,
// joined).
func Check(name string, src []byte) ([]Block, Summary, error) {
	var sum Summary
	blocks, err := Parse(src)
	if err != nil {
		return nil, sum, asFailure(name, err)
	}
	var unmarked []error
	for _, b := range blocks {
		switch {
		case b.Kind == Run:
			sum.Run++
		case b.Kind == Output:
			sum.Output++
		case b.Kind == Stack:
			sum.Stack++
		case b.Kind == Skip:
			sum.Skip++
		case IsShell(b):
			unmarked = append(unmarked, &Failure{File: name, Line: b.Line, Msg: "a shell block without a docs-test marker: " +
				"put <!-- docs-test: run -->, output, stack or skip (the reason) on the line before it"})
		default:
			sum.Other++
		}
	}
	if len(unmarked) > 0 {
		return nil, sum, errors.Join(unmarked...)
	}
	return blocks, sum, nil
}

// RunFile checks a markdown file and runs its blocks in order in one shell,
// against a `brainstem dev` of its own (started by its first stack block,
// else before its first block that runs). It returns the first failure as
// a *Failure naming the file and line.
func RunFile(ctx context.Context, cfg Config, path string) (Summary, error) {
	name := path
	if rel, err := filepath.Rel(cfg.Root, path); err == nil && !strings.HasPrefix(rel, "..") {
		name = rel
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return Summary{}, fmt.Errorf("docstest: %w", err)
	}
	blocks, sum, err := Check(name, src)
	if err != nil || sum.Run+sum.Output+sum.Stack == 0 {
		return sum, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	tmp, err := os.MkdirTemp("", "brainstem-docstest-")
	if err != nil {
		return sum, fmt.Errorf("docstest: %w", err)
	}
	f := &fileRun{cfg: cfg, name: name, tmp: tmp}
	defer f.close()
	for _, b := range blocks {
		n, err := f.block(ctx, b)
		sum.Commands += n
		if err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// fileRun is the run of one file: its stack and its shell.
type fileRun struct {
	cfg   Config
	name  string
	tmp   string
	stack *DevStack
	sh    *shell
}

func (f *fileRun) close() {
	if f.sh != nil {
		f.sh.close()
	}
	if f.stack != nil {
		f.stack.Stop()
	}
	_ = os.RemoveAll(f.tmp)
}

func (f *fileRun) logf(format string, args ...any) {
	if f.cfg.Logf != nil {
		f.cfg.Logf(format, args...)
	}
}

// block runs one block and returns how many commands it ran.
func (f *fileRun) block(ctx context.Context, b Block) (int, error) {
	switch b.Kind {
	case Stack:
		args, err := stackArgs(b)
		if err != nil {
			return 0, &Failure{File: f.name, Line: b.Line, Msg: err.Error()}
		}
		return 0, f.start(ctx, args, b.Line)
	case Run, Output:
	default:
		return 0, nil
	}
	steps, err := Steps(b)
	if err != nil {
		return 0, asFailure(f.name, err)
	}
	if f.stack == nil {
		if err := f.start(ctx, nil, b.Line); err != nil {
			return 0, err
		}
	}
	for i, st := range steps {
		if err := f.step(ctx, st); err != nil {
			return i, err
		}
	}
	return len(steps), nil
}

// start (re)starts the file's stack with args and tells the shell its URL
// and token ($URL, $TOKEN).
func (f *fileRun) start(ctx context.Context, args []string, line int) error {
	if f.stack != nil {
		f.stack.Stop()
		f.stack = nil
	}
	begin := time.Now()
	s, err := StartStack(ctx, f.cfg.Bin, f.cfg.Root, args)
	if err != nil {
		return &Failure{File: f.name, Line: line, Msg: err.Error()}
	}
	f.stack = s
	f.logf("%s:%d: brainstem dev %s: %s (%s)", f.name, line, strings.Join(args, " "), s.URL, time.Since(begin).Round(time.Millisecond))
	if f.sh == nil {
		if f.sh, err = f.newShell(); err != nil {
			return err
		}
	}
	res, err := f.sh.run(ctx, fmt.Sprintf("export URL=%s TOKEN=%s", quote(s.URL), quote(s.Token)), f.cfg.Timeout)
	if err == nil && res.status != 0 {
		err = fmt.Errorf("export: %s", res.stderr)
	}
	if err != nil {
		return &Failure{File: f.name, Line: line, Msg: err.Error()}
	}
	return nil
}

// newShell starts the file's shell: in the repository, with brainstem
// first on its PATH and a HOME of its own (no sign-in of the person
// running the tests is seen or changed).
func (f *fileRun) newShell() (*shell, error) {
	dirs := map[string]string{}
	for _, d := range []string{"bin", "home", "out"} {
		dirs[d] = filepath.Join(f.tmp, d)
		if err := os.MkdirAll(dirs[d], 0o700); err != nil {
			return nil, fmt.Errorf("docstest: %w", err)
		}
	}
	if err := os.Symlink(f.cfg.Bin, filepath.Join(dirs["bin"], "brainstem")); err != nil {
		return nil, fmt.Errorf("docstest: %w", err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"HOME", "PATH", "URL", "TOKEN", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"}, k)
	})
	env = append(env, "HOME="+dirs["home"], "PATH="+dirs["bin"]+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	return startShell(f.cfg.Root, dirs["out"], env)
}

// step runs one command and compares what it prints with what the docs
// show. A command whose output the docs show may exit non-zero (the docs
// show refusals); one whose output they do not show must succeed.
func (f *fileRun) step(ctx context.Context, st Step) error {
	cmd, err := f.rewrite(st.Cmd)
	if err != nil {
		return &Failure{File: f.name, Line: st.Line, Msg: err.Error()}
	}
	begin := time.Now()
	res, err := f.sh.run(ctx, cmd, f.cfg.Timeout)
	f.logf("%s:%d: %s (%s)", f.name, st.Line, firstLine(st.Cmd), time.Since(begin).Round(time.Millisecond))
	if err != nil {
		return &Failure{File: f.name, Line: st.Line, Msg: fmt.Sprintf("%s: %v", firstLine(st.Cmd), err)}
	}
	if st.Want == nil {
		if res.status != 0 {
			return &Failure{File: f.name, Line: st.Line, Msg: fmt.Sprintf("the command failed (exit status %d): %s\n%s",
				res.status, firstLine(st.Cmd), printed(res))}
		}
		return nil
	}
	n := normalizer{ports: f.stack.Ports}
	if why := match(st.Want, res.stdout, res.stderr, n); why != "" {
		return &Failure{File: f.name, Line: st.Line, Msg: fmt.Sprintf("the output differs: %s\n--- the docs show:\n%s\n--- %s printed (exit status %d):\n%s",
			why, indent(strings.Join(st.Want, "\n")), firstLine(st.Cmd), res.status, printed(res))}
	}
	return nil
}

var (
	goRunRE    = regexp.MustCompile(`\bgo run \./cmd/brainstem\b`)
	devTokenRE = regexp.MustCompile(`\bbrainstem dev token\b`)
	npxRE      = regexp.MustCompile(`\bnpx\s+(?:(?:-y|--yes)\s+)?([^\s'"]+)`)
)

// rewrite makes a documented command run against this stack: the built
// binary for `go run ./cmd/brainstem`, the stack's IdP for `brainstem dev
// token`, CI's pinned install for npx, the stack's ports for the documented
// ones, and its token for <token>.
func (f *fileRun) rewrite(cmd string) (string, error) {
	cmd = goRunRE.ReplaceAllString(cmd, "brainstem")
	if !strings.Contains(cmd, "--idp") {
		cmd = devTokenRE.ReplaceAllString(cmd, "brainstem dev token --idp "+f.stack.IdP)
	}
	var missing error
	cmd = npxRE.ReplaceAllStringFunc(cmd, func(m string) string {
		pkg := npxRE.FindStringSubmatch(m)[1]
		if prog, ok := f.cfg.Npx[pkg]; ok {
			return quote(prog)
		}
		var pinned []string
		for k := range f.cfg.Npx {
			pinned = append(pinned, k)
		}
		slices.Sort(pinned)
		missing = fmt.Errorf("npx %s: pin the version CI runs (CI installs %s)", pkg, strings.Join(pinned, ", "))
		return m
	})
	if missing != nil {
		return "", missing
	}
	for _, p := range f.stack.Ports {
		for _, host := range []string{"127.0.0.1:", "localhost:"} {
			cmd = replacePort(cmd, host, p.doc, p.actual)
		}
	}
	return strings.ReplaceAll(cmd, "<token>", f.stack.Token), nil
}

// stackArgs reads a stack block: one `brainstem dev [flags]` command
// (`go run ./cmd/brainstem dev` too), whose port flags the harness replaces.
func stackArgs(b Block) ([]string, error) {
	steps, err := Steps(b)
	if err != nil {
		return nil, err
	}
	if len(steps) != 1 {
		return nil, fmt.Errorf("a stack block is one command, `brainstem dev [flags]`; this one has %d", len(steps))
	}
	cmd := goRunRE.ReplaceAllString(steps[0].Cmd, "brainstem")
	if i := strings.Index(cmd, " #"); i >= 0 {
		cmd = cmd[:i]
	}
	words := strings.Fields(cmd)
	if len(words) < 2 || words[0] != "brainstem" || words[1] != "dev" {
		return nil, fmt.Errorf("a stack block runs `brainstem dev [flags]`, not %q", cmd)
	}
	var args []string
	ports := []string{"--port", "--admin-port", "--idp-port", "--shard-port"}
	for i := 2; i < len(words); i++ {
		w := words[i]
		flag, _, hasValue := strings.Cut(w, "=")
		switch {
		case slices.Contains(ports, flag):
			if !hasValue {
				i++
			}
		case strings.ContainsAny(w, "'\"$`&|;<>()\\"):
			return nil, fmt.Errorf("a stack block's flags are plain words, not %q", w)
		default:
			args = append(args, w)
		}
	}
	return args, nil
}

func firstLine(s string) string {
	l, _, more := strings.Cut(s, "\n")
	if more || len(l) > 100 {
		return strings.TrimSpace(truncate(l, 100)) + " …"
	}
	return l
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

// printed is a command's output for a failure message: stdout, then
// stderr, each cut at 4,000 bytes.
func printed(r result) string {
	var parts []string
	if s := strings.TrimRight(r.stdout, "\n"); s != "" {
		parts = append(parts, indent(truncate(s, 4000)))
	}
	if s := strings.TrimRight(r.stderr, "\n"); s != "" {
		parts = append(parts, "  (stderr)\n"+indent(truncate(s, 4000)))
	}
	if len(parts) == 0 {
		return "  (nothing)"
	}
	return strings.Join(parts, "\n")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
