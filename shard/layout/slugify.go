package layout

import (
	"strings"
	"unicode/utf8"

	"github.com/brainstem/brainstem/brain"
)

// Slugify derives a slug from a title, best effort: common accented Latin
// letters are folded to ASCII (é→e, ß→ss, æ→ae, ø→o, ł→l…), the result is
// lowercased, every run of other characters becomes one '-', leading and
// trailing '-' are trimmed, and the slug is cut to at most 96 bytes at a '-'
// boundary when there is one. A result that is a reserved name gets a
// "-note" suffix. It returns "" when nothing usable is left (for example a
// title in a non-Latin script); callers must then ask for a slug. A non-empty
// result always satisfies brain.ValidSlug.
func Slugify(title string) string {
	var b strings.Builder
	b.Grow(min(len(title), 4*brain.MaxSlugLen))
	dash := false // a '-' is pending
	for i := 0; i < len(title); {
		if b.Len() > 2*brain.MaxSlugLen {
			break // long enough to cut; ignore the rest
		}
		r, size := utf8.DecodeRuneInString(title[i:])
		i += size
		var s string
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			s = string(r)
		case r >= 'A' && r <= 'Z':
			s = string(r + ('a' - 'A'))
		default:
			s = fold(r)
		}
		if s == "" {
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteString(s)
	}
	out := b.String()
	if len(out) > brain.MaxSlugLen {
		cut := out[:brain.MaxSlugLen+1]
		if j := strings.LastIndexByte(cut, '-'); j > 0 {
			out = out[:j]
		} else {
			out = out[:brain.MaxSlugLen]
		}
		out = strings.TrimRight(out, "-")
	}
	if out != "" && brain.ValidSlug(out) != nil {
		// Reserved (con, nul…): suffix keeps it readable and valid.
		out = strings.TrimRight(out[:min(len(out), brain.MaxSlugLen-len("-note"))], "-") + "-note"
	}
	return out
}

// fold maps common accented Latin letters to lowercase ASCII; it returns ""
// for anything else.
func fold(r rune) string {
	switch r {
	case 'à', 'á', 'â', 'ã', 'ä', 'å', 'À', 'Á', 'Â', 'Ã', 'Ä', 'Å', 'ā', 'Ā', 'ă', 'Ă', 'ą', 'Ą':
		return "a"
	case 'æ', 'Æ':
		return "ae"
	case 'ç', 'Ç', 'ć', 'Ć', 'č', 'Č', 'ĉ', 'Ĉ', 'ċ', 'Ċ':
		return "c"
	case 'ď', 'Ď', 'đ', 'Đ', 'ð', 'Ð':
		return "d"
	case 'è', 'é', 'ê', 'ë', 'È', 'É', 'Ê', 'Ë', 'ē', 'Ē', 'ĕ', 'Ĕ', 'ė', 'Ė', 'ę', 'Ę', 'ě', 'Ě':
		return "e"
	case 'ğ', 'Ğ', 'ĝ', 'Ĝ', 'ġ', 'Ġ', 'ģ', 'Ģ':
		return "g"
	case 'ĥ', 'Ĥ', 'ħ', 'Ħ':
		return "h"
	case 'ì', 'í', 'î', 'ï', 'Ì', 'Í', 'Î', 'Ï', 'ĩ', 'Ĩ', 'ī', 'Ī', 'ĭ', 'Ĭ', 'į', 'Į', 'ı', 'İ':
		return "i"
	case 'ĵ', 'Ĵ':
		return "j"
	case 'ķ', 'Ķ':
		return "k"
	case 'ĺ', 'Ĺ', 'ļ', 'Ļ', 'ľ', 'Ľ', 'ł', 'Ł':
		return "l"
	case 'ñ', 'Ñ', 'ń', 'Ń', 'ņ', 'Ņ', 'ň', 'Ň':
		return "n"
	case 'ò', 'ó', 'ô', 'õ', 'ö', 'ø', 'Ò', 'Ó', 'Ô', 'Õ', 'Ö', 'Ø', 'ō', 'Ō', 'ŏ', 'Ŏ', 'ő', 'Ő':
		return "o"
	case 'œ', 'Œ':
		return "oe"
	case 'ŕ', 'Ŕ', 'ŗ', 'Ŗ', 'ř', 'Ř':
		return "r"
	case 'ś', 'Ś', 'ŝ', 'Ŝ', 'ş', 'Ş', 'š', 'Š', 'ș', 'Ș':
		return "s"
	case 'ß':
		return "ss"
	case 'ţ', 'Ţ', 'ť', 'Ť', 'ŧ', 'Ŧ', 'ț', 'Ț':
		return "t"
	case 'þ', 'Þ':
		return "th"
	case 'ù', 'ú', 'û', 'ü', 'Ù', 'Ú', 'Û', 'Ü', 'ũ', 'Ũ', 'ū', 'Ū', 'ŭ', 'Ŭ', 'ů', 'Ů', 'ű', 'Ű', 'ų', 'Ų':
		return "u"
	case 'ŵ', 'Ŵ':
		return "w"
	case 'ý', 'ÿ', 'Ý', 'Ÿ', 'ŷ', 'Ŷ':
		return "y"
	case 'ź', 'Ź', 'ż', 'Ż', 'ž', 'Ž':
		return "z"
	}
	return ""
}
