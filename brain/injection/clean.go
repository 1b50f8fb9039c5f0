package injection

import (
	"strings"
	"unicode/utf8"
)

// Clean returns s without what a person does not see: bidirectional
// controls, zero-width and other invisible characters (U+200B–U+200F,
// U+2060–U+2064, U+FEFF, U+180E, U+061C, U+00AD), tag characters
// (U+E0000–U+E007F), control characters but tab and line feed (carriage
// returns too), a variation selector right after another, and HTML
// comments (each replaced by one space; an unterminated one to the end).
// Invalid UTF-8 becomes U+FFFD. Clean is idempotent, and Scan finds no
// rule of Rules marked Hidden in its result. It is for text a hook puts
// into an agent's context; a note's bytes on disk are never cleaned.
func Clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	prevVariation := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch c := classify(r); {
		case r == '\r':
		case c == visible:
			b.WriteRune(r) // invalid UTF-8 decodes as, and is written as, U+FFFD
			prevVariation = false
		case c == variation:
			if !prevVariation {
				b.WriteRune(r)
			}
			prevVariation = true
		}
	}
	return stripComments(b.String())
}

// stripComments replaces each HTML comment of s with one space (so that
// the text around it cannot join into a new comment), and removes an
// unterminated one to the end. "<!-->" and "<!--->" are whole comments, as
// in HTML.
func stripComments(s string) string {
	i := strings.Index(s, "<!--")
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		end := strings.Index(s[i+2:], "-->")
		if end < 0 {
			return b.String()
		}
		b.WriteByte(' ')
		s = s[i+2+end+3:]
		i = strings.Index(s, "<!--")
	}
	b.WriteString(s)
	return b.String()
}
