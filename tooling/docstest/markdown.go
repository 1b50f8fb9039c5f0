package docstest

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Kind is what a marker asks of the code block after it.
type Kind string

// The markers' kinds.
const (
	// None: no marker. A shell block without one fails the check.
	None Kind = ""
	// Run: every command of the block runs and must exit 0; lines after a
	// "$ " command are what it prints.
	Run Kind = "run"
	// Output: each paragraph of the block is comment lines, one command and
	// the output it prints (the README's style, without prompts).
	Output Kind = "output"
	// Stack: the block is `brainstem dev [flags]`; the harness starts it
	// (on free ports) instead of running it, and later blocks run against it.
	Stack Kind = "stack"
	// Skip: not run, for the reason the marker gives.
	Skip Kind = "skip"
)

// Block is one code block of a markdown file.
type Block struct {
	Line   int      // the line of the block's first line of code, from 1
	Lang   string   // the first word of a fenced block's info string; "" when indented
	Fenced bool     // fenced (```) rather than indented by four spaces
	Lines  []string // the code, without the indentation of its container
	Kind   Kind     // the marker's kind; None without a marker
	Reason string   // why a skipped block is not run
}

// markerText is a marker: <!-- docs-test: KIND --> or <!-- docs-test: skip (REASON) -->.
var markerText = regexp.MustCompile(`^<!--\s*docs-test:\s*([a-z]+)\s*(?:\((.*)\))?\s*-->$`)

// Parse returns the code blocks of a markdown document, in order, each with
// the marker on the line before it (blank lines between are allowed). A
// malformed marker is an error naming its line: an unknown kind, a skip
// without a reason, a reason on another kind, a marker that no code block
// follows, or one inside a paragraph.
func Parse(src []byte) ([]Block, error) {
	lines := lineStarts(src)
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var blocks []Block
	var errs []string
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			blocks = append(blocks, codeBlock(n, src, lines))
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			if isMarker(string(n.Segments.Value(src))) {
				seg := n.Segments.At(0)
				errs = append(errs, fmt.Sprintf("%d: a docs-test marker must be a line of its own before a code block", lineOf(lines, seg.Start)))
			}
		case *ast.HTMLBlock:
			if msg := checkMarkerBlock(n, src, lines); msg != "" {
				errs = append(errs, msg)
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return nil, fmt.Errorf("docstest: %w", err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("docstest: %s", strings.Join(errs, "; "))
	}
	return blocks, nil
}

// codeBlock reads a code block and the marker before it.
func codeBlock(n ast.Node, src []byte, lines []int) Block {
	b := Block{}
	if f, ok := n.(*ast.FencedCodeBlock); ok {
		b.Fenced = true
		if f.Info != nil {
			b.Lang, _, _ = strings.Cut(strings.TrimSpace(string(f.Info.Segment.Value(src))), " ")
		}
	}
	segs := n.Lines()
	for i := range segs.Len() {
		s := segs.At(i)
		if i == 0 {
			b.Line = lineOf(lines, s.Start)
		}
		line := strings.Repeat(" ", s.Padding) + string(s.Value(src))
		b.Lines = append(b.Lines, strings.TrimRight(line, "\r\n"))
	}
	if b.Line == 0 { // an empty block: the line after the fence
		b.Line = lineOf(lines, blockStart(n)) + 1
	}
	if prev, ok := n.PreviousSibling().(*ast.HTMLBlock); ok {
		if m, ok := parseMarker(htmlText(prev, src)); ok && m.err == "" {
			b.Kind, b.Reason = m.kind, m.reason
		}
	}
	return b
}

// checkMarkerBlock returns what is wrong with an HTML block that is a
// marker ("" when it is right, or not a marker).
func checkMarkerBlock(n *ast.HTMLBlock, src []byte, lines []int) string {
	s := htmlText(n, src)
	if !isMarker(s) {
		return ""
	}
	line := lineOf(lines, blockStart(n))
	m, ok := parseMarker(s)
	switch {
	case !ok:
		return fmt.Sprintf("%d: a docs-test marker is one line: <!-- docs-test: run|output|stack|skip (reason) -->", line)
	case m.err != "":
		return fmt.Sprintf("%d: %s", line, m.err)
	}
	switch n.NextSibling().(type) {
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return ""
	}
	return fmt.Sprintf("%d: the docs-test marker is not followed by a code block", line)
}

type marker struct {
	kind   Kind
	reason string
	err    string // what is wrong with it
}

func isMarker(s string) bool {
	return strings.HasPrefix(s, "<!--") && strings.Contains(strings.SplitN(s, "\n", 2)[0], "docs-test:")
}

// parseMarker reads a marker's text; ok is false for one that is not a
// single well-formed comment.
func parseMarker(s string) (marker, bool) {
	m := markerText.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || strings.Contains(strings.TrimSpace(s), "\n") {
		return marker{}, false
	}
	k, reason := Kind(m[1]), strings.TrimSpace(m[2])
	switch {
	case !slices.Contains([]Kind{Run, Output, Stack, Skip}, k):
		return marker{err: fmt.Sprintf("unknown docs-test marker %q (run, output, stack or skip (reason))", k)}, true
	case k == Skip && reason == "":
		return marker{err: "a docs-test skip needs its reason: <!-- docs-test: skip (needs a Kubernetes cluster) -->"}, true
	case k != Skip && m[2] != "":
		return marker{err: fmt.Sprintf("a docs-test %s marker takes no reason", k)}, true
	}
	return marker{kind: k, reason: reason}, true
}

func htmlText(n *ast.HTMLBlock, src []byte) string {
	var b bytes.Buffer
	segs := n.Lines()
	for i := range segs.Len() {
		seg := segs.At(i)
		b.Write(seg.Value(src))
	}
	if n.HasClosure() {
		closure := n.ClosureLine
		b.Write(closure.Value(src))
	}
	return strings.TrimSpace(b.String())
}

// blockStart is the offset of a block's first line, or 0.
func blockStart(n ast.Node) int {
	if segs := n.Lines(); segs.Len() > 0 {
		return segs.At(0).Start
	}
	return 0
}

// lineStarts returns the offset at which each line of src starts.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineOf returns the line (from 1) holding offset off.
func lineOf(starts []int, off int) int {
	i, found := slices.BinarySearch(starts, off)
	if found {
		return i + 1
	}
	return i
}

// envAssign is a leading VAR=value of a command line.
var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*\s+`)

// IsShell reports whether a block holds shell commands: a fenced block
// labelled sh, bash, shell or console, or an unlabelled or indented block
// whose first line of code is a command ("$ …", a known program, a path
// to one, or VAR=value before either). A slash command of Claude Code
// ("/plugin install …") is not one.
func IsShell(b Block) bool {
	if b.Lang != "" {
		return slices.Contains([]string{"sh", "bash", "shell", "console", "zsh", "shell-session"}, b.Lang)
	}
	// The programs whose name at the start of an unlabelled block makes it a shell block.
	commandWords := []string{"brainstem", "go", "npx", "npm", "node", "claude", "curl", "sudo", "kubectl", "helm",
		"docker", "podman", "skopeo", "crane", "openssl", "ssh-keygen", "ssh-keyscan", "git", "cd", "bash", "sh", "jq",
		"yq", "make", "export", "printf", "echo", "cat", "i", "python3", "systemctl"}
	for _, l := range b.Lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "$ ") {
			return true
		}
		for envAssign.MatchString(l) {
			l = envAssign.ReplaceAllString(l, "")
		}
		l = strings.TrimLeft(l, "(")
		word, _, _ := strings.Cut(l, " ")
		word = strings.TrimSuffix(word, "()")
		path := strings.HasPrefix(word, "/") && strings.Count(word, "/") > 1 // /tmp/gw.test, not Claude Code's /plugin
		return slices.Contains(commandWords, word) || path || strings.HasPrefix(word, "./") || strings.HasPrefix(word, ".ci/")
	}
	return false
}
