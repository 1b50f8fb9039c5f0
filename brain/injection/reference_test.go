package injection

import (
	"regexp"
	"sync"
	"testing"
)

// referenceRes are the phrases' patterns compiled unanchored, once.
var referenceRes = sync.OnceValue(func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(phrases.list))
	for i, p := range phrases.list {
		src := `(` + p.src + `)`
		if p.lineStart {
			src = `(?m)^[ \t>*#]*` + src
		}
		out[i] = regexp.MustCompile(src)
	}
	return out
})

// referencePhrases finds the first match of each text rule by running every
// phrase's pattern over the whole lower-cased text, as a plain regexp
// search would: what scanPhrases, which tries patterns only at their leads
// and within their windows, must agree with.
func referencePhrases(content []byte) map[string]int {
	low := lowerASCII(content)
	code := codeSpans(content)
	out := map[string]int{}
	for i, p := range phrases.list {
		for _, m := range referenceRes()[i].FindAllSubmatchIndex(low, -1) {
			if p.rule == RuleToolCall && inCode(code, m[2]) || m[3]-m[2] > p.window {
				continue // in code, or longer than its window, where Scan stops
			}
			if at, ok := out[p.rule]; !ok || m[2] < at {
				out[p.rule] = m[2]
			}
			break
		}
	}
	return out
}

// comparePhrases reports where scanPhrases and referencePhrases disagree.
// With code in the text, tool_call is not compared: the reference's
// non-overlapping matches may hide one starting inside a match in code.
func comparePhrases(t *testing.T, content []byte) {
	t.Helper()
	got := scanPhrases(content, lowerASCII(content), codeSpans(content))
	want := referencePhrases(content)
	hasCode := len(codeSpans(content)) > 0
	for _, r := range []string{RuleInstructionOverride, RuleRoleInjection, RuleToolCall, RuleExfiltration} {
		if r == RuleToolCall && hasCode {
			continue
		}
		g, gok := got[r]
		w, wok := want[r]
		if gok != wok || gok && g.At != w {
			t.Errorf("%q: %s: scanPhrases %v (%v), reference at %d (%v): a lead or a window is missing", content, r, g, gok, w, wok)
		}
	}
}

func TestPhrasesMatchReference(t *testing.T) {
	for _, name := range []string{"attacks.txt", "benign.txt"} {
		for _, e := range readList(t, name) {
			comparePhrases(t, []byte(e.text))
			comparePhrases(t, []byte(harmless(e.text)))
		}
	}
}
