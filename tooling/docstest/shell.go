package docstest

import (
	"fmt"
	"strings"
)

// Step is one command of a block and what the docs show it prints.
type Step struct {
	Line int      // the line of the command, from 1
	Cmd  string   // the command as the docs write it, without its "$ " prompt
	Want []string // the lines the docs show it prints; nil when they show none
}

// Steps splits a block into its commands. Lines starting with "$ " are
// commands (continued while the shell would wait for more: a \ at the end
// of a line, an open quote, a here-document) and the lines after one, up
// to the next, are what it prints. Without prompts, a Run block is
// commands only, and an Output block is paragraphs of comment lines, one
// command and the lines it prints, up to the blank line. Comment lines
// alone are not steps.
func Steps(b Block) ([]Step, error) {
	for _, l := range b.Lines {
		if strings.HasPrefix(l, "$ ") {
			return promptSteps(b)
		}
	}
	var steps []Step
	for i := 0; i < len(b.Lines); {
		l := strings.TrimSpace(b.Lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			i++
			continue
		}
		cmd, next, ok := command(b.Lines, i)
		if !ok {
			return nil, fmt.Errorf("%d: the command does not end: an open quote, bracket or here-document, or a \\ on the last line", b.Line+i)
		}
		st := Step{Line: b.Line + i, Cmd: cmd}
		i = next
		if b.Kind == Output {
			for i < len(b.Lines) && strings.TrimSpace(b.Lines[i]) != "" {
				st.Want = append(st.Want, b.Lines[i])
				i++
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// promptSteps splits a block written with "$ " prompts.
func promptSteps(b Block) ([]Step, error) {
	var steps []Step
	for i := 0; i < len(b.Lines); {
		l := b.Lines[i]
		if !strings.HasPrefix(l, "$ ") {
			if strings.TrimSpace(l) != "" && len(steps) == 0 {
				return nil, fmt.Errorf("%d: output before the block's first \"$ \" command", b.Line+i)
			}
			i++
			continue
		}
		lines := append([]string{strings.TrimPrefix(l, "$ ")}, b.Lines[i+1:]...)
		for j := 1; j < len(lines); j++ {
			lines[j] = strings.TrimPrefix(lines[j], "> ")
		}
		cmd, next, ok := command(lines, 0)
		if !ok {
			return nil, fmt.Errorf("%d: the command does not end: an open quote, bracket or here-document, or a \\ on the last line", b.Line+i)
		}
		st := Step{Line: b.Line + i, Cmd: cmd}
		i += next
		for i < len(b.Lines) && !strings.HasPrefix(b.Lines[i], "$ ") {
			st.Want = append(st.Want, b.Lines[i])
			i++
		}
		for len(st.Want) > 0 && strings.TrimSpace(st.Want[len(st.Want)-1]) == "" {
			st.Want = st.Want[:len(st.Want)-1]
		}
		if len(st.Want) == 0 {
			st.Want = nil
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// command reads one command from lines[i:], joining the lines the shell
// would read with it, and returns it and the index of the line after it.
func command(lines []string, i int) (string, int, bool) {
	for j := i + 1; j <= len(lines); j++ {
		cmd := strings.Join(lines[i:j], "\n")
		if complete(cmd) {
			return cmd, j, true
		}
	}
	return "", len(lines), false
}

// complete reports whether s is whole: no quote, $( … ), ( … ), ${ … },
// { … } group or backquote left open, no here-document without its end
// line, and a last line that does not end in \, |, && or ||.
func complete(s string) bool {
	var sc scan
	lines := strings.Split(s, "\n")
	for li := 0; li < len(lines); li++ {
		sc.line(lines[li])
		if len(sc.heredocs) == 0 || sc.quoted() {
			continue
		}
		for _, h := range sc.heredocs {
			for li++; ; li++ {
				if li >= len(lines) {
					return false
				}
				end := lines[li]
				if h.dash {
					end = strings.TrimLeft(end, "\t")
				}
				if end == h.word {
					break
				}
			}
		}
		sc.heredocs = nil
		sc.cont = false
	}
	last := strings.TrimSpace(lines[len(lines)-1])
	return len(sc.open) == 0 && !sc.cont && len(sc.heredocs) == 0 &&
		!strings.HasSuffix(last, "|") && !strings.HasSuffix(last, "&&")
}

// scan is the state of complete's reading: the constructs open, the
// here-documents whose body starts on the next line, and whether the last
// line ended in a backslash.
type scan struct {
	open     []byte // ' " ` ( { and $ for ${
	heredocs []heredoc
	cont     bool
}

type heredoc struct {
	word string
	dash bool // <<- strips leading tabs from the end line
}

func (sc *scan) top() byte {
	if len(sc.open) == 0 {
		return 0
	}
	return sc.open[len(sc.open)-1]
}

func (sc *scan) push(c byte) { sc.open = append(sc.open, c) }
func (sc *scan) pop()        { sc.open = sc.open[:len(sc.open)-1] }

// quoted reports whether the line ended inside a quote.
func (sc *scan) quoted() bool {
	t := sc.top()
	return t == '\'' || t == '"' || t == '`'
}

// line reads one line.
func (sc *scan) line(l string) {
	sc.cont = false
	for j := 0; j < len(l); j++ {
		c := l[j]
		switch sc.top() {
		case '\'':
			if c == '\'' {
				sc.pop()
			}
			continue
		case '"', '`':
			j = sc.inDouble(l, j)
			continue
		case '$':
			switch c {
			case '}':
				sc.pop()
			case '"', '\'':
				sc.push(c)
			}
			continue
		}
		if j = sc.word(l, j); j < 0 {
			return
		}
	}
}

// inDouble reads l[j] inside double quotes or backquotes and returns the
// index of the last byte it read.
func (sc *scan) inDouble(l string, j int) int {
	c := l[j]
	switch {
	case c == '\\':
		if j == len(l)-1 {
			sc.cont = true
		}
		return j + 1
	case c == sc.top():
		sc.pop()
	case c == '$' && j+1 < len(l) && l[j+1] == '(':
		sc.push('(')
		return j + 1
	case c == '$' && j+1 < len(l) && l[j+1] == '{':
		sc.push('$')
		return j + 1
	case c == '`' && sc.top() == '"':
		sc.push('`')
	}
	return j
}

// word reads l[j] outside quotes and returns the index of the last byte
// it read, or -1 when the rest of the line is a comment.
func (sc *scan) word(l string, j int) int {
	c := l[j]
	atWord := j == 0 || strings.ContainsRune(" \t;&|(", rune(l[j-1]))
	next := byte(0)
	if j+1 < len(l) {
		next = l[j+1]
	}
	switch {
	case c == '\\':
		if j == len(l)-1 {
			sc.cont = true
		}
		return j + 1
	case c == '#' && atWord:
		return -1
	case c == '\'' || c == '"' || c == '`':
		sc.push(c)
	case c == '$' && next == '(':
		sc.push('(')
		return j + 1
	case c == '$' && next == '{':
		sc.push('$')
		return j + 1
	case c == '(':
		sc.push('(')
	case c == ')' && sc.top() == '(':
		sc.pop()
	case c == '{' && atWord && (next == 0 || next == ' ' || next == '\t'):
		sc.push('{')
	case c == '}' && sc.top() == '{' && (j == 0 || l[j-1] == ' ' || l[j-1] == ';' || l[j-1] == '\t'):
		sc.pop()
	case c == '<' && next == '<' && j+2 < len(l) && l[j+2] == '<':
		return j + 2 // a here-string
	case c == '<' && next == '<':
		return sc.heredoc(l, j+2)
	}
	return j
}

// heredoc reads the delimiter of a here-document starting at l[j] (after
// the <<) and returns the index of its last byte.
func (sc *scan) heredoc(l string, j int) int {
	h := heredoc{}
	if j < len(l) && l[j] == '-' {
		h.dash = true
		j++
	}
	for j < len(l) && (l[j] == ' ' || l[j] == '\t') {
		j++
	}
	end := j
	for end < len(l) && !strings.ContainsRune(" \t;&|<>()", rune(l[end])) {
		end++
	}
	h.word = strings.NewReplacer("'", "", `"`, "", `\`, "").Replace(l[j:end])
	if h.word != "" {
		sc.heredocs = append(sc.heredocs, h)
	}
	return end - 1
}
