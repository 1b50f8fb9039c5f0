package injection

import (
	"bytes"
	"sort"
)

// span is a byte range [start, end) of code: a fenced block or an inline
// code span, where a payload is shown rather than hidden or posing as a turn.
type span struct{ start, end int }

// codeSpans returns the code of a markdown text, in order: fenced blocks
// (``` or ~~~, at most three spaces in, closed by a like fence at least as
// long, or running to the end) and inline code spans (a backtick run closed
// by a run of the same length on the same line). Linear in len(b).
func codeSpans(b []byte) []span {
	var out []span
	var fence byte
	fenceLen, fenceStart := 0, 0
	for pos := 0; pos < len(b); {
		lineEnd, next := len(b), len(b)
		if j := bytes.IndexByte(b[pos:], '\n'); j >= 0 {
			lineEnd, next = pos+j, pos+j+1
		}
		line := b[pos:lineEnd]
		switch {
		case fence != 0:
			if c, n, rest := fenceRun(line); c == fence && n >= fenceLen && len(bytes.TrimSpace(rest)) == 0 {
				out = append(out, span{fenceStart, lineEnd})
				fence = 0
			}
		default:
			if c, n, rest := fenceRun(line); n >= 3 && (c == '~' || bytes.IndexByte(rest, '`') < 0) {
				fence, fenceLen, fenceStart = c, n, pos
			} else {
				out = inlineSpans(out, line, pos)
			}
		}
		pos = next
	}
	if fence != 0 {
		out = append(out, span{fenceStart, len(b)})
	}
	return out
}

// fenceRun returns the fence character and run length a line starts with
// (after at most three spaces), and the rest of the line; n is 0 when the
// line starts with no backtick or tilde.
func fenceRun(line []byte) (c byte, n int, rest []byte) {
	i := 0
	for i < 3 && i < len(line) && line[i] == ' ' {
		i++
	}
	if i == len(line) || (line[i] != '`' && line[i] != '~') {
		return 0, 0, nil
	}
	c = line[i]
	j := i
	for j < len(line) && line[j] == c {
		j++
	}
	return c, j - i, line[j:]
}

// inlineSpans appends the inline code spans of one line (at offset base):
// a backtick run opens a span closed by the next run of the same length
// (CommonMark, within a line), and the runs inside are part of it. The runs
// are listed once and each linked to the next of its length, so a line of
// unmatched runs costs linear time.
func inlineSpans(out []span, line []byte, base int) []span {
	if bytes.IndexByte(line, '`') < 0 {
		return out
	}
	type run struct{ at, n int }
	var runs []run
	for i := 0; i < len(line); {
		if line[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] == '`' {
			j++
		}
		runs = append(runs, run{i, j - i})
		i = j
	}
	next := make([]int, len(runs)) // index of the next run of the same length, or -1
	last := map[int]int{}
	for k := len(runs) - 1; k >= 0; k-- {
		next[k] = -1
		if j, ok := last[runs[k].n]; ok {
			next[k] = j
		}
		last[runs[k].n] = k
	}
	for k := 0; k < len(runs); {
		if j := next[k]; j >= 0 {
			out = append(out, span{base + runs[k].at, base + runs[j].at + runs[j].n})
			k = j + 1
			continue
		}
		k++
	}
	return out
}

// inCode reports whether offset at lies in one of spans (sorted by start,
// not overlapping).
func inCode(spans []span, at int) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end > at })
	return i < len(spans) && spans[i].start <= at
}
