package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// Diff's bounds, part of brain_diff's contract (docs/tools.md). Within
// them a diff of two versions of any size costs at most about an eighth
// of a second of one core, and so does a refusal past them; a real edit
// costs far less (docs/performance-history.md).
const (
	// DiffMaxEdits is the largest edit distance, in lines (lines removed
	// plus lines added; a changed line counts two), for which Diff writes
	// a line diff.
	DiffMaxEdits = 4096
	// DiffMaxWork bounds the steps (one a line compared or a diagonal
	// tried) Diff spends on finding the edit script: versions within
	// DiffMaxEdits whose lines repeat so much that the search would take
	// longer (a long note of blank-line separated lines, rewritten) are
	// too different too. A diff at the edit bound of lines that do not
	// repeat takes about a quarter of it, one of 4,000 edits of
	// paragraphs between blank lines about a half.
	DiffMaxWork = 1 << 24
	// diffCheckEvery is about how many steps pass between two looks at
	// the caller's context.
	diffCheckEvery = 1 << 16
)

// ErrTooDifferent is Diff's refusal of two versions past its bounds
// (DiffMaxEdits, DiffMaxWork): they differ too much for a line diff.
var ErrTooDifferent = errors.New("history: the versions differ too much for a line diff")

// diffBounds are the bounds of one Diff (the constants, but in tests).
type diffBounds struct{ edits, work int }

// Diff returns the unified diff (as `diff -u` and git write it, three
// lines of context) that turns from into to, with fromName and toName on
// its --- and +++ lines; "" when they are equal. With maxBytes > 0 the
// text is cut after the last whole line that fits, and cut is set. The
// diff is minimal in lines (Myers' algorithm, in linear space, after the
// common first and last lines are set aside). Versions that differ in more
// than DiffMaxEdits lines, or whose diff would take more than DiffMaxWork
// steps, are refused with ErrTooDifferent; Diff also stops with ctx's
// error soon after ctx ends.
func Diff(ctx context.Context, from, to []byte, fromName, toName string, maxBytes int) (text string, cut bool, err error) {
	return diffWithin(ctx, from, to, fromName, toName, maxBytes, diffBounds{edits: DiffMaxEdits, work: DiffMaxWork})
}

func diffWithin(ctx context.Context, from, to []byte, fromName, toName string, maxBytes int, lim diffBounds) (string, bool, error) {
	if bytes.Equal(from, to) {
		return "", false, nil
	}
	if err := ctx.Err(); err != nil {
		return "", false, fmt.Errorf("history: diff: %w", err)
	}
	a, b := splitLines(from), splitLines(to)
	d := newDiffer(ctx, a, b, lim)
	if err := d.run(); err != nil {
		return "", false, err
	}
	w := diffWriter{max: maxBytes, d: d}
	w.line("--- " + oneLine(fromName) + "\n")
	w.line("+++ " + oneLine(toName) + "\n")
	for _, hk := range d.hunks() {
		writeHunk(&w, hk, a, b)
	}
	return w.b.String(), w.cut, nil
}

// TooDifferentText is the diff text of two versions Diff refused with
// ErrTooDifferent, as git writes "Binary files a and b differ": one line
// that is no hunk, so that a reader of the text alone sees why there is
// none.
func TooDifferentText(fromName, toName string) string {
	return "Versions " + oneLine(fromName) + " and " + oneLine(toName) + " differ too much for a line diff\n"
}

// LineCount is the number of lines of b as Diff counts them: a last line
// without "\n" counts too.
func LineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// splitLines splits b into lines, each keeping its "\n" (the last may have
// none). The lines share one copy of b.
func splitLines(b []byte) []string {
	return slices.AppendSeq(make([]string, 0, LineCount(b)), strings.Lines(string(b)))
}

// differ marks the lines of a deleted and of b inserted. Lines are
// compared by their ids (equal lines, equal ids); only the lines between
// the common first and last ones, [lo, aHi) of a and [lo, bHi) of b, get
// one.
type differ struct {
	ctx      context.Context
	a, b     []int32
	del, ins []bool
	lo       int // the common first lines
	aHi, bHi int // where the common last lines start
	edits    int // DiffMaxEdits
	left     int // steps left of DiffMaxWork
	unseen   int // steps since ctx was last looked at
	// vf and vb are the furthest forward and backward paths on each
	// diagonal k at index off+k, reused by every middleSnake: sized for
	// the edit bound, not for the versions.
	vf, vb []int
	off    int
}

// newDiffer sets the common first and last lines aside and gives the
// others their ids.
func newDiffer(ctx context.Context, a, b []string, lim diffBounds) *differ {
	lo := 0
	for lo < len(a) && lo < len(b) && a[lo] == b[lo] {
		lo++
	}
	aHi, bHi := len(a), len(b)
	for aHi > lo && bHi > lo && a[aHi-1] == b[bHi-1] {
		aHi, bHi = aHi-1, bHi-1
	}
	d := &differ{ctx: ctx, lo: lo, aHi: aHi, bHi: bHi, edits: lim.edits, left: lim.work,
		a: make([]int32, len(a)), b: make([]int32, len(b)), del: make([]bool, len(a)), ins: make([]bool, len(b))}
	ids := make(map[string]int32, aHi-lo+bHi-lo)
	intern := func(ls []string, out []int32) {
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
	}
	intern(a[lo:aHi], d.a[lo:aHi])
	intern(b[lo:bHi], d.b[lo:bHi])
	return d
}

// run marks the differences, or refuses versions past the bounds.
func (d *differ) run() error {
	n, m := d.aHi-d.lo, d.bHi-d.lo
	if n-m > d.edits || m-n > d.edits { // at least |n-m| lines are added or removed
		return ErrTooDifferent
	}
	half := min((n+m+1)/2, d.edits/2+1)
	d.off = half + 1
	d.vf, d.vb = make([]int, 2*half+3), make([]int, 2*half+3)
	return d.compare(d.lo, d.aHi, d.lo, d.bHi)
}

// spend takes work steps from the budget, and now and then looks at ctx.
func (d *differ) spend(work int) error {
	d.left -= work
	if d.left < 0 {
		return ErrTooDifferent
	}
	if d.unseen += work; d.unseen >= diffCheckEvery {
		d.unseen = 0
		if err := d.ctx.Err(); err != nil {
			return fmt.Errorf("history: diff: %w", err)
		}
	}
	return nil
}

// compare marks the differences of a[aLo:aHi] and b[bLo:bHi].
func (d *differ) compare(aLo, aHi, bLo, bHi int) error {
	start := aLo
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo, bLo = aLo+1, bLo+1
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi, bHi = aHi-1, bHi-1
	}
	if err := d.spend(1 + aLo - start); err != nil {
		return err
	}
	switch {
	case aLo == aHi:
		for j := bLo; j < bHi; j++ {
			d.ins[j] = true
		}
		return nil
	case bLo == bHi:
		for i := aLo; i < aHi; i++ {
			d.del[i] = true
		}
		return nil
	}
	s, err := d.middleSnake(box{aLo, aHi, bLo, bHi})
	if err != nil {
		return err
	}
	if (s.x == aLo && s.y == bLo && s.u == aLo && s.v == bLo) || (s.x == aHi && s.y == bHi) {
		// No split (cannot happen for a difference of at least one, kept
		// as a guard against looping): replace the whole range.
		for i := aLo; i < aHi; i++ {
			d.del[i] = true
		}
		for j := bLo; j < bHi; j++ {
			d.ins[j] = true
		}
		return nil
	}
	if err := d.compare(aLo, s.x, bLo, s.y); err != nil {
		return err
	}
	return d.compare(s.u, aHi, s.v, bHi)
}

// box is the part a[aLo:aHi], b[bLo:bHi] of the versions compared.
type box struct{ aLo, aHi, bLo, bHi int }

// snake is a run of equal lines from (x, y) to (u, v).
type snake struct{ x, y, u, v int }

// middleSnake finds the middle snake of an optimal edit path of bx
// (Myers 1986, section 4b): it runs the path forward from the start and
// backward from the end until they overlap, and returns the snake's start
// (x, y) and end (u, v). A path of more than d.edits edits is refused with
// ErrTooDifferent as soon as no shorter one is left: forward step D finds
// paths of 2D-1 edits, backward step D of 2D.
func (d *differ) middleSnake(bx box) (snake, error) {
	n, m := bx.aHi-bx.aLo, bx.bHi-bx.bLo
	dmax := min((n+m+1)/2, d.off-1)
	d.vf[d.off+1], d.vb[d.off+1] = 0, 0
	for D := 0; D <= dmax; D++ {
		if 2*D-1 > d.edits {
			break
		}
		s, ok, err := d.extend(bx, D, false)
		if ok || err != nil {
			return s, err
		}
		if 2*D > d.edits {
			break
		}
		s, ok, err = d.extend(bx, D, true)
		if ok || err != nil {
			return s, err
		}
	}
	return snake{}, ErrTooDifferent
}

// extend extends the forward paths of bx (back: the backward ones) to D
// edits; ok when one overlaps a path of the other direction: a backward
// path of D-1 for an odd difference of lengths, a forward path of D for
// an even one.
func (d *differ) extend(bx box, D int, back bool) (s snake, ok bool, err error) {
	n, m := bx.aHi-bx.aLo, bx.bHi-bx.bLo
	delta := n - m
	odd := delta&1 != 0
	off, v, other, lim := d.off, d.vf, d.vb, D-1
	if back {
		v, other, lim = d.vb, d.vf, D
	}
	work := 0
	for k := -D; k <= D; k += 2 {
		var px int
		if k == -D || k != D && v[off+k-1] < v[off+k+1] {
			px = v[off+k+1]
		} else {
			px = v[off+k-1] + 1
		}
		py := px - k
		sx, sy := px, py
		if back {
			for px < n && py < m && d.a[bx.aHi-1-px] == d.b[bx.bHi-1-py] {
				px, py = px+1, py+1
			}
		} else {
			for px < n && py < m && d.a[bx.aLo+px] == d.b[bx.bLo+py] {
				px, py = px+1, py+1
			}
		}
		v[off+k] = px
		if work += 1 + px - sx; work > d.left {
			return snake{}, false, ErrTooDifferent
		}
		if kr := delta - k; odd != back && kr >= -lim && kr <= lim && px+other[off+kr] >= n {
			if back {
				return snake{bx.aHi - px, bx.bHi - py, bx.aHi - sx, bx.bHi - sy}, true, d.spend(work)
			}
			return snake{bx.aLo + sx, bx.bLo + sy, bx.aLo + px, bx.bLo + py}, true, d.spend(work)
		}
	}
	return snake{}, false, d.spend(work)
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
