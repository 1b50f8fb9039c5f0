package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTokenBytes is the longest token, in bytes after case folding, that the
// tokenizer keeps; longer tokens (hashes, base64 blobs, URLs without
// separators) are dropped.
const MaxTokenBytes = 64

// Terms returns the distinct terms of a query, in order of first
// appearance, at most MaxQueryTerms of them: what a search scores, and what
// a cross-wing search sends to every wing once the gateway has tokenized
// the query.
func Terms(query string) []string {
	var terms []string
	ForEachToken(query, func(tok string, _, _ int) {
		if len(terms) < MaxQueryTerms && !slices.Contains(terms, tok) {
			terms = append(terms, tok)
		}
	})
	return terms
}

// MaxQueryTerms is the number of distinct query terms a search scores;
// later terms are ignored.
const MaxQueryTerms = 64

// Tokenize splits s into indexable terms: maximal runs of letters and digits,
// case folded, at most [MaxTokenBytes] bytes long, English stop words
// removed. Invalid UTF-8 separates tokens. The returned terms are valid UTF-8.
func Tokenize(s string) []string {
	var out []string
	ForEachToken(s, func(tok string, _, _ int) { out = append(out, tok) })
	return out
}

// ForEachToken calls fn for each term of s with the byte range [start, end)
// of s the term came from. Terms that need no folding are substrings of s.
func ForEachToken(s string, fn func(tok string, start, end int)) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !IsASCIIAlnum(c) {
				i++
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !IsTokenStart(r) {
				i += size
				continue
			}
		}
		start := i
		fold := false
		for i < len(s) {
			c := s[i]
			if c < utf8.RuneSelf {
				switch {
				case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				case 'A' <= c && c <= 'Z':
					fold = true
				default:
					goto done
				}
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if !IsTokenRune(r) {
				break
			}
			fold = true
			i += size
		}
	done:
		tok := s[start:i]
		if fold {
			tok = strings.Map(foldRune, tok)
		}
		if len(tok) > MaxTokenBytes || isStopWord(tok) {
			continue
		}
		fn(tok, start, i)
	}
}

// IsASCIIAlnum reports whether c is an ASCII letter or digit: a token byte.
func IsASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// IsTokenStart reports whether r can begin a token. utf8.RuneError (invalid
// input) is a symbol, never a letter, so invalid bytes separate tokens.
func IsTokenStart(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// IsTokenRune reports whether r continues a token: letters, digits and
// combining marks (so "é" written as e + U+0301 and Indic vowel signs stay
// inside their word).
func IsTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mark, r)
}

// foldRune maps r to a canonical case: the lower case of its upper case,
// which collapses the simple case-folding orbits (e.g. "Σσς", "Kk\u212a",
// "Ssſ") onto one rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}
	return unicode.ToLower(unicode.ToUpper(r))
}

// isStopWord reports whether tok is an English stop word: bleve's stop_en
// list minus apostrophe forms, plus "s" and "t". A switch compiles to a
// binary search and keeps the list free of package-level state.
func isStopWord(tok string) bool {
	if len(tok) > 10 {
		return false
	}
	switch tok {
	case "a", "about", "above", "after", "again", "against", "all", "am", "an",
		"and", "any", "are", "as", "at", "be", "because", "been", "before",
		"being", "below", "between", "both", "but", "by", "cannot", "could",
		"did", "do", "does", "doing", "down", "during", "each", "few", "for",
		"from", "further", "had", "has", "have", "having", "he", "her", "here",
		"hers", "herself", "him", "himself", "his", "how", "i", "if", "in",
		"into", "is", "it", "its", "itself", "me", "more", "most", "my",
		"myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or",
		"other", "ought", "our", "ours", "ourselves", "out", "over", "own",
		"s", "same", "she", "should", "so", "some", "such", "t", "than",
		"that", "the", "their", "theirs", "them", "themselves", "then",
		"there", "these", "they", "this", "those", "through", "to", "too",
		"under", "until", "up", "very", "was", "we", "were", "what", "when",
		"where", "which", "while", "who", "whom", "why", "with", "would",
		"you", "your", "yours", "yourself", "yourselves":
		return true
	}
	return false
}
