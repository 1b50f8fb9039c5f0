package docstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// The values that change from run to run, replaced by placeholders in both
// what the docs show and what a command prints, in this order.
var (
	jwtRE      = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+){0,2}`) // whole, or its start
	uuidRE     = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	timeRE     = regexp.MustCompile(`\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?`)
	hexRE      = regexp.MustCompile(`\b[0-9a-f]{8,}\b`)
	durationRE = regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))+\b`)
	tmpRE      = regexp.MustCompile(`(/tmp|/var/tmp)/[A-Za-z0-9._-]*[0-9]{4,}[A-Za-z0-9._-]*`)
)

// normalizer rewrites what changes between runs: this stack's ports back to
// the documented ones, then tokens, ids, times, hashes, durations and
// temporary directories to placeholders.
type normalizer struct {
	ports []portPair
}

// portPair is one port of the stack: the documented default and this run's.
type portPair struct{ doc, actual int }

func (n normalizer) apply(s string) string {
	for _, p := range n.ports {
		for _, host := range []string{"127.0.0.1:", "localhost:"} {
			s = replacePort(s, host, p.actual, p.doc)
		}
	}
	s = jwtRE.ReplaceAllString(s, "<token>")
	s = uuidRE.ReplaceAllString(s, "<uuid>")
	s = timeRE.ReplaceAllString(s, "<time>")
	s = hexRE.ReplaceAllStringFunc(s, func(h string) string {
		if strings.ContainsAny(h, "abcdef") {
			return "<hex>"
		}
		return h
	})
	s = durationRE.ReplaceAllString(s, "<duration>")
	return tmpRE.ReplaceAllString(s, "<tmp>")
}

// replacePort replaces host+from by host+to where no digit follows.
func replacePort(s, host string, from, to int) string {
	old := fmt.Sprintf("%s%d", host, from)
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		b.WriteString(s[:i])
		if end < len(s) && s[end] >= '0' && s[end] <= '9' {
			b.WriteString(old)
		} else {
			fmt.Fprintf(&b, "%s%d", host, to)
		}
		s = s[end:]
	}
}

// squash removes all white space: the docs wrap long outputs and indent
// their continuation lines, and JSON tools print them pretty.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// views are the forms in which a command's output may match the docs: as
// printed, and for JSON, compacted, its structuredContent, and the text of
// each of its content items (what an MCP tool answered; the docs show that
// rather than the Inspector's envelope).
func views(out string) []string {
	out = strings.TrimSpace(out)
	vs := []string{out}
	if !json.Valid([]byte(out)) {
		return vs
	}
	vs = append(vs, compact(out))
	var env struct {
		Structured json.RawMessage `json:"structuredContent"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(out), &env) != nil {
		return vs
	}
	if len(env.Structured) > 0 {
		vs = append(vs, compact(string(env.Structured)))
	}
	for _, c := range env.Content {
		if c.Text != "" {
			vs = append(vs, compact(c.Text))
		}
	}
	return vs
}

// compact returns JSON without insignificant space, or s when it is not JSON.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

// match compares what a command printed (stdout, stderr, or both) with
// the lines the docs show, in which … stands for anything. It returns ""
// when one view of the output matches, else where the closest one first
// differs.
func match(want []string, stdout, stderr string, n normalizer) string {
	pattern := strings.Split(squash(n.apply(strings.Join(want, "\n"))), "…")
	best, why := -1, ""
	for _, out := range []string{stdout, stderr, stdout + "\n" + stderr} {
		for _, v := range views(out) {
			got := squash(n.apply(v))
			ok, reached, diff := glob(pattern, got)
			if ok {
				return ""
			}
			if reached > best {
				best, why = reached, diff
			}
		}
	}
	return why
}

// glob matches got against pattern's literal parts (anything may stand
// between two of them; the first starts got, the last ends it). When it
// does not match, reached is how far got matched and diff says where it
// stopped.
func glob(pattern []string, got string) (ok bool, reached int, diff string) {
	first, last := pattern[0], pattern[len(pattern)-1]
	if !strings.HasPrefix(got, first) {
		i := commonPrefix(first, got)
		return false, i, differ(first[i:], got, i)
	}
	at := len(first)
	if len(pattern) == 1 {
		if at == len(got) {
			return true, at, ""
		}
		return false, at, fmt.Sprintf("it prints more than the docs show: %s", excerpt(got[at:], 80))
	}
	for _, p := range pattern[1 : len(pattern)-1] {
		i := strings.Index(got[at:], p)
		if i < 0 {
			return false, at, fmt.Sprintf("the docs show %s, which it does not print after %s", excerpt(p, 80), excerpt(before(got, at, 40), 40))
		}
		at += i + len(p)
	}
	if !strings.HasSuffix(got[at:], last) {
		return false, at, fmt.Sprintf("the docs end with %s; it prints %s", excerpt(last, 80), excerpt(before(got, len(got), max(0, min(len(got)-at, len(last)+20))), 100))
	}
	return true, len(got), ""
}

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// differ says where the docs and the output part.
func differ(want, got string, at int) string {
	return fmt.Sprintf("after %s the docs show %s, it prints %s", excerpt(before(got, at, 40), 40), excerpt(want, 60), excerpt(got[at:], 60))
}

// excerpt quotes at most n bytes of s (on a rune boundary).
func excerpt(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return "`" + s + "`"
}

// before is at most n bytes of s before at, from a rune boundary.
func before(s string, at, n int) string {
	from := max(0, at-n)
	for from > 0 && !utf8Start(s[from]) {
		from--
	}
	return s[from:at]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
