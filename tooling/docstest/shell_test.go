package docstest

import (
	"reflect"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"echo hi", true},
		{"echo hi \\", false},
		{"echo hi \\\n  there", true},
		{"echo 'open", false},
		{"echo 'it''s' \"a \\\" quote\"", true},
		{"echo \"$(date", false},
		{"echo \"$(date +%s)\"", true},
		{"i() { npx x \"$@\"; }", true},
		{"i() {\n  npx x\n}", true},
		{"i() {\n  npx x", false},
		{"cat <<'EOF' >f\nline\nEOF", true},
		{"cat <<EOF\nline", false},
		{"cat <<-EOF\n\tline\n\tEOF", true},
		{"cat <<< here", true},
		{"a | \\\n b", true},
		{"a |", false},
		{"a &&", false},
		{"echo ${HOME}", true},
		{"echo ${HOME", false},
		{"echo $((1 + 2))", true},
		{"echo hi # it's a comment", true},
		{"echo a#b 'c", false},
		{"(cd bench && go test)", true},
		{"x=$(printf %s \"$body\" | openssl dgst -sha256 -hmac \"$(cat f)\" | sed 's/^.* //')", true},
		{"echo `date", false},
	}
	for _, tt := range tests {
		if got := complete(tt.s); got != tt.want {
			t.Errorf("complete(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestSteps(t *testing.T) {
	tests := []struct {
		name  string
		block Block
		want  []Step
		err   string
	}{
		{"run: commands only", Block{Line: 10, Kind: Run, Lines: []string{"# set up", "a=1", "", "echo $a \\", "  more", "echo done"}},
			[]Step{{Line: 11, Cmd: "a=1"}, {Line: 13, Cmd: "echo $a \\\n  more"}, {Line: 15, Cmd: "echo done"}}, ""},
		{"output: paragraphs", Block{Line: 1, Kind: Output, Lines: []string{"i() { x; }", "", "i --a \\", "   --b", "{\"a\":1,", "  \"b\":2}", "", "# as bob", "i --c", "{}"}},
			[]Step{{Line: 1, Cmd: "i() { x; }"}, {Line: 3, Cmd: "i --a \\\n   --b", Want: []string{"{\"a\":1,", "  \"b\":2}"}}, {Line: 9, Cmd: "i --c", Want: []string{"{}"}}}, ""},
		{"prompts", Block{Line: 5, Kind: Run, Lines: []string{"$ brainstem check ./brain", "a: bad", "", "brain: 1 problem", "", "$ echo a \\", "> b", "$ true"}},
			[]Step{{Line: 5, Cmd: "brainstem check ./brain", Want: []string{"a: bad", "", "brain: 1 problem"}}, {Line: 10, Cmd: "echo a \\\nb"}, {Line: 12, Cmd: "true"}}, ""},
		{"a here-document keeps its blank lines", Block{Line: 1, Kind: Output, Lines: []string{"cat <<EOF", "a", "", "b", "EOF", "a", "", "b"}},
			[]Step{{Line: 1, Cmd: "cat <<EOF\na\n\nb\nEOF", Want: []string{"a"}}, {Line: 8, Cmd: "b"}}, ""},
		{"unended", Block{Line: 3, Kind: Run, Lines: []string{"echo 'x"}}, nil, "3: the command does not end"},
		{"output before a prompt", Block{Line: 3, Kind: Run, Lines: []string{"hello", "$ echo"}}, nil, "3: output before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Steps(tt.block)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Steps = %+v, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Steps =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

// FuzzSteps: any block splits without panicking, and every command of a
// block without prompts is complete and made of its lines.
func FuzzSteps(f *testing.F) {
	f.Add("echo 'a\nb' \\\n c\n\ncat <<E\nx\nE\n{\"a\":1}", true)
	f.Add("$ a\nb\n$ c \\\n> d", false)
	f.Fuzz(func(t *testing.T, text string, output bool) {
		b := Block{Line: 1, Kind: Run, Lines: strings.Split(text, "\n")}
		if output {
			b.Kind = Output
		}
		steps, err := Steps(b)
		if err != nil {
			return
		}
		for _, st := range steps {
			if st.Line < 1 || st.Line > len(b.Lines) {
				t.Fatalf("step at line %d of %d", st.Line, len(b.Lines))
			}
			if !strings.Contains(text, strings.TrimPrefix(strings.SplitN(st.Cmd, "\n", 2)[0], "$ ")) {
				t.Fatalf("step %q is not in the block", st.Cmd)
			}
		}
	})
}
