package injection

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// snippetBytes bounds the quoted text of a finding's Why.
const snippetBytes = 60

// Scan applies every rule of Rules to content (a note's bytes: frontmatter
// and body) and returns at most one Finding per rule, its first occurrence,
// in the order of Rules; nil when the note is clean. It is deterministic
// and linear in len(content).
func Scan(content []byte) []Finding {
	low := lowerASCII(content)
	code := codeSpans(content)
	found := scanPhrases(content, low, code)
	if _, done := found[RuleExfiltration]; !done {
		if f, ok := scanURLs(content, low); ok {
			found[RuleExfiltration] = f
		}
	}
	if f, ok := scanComments(content, code); ok {
		found[RuleHTMLComment] = f
	}
	for _, f := range scanChars(content) {
		found[f.Rule] = f
	}
	if len(found) == 0 {
		return nil
	}
	out := make([]Finding, 0, len(found))
	for _, r := range Rules() {
		if f, ok := found[r.Name]; ok {
			out = append(out, f)
		}
	}
	return out
}

// scanPhrases returns the first match of each text rule, trying each
// phrase, anchored, where one of its leads occurs.
func scanPhrases(content, low []byte, code []span) map[string]Finding {
	t := phrases
	at := make([]int, len(t.list)) // the earliest match of each phrase, or -1
	end := make([]int, len(t.list))
	for i := range at {
		at[i] = -1
	}
	try := func(i, pos int) {
		p := &t.list[i]
		if at[i] >= 0 && at[i] <= pos || p.lineStart && !lineStart(low, pos) || p.rule == RuleToolCall && inCode(code, pos) {
			return
		}
		w := low[pos:min(len(low), pos+p.window)]
		if p.needs != nil && !slices.ContainsFunc(p.needs, func(s string) bool { return bytes.Contains(w, []byte(s)) }) {
			return
		}
		if m := p.re.FindIndex(w); m != nil {
			at[i], end[i] = pos, pos+m[1]
		}
	}
	for i := 0; i < len(low); {
		if !isAlnum(low[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(low) && isAlnum(low[j]) {
			j++
		}
		if (i == 0 || !isWordByte(low[i-1])) && t.mayLead(low[i:j]) {
			for _, p := range t.words[string(low[i:j])] {
				try(p, i)
			}
		}
		i = j
	}
	for _, l := range t.lits {
		for off := 0; off < len(low); {
			k := bytes.Index(low[off:], []byte(l.lit))
			if k < 0 {
				break
			}
			for _, p := range l.phrases {
				try(p, off+k)
			}
			off += k + 1
		}
	}
	found := map[string]Finding{}
	for i, p := range t.list {
		if f, ok := found[p.rule]; at[i] >= 0 && (!ok || at[i] < f.At) {
			found[p.rule] = Finding{Rule: p.rule, At: at[i], Why: p.what + ": " + snippet(content, at[i], end[i])}
		}
	}
	return found
}

// lineStart reports whether only spaces, tabs and markdown marks (>, *, #)
// stand between the start of pos's line and pos.
func lineStart(low []byte, pos int) bool {
	for i := pos - 1; i >= 0 && low[i] != '\n'; i-- {
		switch low[i] {
		case ' ', '\t', '>', '*', '#':
		default:
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// isWordByte is a byte of \w, as regexp's \b sees it (on lower-cased text).
func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

// scanURLs finds the first exfiltration endpoint or URL carrying a secret.
func scanURLs(content, low []byte) (Finding, bool) {
	best := Finding{At: -1}
	if at, end := findEndpoint(low); at >= 0 {
		best = Finding{Rule: RuleExfiltration, At: at, Why: "an endpoint that collects what is sent to it: " + snippet(content, at, end)}
	}
	for off := 0; ; {
		k := bytes.Index(low[off:], []byte("://"))
		if k < 0 || best.At >= 0 && off+k > best.At {
			break
		}
		from, to, ok := urlAt(low, off+k)
		off += k + 3
		if !ok {
			continue
		}
		if why := urlFinding(string(low[from:to])); why != "" && (best.At < 0 || from < best.At) {
			best = Finding{Rule: RuleExfiltration, At: from, Why: why + ": " + snippet(content, from, to)}
			break
		}
	}
	return best, best.At >= 0
}

func isHostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-'
}

// scanComments finds the first HTML comment outside code.
func scanComments(content []byte, code []span) (Finding, bool) {
	open := []byte("<!--")
	for off := 0; ; {
		i := bytes.Index(content[off:], open)
		if i < 0 {
			return Finding{}, false
		}
		at := off + i
		off = at + len(open)
		if inCode(code, at) {
			continue
		}
		end := bytes.Index(content[at+2:], []byte("-->"))
		why, inner := "an unterminated HTML comment hides the rest of the note", len(content)
		if end >= 0 {
			why, inner = fmt.Sprintf("an HTML comment hides %d bytes from the rendered note", end+3+2), max(at+2+end, at+len(open))
		}
		return Finding{Rule: RuleHTMLComment, At: at, Why: why + ": " + snippet(content, at+len(open), inner)}, true
	}
}

// lowerASCII returns a copy of b with ASCII letters lower-cased: every byte
// keeps its offset.
func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// snippet quotes content[from:to], cut to snippetBytes at a rune boundary,
// cleaned (Clean) and with its whitespace collapsed, so a Why is one line
// that hides nothing.
func snippet(content []byte, from, to int) string {
	to = min(to, len(content), from+snippetBytes)
	for to > from && to < len(content) && !utf8.RuneStart(content[to]) {
		to--
	}
	s := strings.Join(strings.Fields(Clean(string(content[from:to]))), " ")
	return fmt.Sprintf("%q", s)
}
