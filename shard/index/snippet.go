package index

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ellipsis marks where Snippet cut the text.
const ellipsis = '…'

// Snippet returns an excerpt of body of at most maxRunes runes (ellipses
// included): runs of white space become one space, and the window starts a
// little before the first token that matches one of terms (compared after
// tokenizing, so terms may be given as returned by [Tokenize] or [Hit]), or
// at the start of body when nothing matches. The window is cut on rune
// boundaries, preferably between words, and "…" marks each cut end. The
// result is valid UTF-8 even when body is not; maxRunes <= 0 gives "".
func Snippet(body string, terms []string, maxRunes int) string {
	if maxRunes <= 0 {
		return ""
	}
	text := collapseSpace(body)
	n := utf8.RuneCountInString(text)
	if n <= maxRunes {
		return text
	}
	runes := []rune(text)
	if maxRunes < 8 {
		// Too short for a window around a match: a prefix and "…".
		return string(runes[:maxRunes-1]) + string(ellipsis)
	}

	// Find the first match, as a rune range [ms, me).
	want := make([]string, 0, len(terms))
	for _, t := range terms {
		want = append(want, Tokenize(t)...)
	}
	ms, me := 0, 0
	if len(want) > 0 {
		startByte, endByte := -1, -1
		forEachToken(text, func(tok string, s, e int) {
			if startByte < 0 && slices.Contains(want, tok) {
				startByte, endByte = s, e
			}
		})
		if startByte >= 0 {
			ms = utf8.RuneCountInString(text[:startByte])
			me = ms + utf8.RuneCountInString(text[startByte:endByte])
		}
	}

	// Lead in with up to a quarter of the window; when the window reaches
	// the end of the text, start early enough to use the whole budget.
	start := max(ms-maxRunes/4, 0)
	toEnd := start+maxRunes-1 >= n
	if toEnd {
		start = n - (maxRunes - 1) // > 0 since n > maxRunes
	}
	// Snap the start forward to a word start that stays before the match.
	if start > 0 && runes[start-1] != ' ' {
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
		if start > 0 {
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
	if start > 0 {
		b.WriteRune(ellipsis)
	}
	b.WriteString(strings.TrimSpace(string(runes[start:end])))
	if end < n {
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
