package index

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/brainstem/brainstem/search"
)

// ellipsis marks where Snippet cut the text.
const ellipsis = '…'

// Snippet returns an excerpt of body of at most maxRunes runes (ellipses
// included): runs of white space become one space, and the window starts a
// little before the first token that matches one of terms (compared after
// tokenizing, so terms may be given as returned by [search.Tokenize] or [Hit]), or
// at the start of body when nothing matches. The window is cut on rune
// boundaries, preferably between words, and "…" marks each cut end. The
// result is valid UTF-8 even when body is not; maxRunes <= 0 gives "".
//
// Snippet reads the whole body; [SnippetAt] gives the same excerpt from a
// bounded window around a match offset the index already knows.
func Snippet(body string, terms []string, maxRunes int) string {
	if maxRunes <= 0 {
		return ""
	}
	text := collapseSpace(body)
	runes := []rune(text)
	if len(runes) <= maxRunes {
		return text
	}
	// Find the first match, as a rune range [ms, me).
	want := make([]string, 0, len(terms))
	for _, t := range terms {
		want = append(want, search.Tokenize(t)...)
	}
	ms, me := 0, 0
	if len(want) > 0 {
		startByte, endByte := -1, -1
		search.ForEachToken(text, func(tok string, s, e int) {
			if startByte < 0 && slices.Contains(want, tok) {
				startByte, endByte = s, e
			}
		})
		if startByte >= 0 {
			ms = utf8.RuneCountInString(text[:startByte])
			me = ms + utf8.RuneCountInString(text[startByte:endByte])
		}
	}
	return cutWindow(runes, ms, me, true, true, maxRunes)
}

// cutWindow chooses and renders the excerpt of maxRunes runes around the
// match [ms, me) of runes, a stretch of the collapsed text. atStart and
// atEnd tell whether runes begins and ends the text; when they don't, the
// caller provides enough runes around the match (see SnippetAt) for every
// decision below to be the one Snippet makes on the whole text.
func cutWindow(runes []rune, ms, me int, atStart, atEnd bool, maxRunes int) string {
	n := len(runes)
	if atStart && atEnd && n <= maxRunes {
		return string(runes)
	}
	if maxRunes < 8 {
		// Too short for a window around a match: a prefix and "…".
		return string(runes[:min(maxRunes-1, n)]) + string(ellipsis)
	}
	// Lead in with up to a quarter of the window; when the window reaches
	// the end of the text, start early enough to use the whole budget.
	start := max(ms-maxRunes/4, 0)
	toEnd := atEnd && start+maxRunes-1 >= n
	if toEnd {
		start = max(n-(maxRunes-1), 0) // > 0 on the whole text since n > maxRunes
	}
	cutStart := start > 0 || !atStart // the excerpt does not begin the text
	// Snap the start forward to a word start that stays before the match.
	if cutStart && (start == 0 || runes[start-1] != ' ') {
		for i := start + 1; i <= ms; i++ {
			if runes[i-1] == ' ' {
				start = i
				break
			}
		}
	}
	end := n
	if !toEnd {
		avail := maxRunes - 1 // the trailing "…"
		if cutStart {
			avail-- // the leading "…"
		}
		// Snapping the start forward may have brought the end into reach.
		end = min(start+avail, n)
		// Prefer to cut between words, if that keeps the match.
		if end < n && runes[end] != ' ' && runes[end-1] != ' ' {
			for i := end - 1; i > me && i > start; i-- {
				if runes[i] == ' ' {
					end = i
					break
				}
			}
		}
	}

	var b strings.Builder
	if cutStart {
		b.WriteRune(ellipsis)
	}
	b.WriteString(strings.TrimSpace(string(runes[start:end])))
	if end < n || !atEnd {
		b.WriteRune(ellipsis)
	}
	return b.String()
}

// collapseSpace replaces invalid UTF-8 with U+FFFD, turns every run of white
// space into one space and trims both ends.
func collapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s { // invalid bytes decode as utf8.RuneError
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Window sizes of SnippetAt, in bytes: the first read after the match
// (per rune of the snippet; before it, a quarter of that), and the largest
// either side grows to.
const (
	snippetSpanPerRune = 2
	snippetMaxSpan     = 64 << 10
)

// SnippetAt returns Snippet(body, terms, maxRunes) for a body of size bytes
// read through r, given match, the byte offset in the body of the first
// token that matches one of terms ([Hit].Offset; < 0 when none does). It
// reads only a window around match: about 2×maxRunes bytes after it and a
// quarter of that before, each side doubled while it holds too few runes
// for the excerpt (after collapsing white space) and does not reach the
// body's end, up to 64 KiB a side. So its cost does not depend on the
// body's size, and its excerpt equals Snippet's except next to a run of
// more than 64 KiB of white space, where it is cut shorter. A match that is
// not a token start of the body (the offset is stale) is treated as no
// match.
func SnippetAt(r io.ReaderAt, size, match int64, maxRunes int) (string, error) {
	return snippetAt(r, size, match, maxRunes, int64(snippetSpanPerRune*max(maxRunes, 8)+64), snippetMaxSpan)
}

// snippetAt is SnippetAt with the window's first span after the match and
// the cap of either side.
func snippetAt(r io.ReaderAt, size, match int64, maxRunes int, span, maxSpan int64) (string, error) {
	if maxRunes <= 0 || size <= 0 {
		return "", nil
	}
	if match >= size || maxRunes < 8 {
		match = -1 // out of range, or a prefix is all that is shown
	}
	after, before := span, span/4+16
	var buf []byte
	for {
		anchor := max(match, 0) // no match: the window starts the body
		lo, hi := max(anchor-before, 0), min(anchor+after, size)
		end := min(hi+1, size) // one byte more tells whether a rune starts at hi
		b, err := readWindow(r, buf, lo, end-lo)
		if err != nil {
			return "", err
		}
		buf = b
		// Start and end on rune starts. A byte that is not a UTF-8
		// continuation byte begins a rune however the bytes before it
		// decode, so the window decodes as the whole body does.
		from, to := int64(0), hi-lo
		for lo > 0 && lo+from < anchor && isContinuation(b[from]) {
			from++
		}
		for lo+to < size && lo+to > anchor && isContinuation(b[to]) {
			to--
		}
		raw := b[from:to]
		at := int(anchor - lo - from)
		runes, ms := collapseWindow(raw, at)
		atStart, atEnd := lo+from == 0, lo+to == size
		me := 0
		if match >= 0 {
			if !atEnd && len(raw)-at < 2*utf8.UTFMax && after < maxSpan {
				after *= 2 // too little after the offset to see its token
				continue
			}
			e, unknown := tokenAt(raw, at, atStart)
			if unknown && before < maxSpan {
				before *= 2 // the run of token runes reaches the window's start
				continue
			}
			if ms < 0 || e == 0 {
				match = -1 // no token starts at the offset: it is stale
				continue
			}
			me = ms + utf8.RuneCount(raw[at:at+e])
		} else {
			ms = 0
		}
		// What cutWindow reads: up to maxRunes+1 runes from the match on;
		// before it a quarter of the excerpt, or, when the excerpt may end
		// the text (the end is in reach of the match), the whole excerpt.
		tailOK := atEnd || len(runes)-ms >= maxRunes+2
		lead := maxRunes/4 + 2
		if atEnd && len(runes)-ms <= maxRunes {
			lead = maxRunes + 1
		}
		leadOK := atStart || ms >= lead
		if tailOK && leadOK {
			return cutWindow(runes, ms, me, atStart, atEnd, maxRunes), nil
		}
		grown := false
		if !tailOK && after < maxSpan {
			after, grown = after*2, true
		}
		if !leadOK && before < maxSpan {
			before, grown = before*2, true
		}
		if !grown {
			return cutWindow(runes, ms, me, atStart, atEnd, maxRunes), nil // a run of white space longer than the cap
		}
	}
}

// readWindow reads n bytes at lo, into buf when it is large enough.
func readWindow(r io.ReaderAt, buf []byte, lo, n int64) ([]byte, error) {
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	b := buf[:n]
	if got, err := r.ReadAt(b, lo); got < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("index: snippet: read %d bytes at %d: %w", len(b), lo, err)
	}
	return b, nil
}

// tokenAt is the length in bytes of the token that starts at raw[at:], or 0
// when none does: not a token, or inside one (the token runes just before
// the offset continue a token when one of them can start it; a run of
// combining marks after a space starts nothing). unknown reports that the
// answer may depend on bytes before raw: the run of token runes before the
// offset reaches raw's start, and raw does not start the body.
func tokenAt(raw []byte, at int, startsBody bool) (e int, unknown bool) {
	if at < len(raw) {
		e = tokenEnd(raw[at:])
	}
	inside, reachesStart := precededByToken(raw[:at])
	if inside {
		e = 0
	}
	return e, reachesStart && !startsBody
}

// precededByToken reports whether the token runes that end s (right before
// an offset) belong to a token, as forEachToken would cut it: a token starts
// at a rune that can start one and goes on over runes that can continue one,
// so the offset is inside a token when some rune of that trailing run can
// start one. unknown reports that the run reaches the start of s, so the
// answer may depend on what comes before.
func precededByToken(s []byte) (inside, unknown bool) {
	for j := len(s); j > 0; {
		r, size := utf8.DecodeLastRune(s[:j])
		switch {
		case r < utf8.RuneSelf && search.IsASCIIAlnum(byte(r)), r >= utf8.RuneSelf && search.IsTokenStart(r):
			return true, false
		case r >= utf8.RuneSelf && search.IsTokenRune(r):
			j -= size
		default:
			return false, false
		}
	}
	return false, true
}

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

// collapseWindow collapses raw as collapseSpace does (white space runs to
// one space, invalid bytes to U+FFFD, leading and trailing space dropped)
// and returns its runes and the index among them of the rune that starts at
// byte at of raw (-1 if no rune starts there).
func collapseWindow(raw []byte, at int) ([]rune, int) {
	runes := make([]rune, 0, len(raw))
	ms := -1
	space := false
	for i := 0; i < len(raw); {
		r, size := rune(raw[i]), 1
		var isSpace bool
		if r < utf8.RuneSelf {
			isSpace = r == ' ' || '\t' <= r && r <= '\r' // unicode.IsSpace for ASCII
		} else {
			r, size = utf8.DecodeRune(raw[i:])
			isSpace = unicode.IsSpace(r)
		}
		if isSpace {
			space = len(runes) > 0
			i += size
			continue
		}
		if space {
			runes = append(runes, ' ')
			space = false
		}
		if i == at {
			ms = len(runes)
		}
		runes = append(runes, r)
		i += size
	}
	return runes, ms
}

// tokenEnd returns the byte length of the token that starts s (as
// forEachToken delimits it, before case folding and filtering), or 0 when
// no token starts at s[0].
func tokenEnd(s []byte) int {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !search.IsASCIIAlnum(c) {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if i == 0 && !search.IsTokenStart(r) || i > 0 && !search.IsTokenRune(r) {
			break
		}
		i += size
	}
	return i
}
