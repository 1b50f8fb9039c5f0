package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as encoding/json encodes a string: quoted, with
// ", \ and control characters escaped (\b, \f, \n, \r, \t short, the others
// as \u00XX), U+2028 and U+2029 escaped, invalid UTF-8 replaced by \ufffd,
// and, when html, <, > and & escaped as \u003c, \u003e and \u0026 (what
// json.Marshal does; an encoder with SetEscapeHTML(false) leaves them).
func AppendString[S ~string | ~[]byte](dst []byte, s S, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain(b, html) {
				i++
				for i < len(s) && s[i] < utf8.RuneSelf && plain(s[i], html) {
					i++
				}
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			}
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plain reports whether the ASCII byte b is written as itself.
func plain(b byte, html bool) bool {
	return b >= 0x20 && b != '"' && b != '\\' && (!html || (b != '<' && b != '>' && b != '&'))
}

func decodeRune[S ~string | ~[]byte](s S) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v)
	case []byte:
		return utf8.DecodeRune(v)
	}
	return utf8.DecodeRuneInString(string(s))
}

// AppendFloat appends f as encoding/json encodes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 or from 1e21
// on, with the exponent's sign and at least two digits kept as encoding/json
// writes them (1e-07, 1e+21). NaN and the infinities, which encoding/json
// refuses, are the caller's to keep out; they are written as null.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
