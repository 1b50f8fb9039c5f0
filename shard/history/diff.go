package history

import (
	"bytes"
	"strconv"
	"strings"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// Diff returns the unified diff (as `diff -u` and git write it, three
// lines of context) that turns from into to, with fromName and toName on
// its --- and +++ lines; "" when they are equal. With maxBytes > 0 the
// text is cut after the last whole line that fits, and cut is set. The
// diff is minimal in lines (Myers' algorithm, in linear space).
func Diff(from, to []byte, fromName, toName string, maxBytes int) (text string, cut bool) {
	if bytes.Equal(from, to) {
		return "", false
	}
	a, b := splitLines(from), splitLines(to)
	ids := map[string]int{}
	intern := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: intern(a), b: intern(b)}
	d.del, d.ins = make([]bool, len(a)), make([]bool, len(b))
	d.compare(0, len(a), 0, len(b))
	w := diffWriter{max: maxBytes, d: d}
	w.line("--- " + oneLine(fromName) + "\n")
	w.line("+++ " + oneLine(toName) + "\n")
	for _, hk := range d.hunks() {
		writeHunk(&w, hk, a, b)
	}
	return w.b.String(), w.cut
}

// splitLines splits b into lines, each keeping its "\n" (the last may have
// none).
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// differ marks the lines of a deleted and of b inserted.
type differ struct {
	a, b     []int
	del, ins []bool
}

// compare marks the differences of a[aLo:aHi] and b[bLo:bHi].
func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo, bLo = aLo+1, bLo+1
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi, bHi = aHi-1, bHi-1
	}
	switch {
	case aLo == aHi:
		for j := bLo; j < bHi; j++ {
			d.ins[j] = true
		}
		return
	case bLo == bHi:
		for i := aLo; i < aHi; i++ {
			d.del[i] = true
		}
		return
	}
	x, y, u, v := d.middleSnake(aLo, aHi, bLo, bHi)
	if (x == aLo && y == bLo && u == aLo && v == bLo) || (x == aHi && y == bHi) {
		// No split (cannot happen for a difference of at least one, kept
		// as a guard against looping): replace the whole range.
		for i := aLo; i < aHi; i++ {
			d.del[i] = true
		}
		for j := bLo; j < bHi; j++ {
			d.ins[j] = true
		}
		return
	}
	d.compare(aLo, x, bLo, y)
	d.compare(u, aHi, v, bHi)
}

// middleSnake finds the middle snake of an optimal edit path between
// a[aLo:aHi] and b[bLo:bHi] (Myers 1986, section 4b): it runs the path
// forward from the start and backward from the end until they overlap,
// and returns the snake's start (x, y) and end (u, v).
func (d *differ) middleSnake(aLo, aHi, bLo, bHi int) (x, y, u, v int) {
	n, m := aHi-aLo, bHi-bLo
	delta := n - m
	odd := delta&1 != 0
	dmax := (n + m + 1) / 2
	off := dmax + 1
	vf := make([]int, 2*dmax+3)
	vb := make([]int, 2*dmax+3)
	for D := 0; D <= dmax; D++ {
		for k := -D; k <= D; k += 2 {
			var px int
			if k == -D || k != D && vf[off+k-1] < vf[off+k+1] {
				px = vf[off+k+1]
			} else {
				px = vf[off+k-1] + 1
			}
			py := px - k
			sx, sy := px, py
			for px < n && py < m && d.a[aLo+px] == d.b[bLo+py] {
				px, py = px+1, py+1
			}
			vf[off+k] = px
			if kr := delta - k; odd && kr >= -(D-1) && kr <= D-1 && px+vb[off+kr] >= n {
				return aLo + sx, bLo + sy, aLo + px, bLo + py
			}
		}
		for k := -D; k <= D; k += 2 {
			var px int
			if k == -D || k != D && vb[off+k-1] < vb[off+k+1] {
				px = vb[off+k+1]
			} else {
				px = vb[off+k-1] + 1
			}
			py := px - k
			sx, sy := px, py
			for px < n && py < m && d.a[aHi-1-px] == d.b[bHi-1-py] {
				px, py = px+1, py+1
			}
			vb[off+k] = px
			if kf := delta - k; !odd && kf >= -D && kf <= D && px+vf[off+kf] >= n {
				return aHi - px, bHi - py, aHi - sx, bHi - sy
			}
		}
	}
	return aLo, bLo, aLo, bLo // unreachable for n+m > 0
}

// hunk is a range of a and b shown together.
type hunk struct{ a0, a1, b0, b1 int }

// hunks groups the changes with diffContext lines around them, merging
// hunks whose context touches.
func (d *differ) hunks() []hunk {
	var out []hunk
	i, j := 0, 0
	for i < len(d.a) || j < len(d.b) {
		if !(i < len(d.a) && d.del[i] || j < len(d.b) && d.ins[j]) {
			i, j = i+1, j+1
			continue
		}
		a0, b0 := i, j
		for i < len(d.a) && d.del[i] || j < len(d.b) && d.ins[j] {
			if i < len(d.a) && d.del[i] {
				i++
			} else {
				j++
			}
		}
		before, after := min(diffContext, a0), min(diffContext, len(d.a)-i)
		h := hunk{a0 - before, i + after, b0 - before, j + after}
		if n := len(out); n > 0 && h.a0 <= out[n-1].a1 {
			out[n-1].a1, out[n-1].b1 = h.a1, h.b1
			continue
		}
		out = append(out, h)
	}
	return out
}

// writeHunk writes one hunk: its header, then its lines in order, each
// change's deletions before its insertions.
func writeHunk(w *diffWriter, hk hunk, a, b []string) {
	w.line("@@ -" + rangeOf(hk.a0, hk.a1-hk.a0) + " +" + rangeOf(hk.b0, hk.b1-hk.b0) + " @@\n")
	i, j := hk.a0, hk.b0
	d := w.d
	for i < hk.a1 || j < hk.b1 {
		switch {
		case i < hk.a1 && d.del[i]:
			w.text('-', a[i])
			i++
		case j < hk.b1 && d.ins[j]:
			w.text('+', b[j])
			j++
		default:
			w.text(' ', a[i])
			i, j = i+1, j+1
		}
	}
}

// rangeOf is a hunk range: "start,count", the count left out when it is
// 1, and the start the line before when it is 0.
func rangeOf(start, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}

// diffWriter accumulates the text, cutting it at max bytes.
type diffWriter struct {
	b   strings.Builder
	max int
	cut bool
	d   *differ
}

func (w *diffWriter) line(s string) {
	if w.cut {
		return
	}
	if w.max > 0 && w.b.Len()+len(s) > w.max {
		w.cut = true
		return
	}
	w.b.WriteString(s)
}

// text writes a line of the file with its marker; a last line without
// "\n" is followed by git's notice.
func (w *diffWriter) text(mark byte, l string) {
	if strings.HasSuffix(l, "\n") {
		w.line(string(mark) + l)
		return
	}
	w.line(string(mark) + l + "\n\\ No newline at end of file\n")
}
