package docstest

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Block
		err  string
	}{
		{"indented after a marker", "Text:\n\n<!-- docs-test: run -->\n    echo hi\n    echo there\n",
			[]Block{{Line: 4, Lines: []string{"echo hi", "echo there"}, Kind: Run}}, ""},
		{"fenced with a language", "<!-- docs-test: skip (needs a Kubernetes cluster) -->\n```sh walkthrough\nkubectl get pods\n```\n",
			[]Block{{Line: 3, Lang: "sh", Fenced: true, Lines: []string{"kubectl get pods"}, Kind: Skip, Reason: "needs a Kubernetes cluster"}}, ""},
		{"a blank line between marker and block", "<!-- docs-test: output -->\n\n    i --method x\n    {}\n",
			[]Block{{Line: 3, Lines: []string{"i --method x", "{}"}, Kind: Output}}, ""},
		{"in a list item", "1. Install:\n\n   <!-- docs-test: stack -->\n   ```sh\n   brainstem dev \\\n     --email a@b.c\n   ```\n",
			[]Block{{Line: 5, Lang: "sh", Fenced: true, Lines: []string{"brainstem dev \\", "  --email a@b.c"}, Kind: Stack}}, ""},
		{"no marker", "```\n a diagram ──▶\n```\n", []Block{{Line: 2, Fenced: true, Lines: []string{" a diagram ──▶"}}}, ""},
		{"a list's continuation is no code", "- item\n\n    more of the item\n", nil, ""},
		{"the marker of another block does not carry", "<!-- docs-test: run -->\n    a\n\ntext\n\n    b\n",
			[]Block{{Line: 2, Lines: []string{"a"}, Kind: Run}, {Line: 6, Lines: []string{"b"}}}, ""},
		{"a marker in a code span is text", "Write `<!-- docs-test: run -->` before it.\n", nil, ""},
		{"a marker shown in a code block is code", "```markdown\n<!-- docs-test: bogus -->\n```\n",
			[]Block{{Line: 2, Lang: "markdown", Fenced: true, Lines: []string{"<!-- docs-test: bogus -->"}}}, ""},
		{"unknown kind", "<!-- docs-test: maybe -->\n    a\n", nil, `1: unknown docs-test marker "maybe"`},
		{"skip without a reason", "x\n\n<!-- docs-test: skip -->\n    a\n", nil, "3: a docs-test skip needs its reason"},
		{"a reason on run", "<!-- docs-test: run (why) -->\n    a\n", nil, "1: a docs-test run marker takes no reason"},
		{"no block after it", "<!-- docs-test: run -->\n\nA paragraph.\n", nil, "1: the docs-test marker is not followed by a code block"},
		{"a marker in a paragraph", "Some text <!-- docs-test: run --> here.\n", nil, "1: a docs-test marker must be a line of its own"},
		{"a marker on two lines", "<!-- docs-test:\nrun -->\n    a\n", nil, "1: a docs-test marker is one line"},
		{"an empty fenced block", "<!-- docs-test: run -->\n```sh\n```\n", []Block{{Line: 2, Lang: "sh", Fenced: true, Kind: Run}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse = %v, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.want, blockEqual) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func blockEqual(a, b Block) bool {
	return a.Line == b.Line && a.Lang == b.Lang && a.Fenced == b.Fenced && slices.Equal(a.Lines, b.Lines) &&
		a.Kind == b.Kind && a.Reason == b.Reason
}

func TestIsShell(t *testing.T) {
	tests := []struct {
		lang  string
		lines []string
		want  bool
	}{
		{"sh", []string{"anything"}, true},
		{"console", []string{"Signed in."}, true},
		{"yaml", []string{"- run: go test"}, false},
		{"json", []string{`{"a":1}`}, false},
		{"", []string{"go run ./cmd/brainstem dev"}, true},
		{"", []string{"# a comment first", "", "npx @modelcontextprotocol/inspector@2.12.0 --cli"}, true},
		{"", []string{"$ brainstem check ./brain", "ok"}, true},
		{"", []string{"BRAINSTEM_BENCH_BRAIN=/tmp/b go test ./shard/store"}, true},
		{"", []string{"(cd bench && go test)"}, true},
		{"", []string{"/tmp/gw.test -test.run '^$'"}, true},
		{"", []string{"i() { npx x; }"}, true},
		{"", []string{"/plugin marketplace add git@git.acme.com:platform/claude-plugins.git"}, false},
		{"", []string{" MCP client ──HTTPS──▶ gateway"}, false},
		{"", []string{"wiki/<wing>/<hall>/<slug>.md     curated notes"}, false},
		{"", []string{"b5 01 02 00 00 00 00 22    magic"}, false},
		{"", []string{"image:          ghcr.io/brainstem/brainstem:v0.1.0"}, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		if got := IsShell(Block{Lang: tt.lang, Lines: tt.lines}); got != tt.want {
			t.Errorf("IsShell(%q, %q) = %v, want %v", tt.lang, tt.lines, got, tt.want)
		}
	}
}

// FuzzParse: any document parses without panicking; each block's lines
// are in the document, at a line it has, and a marker's kind is known.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"<!-- docs-test: run -->\n    echo hi\n",
		"<!-- docs-test: skip (why) -->\n```sh\nx\n```\n",
		"1. a\n\n   <!-- docs-test: output -->\n   ```\n   $ x\n   y\n   ```\n",
		"<!-- docs-test: run -->\n\ntext <!-- docs-test: stack -->\n",
		"> quote\n>\n>     code\n",
		"```\nunclosed\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !utf8.Valid(src) {
			return
		}
		blocks, err := Parse(src)
		if err != nil {
			return
		}
		lines := bytes.Count(src, []byte("\n")) + 1
		for _, b := range blocks {
			if b.Line < 1 || b.Line > lines+1 {
				t.Fatalf("block at line %d of a %d-line document", b.Line, lines)
			}
			if !slices.Contains([]Kind{None, Run, Output, Stack, Skip}, b.Kind) || (b.Kind == Skip) != (b.Reason != "") {
				t.Fatalf("block %+v: kind %q, reason %q", b, b.Kind, b.Reason)
			}
			for _, l := range b.Lines {
				if t := strings.TrimSpace(l); t != "" && !bytes.Contains(src, []byte(t)) {
					panic("a block line not in the document: " + l)
				}
			}
		}
	})
}
