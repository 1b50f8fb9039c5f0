package injection

import (
	"fmt"
	"unicode/utf8"
)

// class sorts a rune for the character rules.
type class uint8

const (
	visible    class = iota
	bidi             // always flagged: overrides, embeddings, isolates
	zeroWidth        // always flagged (U+FEFF only after the start)
	contextual       // flagged beside ASCII or another invisible character
	variation        // flagged when it follows another variation selector
	tag              // flagged outside an emoji flag sequence
	control          // flagged: C0 but tab, LF and CR; DEL; C1
)

// classify returns the class of r (carriage return counts as visible: it
// ends lines in CRLF files; Clean still removes it).
func classify(r rune) class {
	switch {
	case r < 0x20:
		if r == '\t' || r == '\n' || r == '\r' {
			return visible
		}
		return control
	case r < 0x7f:
		return visible
	case r <= 0x9f:
		return control
	case r == 0x00ad, r == 0x061c, r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f:
		return contextual
	case r == 0x180e, r == 0x200b, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return zeroWidth
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return bidi
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef:
		return variation
	case r >= 0xe0000 && r <= 0xe007f:
		return tag
	}
	return visible
}

// invisible reports a class a person does not see at all (a variation
// selector changes how the character before it looks: emoji sequences
// join after one).
func invisible(c class) bool {
	return c != visible && c != variation
}

// charName names the characters the rules flag most often.
func charName(r rune) string {
	if n, ok := map[rune]string{
		0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING", 0x202c: "POP DIRECTIONAL FORMATTING",
		0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE",
		0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE",
		0x200b: "ZERO WIDTH SPACE", 0x200c: "ZERO WIDTH NON-JOINER", 0x200d: "ZERO WIDTH JOINER",
		0x200e: "LEFT-TO-RIGHT MARK", 0x200f: "RIGHT-TO-LEFT MARK",
		0x2060: "WORD JOINER", 0xfeff: "ZERO WIDTH NO-BREAK SPACE", 0x00ad: "SOFT HYPHEN",
	}[r]; ok {
		return n
	}
	switch classify(r) {
	case tag:
		return "TAG CHARACTER"
	case variation:
		return "VARIATION SELECTOR"
	case control:
		return "CONTROL CHARACTER"
	}
	return "INVISIBLE CHARACTER"
}

// charTally counts one character rule's hits.
type charTally struct {
	first rune
	at, n int
}

// scanChars applies the character rules to b in one pass and returns their
// findings in the order of Rules.
func scanChars(b []byte) []Finding {
	tallies := map[string]*charTally{}
	hit := func(rule string, r rune, at int) {
		t := tallies[rule]
		if t == nil {
			t = &charTally{first: r, at: at}
			tallies[rule] = t
		}
		t.n++
	}
	prev, prevClass := rune(-1), visible
	for i := 0; i < len(b); {
		if c := b[i]; c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c == '\r' {
			prev, prevClass = rune(c), visible // the common case, without decoding
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		c := classify(r)
		if r == 0x1f3f4 {
			size += flagSequence(b[i+size:])
		}
		switch c {
		case bidi:
			hit(RuleBidiControl, r, i)
		case zeroWidth:
			if r != 0xfeff || i > 0 {
				hit(RuleInvisibleChar, r, i)
			}
		case contextual:
			next, _ := utf8.DecodeRune(b[i+size:])
			if (prev >= 0 && prev < utf8.RuneSelf) || invisible(prevClass) || (next < utf8.RuneSelf && i+size < len(b)) || invisible(classify(next)) {
				hit(RuleInvisibleChar, r, i)
			}
		case variation:
			if prevClass == variation {
				hit(RuleInvisibleChar, r, i)
			}
		case tag:
			hit(RuleUnicodeTag, r, i)
		case control:
			hit(RuleControlChar, r, i)
		}
		prev, prevClass = r, c
		i += size
	}
	var out []Finding
	for _, rule := range []string{RuleBidiControl, RuleInvisibleChar, RuleUnicodeTag, RuleControlChar} {
		if t := tallies[rule]; t != nil {
			out = append(out, Finding{Rule: rule, At: t.at,
				Why: fmt.Sprintf("U+%04X %s at byte %d (%d in the note)", t.first, charName(t.first), t.at, t.n)})
		}
	}
	return out
}

// flagSequence returns the length of the tag characters after U+1F3F4
// WAVING BLACK FLAG when they spell an emoji flag (a subdivision: 2 to 6
// tag letters or digits, then U+E007F CANCEL TAG), else 0.
func flagSequence(b []byte) int {
	n := 0
	for k := 0; k < 7 && n < len(b); k++ {
		r, size := utf8.DecodeRune(b[n:])
		n += size
		switch {
		case r == 0xe007f:
			if k >= 2 {
				return n
			}
			return 0
		case r >= 0xe0030 && r <= 0xe0039, r >= 0xe0061 && r <= 0xe007a:
		default:
			return 0
		}
	}
	return 0
}
