// Package jsontext writes JSON text the gateway already holds as bytes
// into its answers exactly as encoding/json would, in one pass and without
// encoding/json's byte-at-a-time state machine, and scans such text (white
// space, the end of a string) for the code that walks it by hand.
package jsontext

import (
	"errors"
	"strconv"
)

// MaxDepth is encoding/json's limit on nesting (its scanner's
// maxNestingDepth): a document nested deeper is refused, as there.
const MaxDepth = 10000

// ErrSyntax wraps every refusal of AppendCompact.
var ErrSyntax = errors.New("jsontext: invalid JSON")

const hex = "0123456789abcdef"

// AppendCompact appends src to dst as json.Marshal(json.RawMessage(src))
// writes it: validated, white space outside strings removed, and <, >, &,
// U+2028 and U+2029 escaped. Invalid JSON (a bad token, trailing data,
// nesting beyond MaxDepth) returns dst unchanged and an error wrapping
// ErrSyntax. Like encoding/json, it does not check the UTF-8 of strings.
func AppendCompact[S ~string | ~[]byte](dst []byte, src S) ([]byte, error) {
	c := compactor[S]{src: src, dst: dst}
	orig := len(dst)
	if err := c.document(); err != nil {
		return dst[:orig], err
	}
	return c.dst, nil
}

type compactor[S ~string | ~[]byte] struct {
	src S
	i   int
	dst []byte
	// stack holds, per open container, '{' or '['.
	stack []byte
}

func (c *compactor[S]) fail(what string) error {
	return errors.Join(ErrSyntax, errors.New(what+" at offset "+strconv.Itoa(c.i)))
}

// failAt is fail with the offset moved to i.
func (c *compactor[S]) failAt(i int, what string) error { c.i = i; return c.fail(what) }

func (c *compactor[S]) space() { c.i = SkipSpace(c.src, c.i) }

// document reads one value and then only white space, iteratively, so
// that depth costs memory of one byte a level rather than stack frames.
func (c *compactor[S]) document() error {
	for {
		c.space()
		if c.i >= len(c.src) {
			return c.fail("unexpected end of JSON input")
		}
		var err error
		switch b := c.src[c.i]; b {
		case '{', '[':
			if len(c.stack) >= MaxDepth {
				return c.fail("exceeded max depth")
			}
			c.stack = append(c.stack, b)
			c.dst = append(c.dst, b)
			c.i++
			c.space()
			if c.i < len(c.src) && c.src[c.i] == b+2 { // '}' is '{'+2, ']' is '['+2
				c.dst = append(c.dst, b+2)
				c.i++
				c.stack = c.stack[:len(c.stack)-1]
				break
			}
			if b == '{' {
				if err := c.key(); err != nil {
					return err
				}
			}
			continue // the first value of the container
		case '"':
			err = c.str()
		case 't':
			err = c.literal("true")
		case 'f':
			err = c.literal("false")
		case 'n':
			err = c.literal("null")
		default:
			err = c.number()
		}
		if err != nil {
			return err
		}
		if done, err := c.afterValue(); done || err != nil {
			return err
		}
	}
}

// afterValue reads what follows a value: the closing of containers, then
// a comma (and the next key in an object), or the end of the document
// (done).
func (c *compactor[S]) afterValue() (done bool, err error) {
	for {
		c.space()
		if len(c.stack) == 0 {
			if c.i < len(c.src) {
				return false, c.fail("invalid character after top-level value")
			}
			return true, nil
		}
		if c.i >= len(c.src) {
			return false, c.fail("unexpected end of JSON input")
		}
		top, b := c.stack[len(c.stack)-1], c.src[c.i]
		if b == top+2 {
			c.dst = append(c.dst, b)
			c.i++
			c.stack = c.stack[:len(c.stack)-1]
			continue
		}
		if b != ',' {
			return false, c.fail("invalid character after value")
		}
		c.dst = append(c.dst, ',')
		c.i++
		if top == '{' {
			return false, c.key()
		}
		return false, nil
	}
}

// key reads an object's key and its colon.
func (c *compactor[S]) key() error {
	c.space()
	if c.i >= len(c.src) || c.src[c.i] != '"' {
		return c.fail("invalid character looking for beginning of object key string")
	}
	if err := c.str(); err != nil {
		return err
	}
	c.space()
	if c.i >= len(c.src) || c.src[c.i] != ':' {
		return c.fail("invalid character after object key")
	}
	c.dst = append(c.dst, ':')
	c.i++
	return nil
}

func (c *compactor[S]) literal(word string) error {
	if len(c.src)-c.i < len(word) || string(c.src[c.i:c.i+len(word)]) != word {
		return c.fail("invalid literal")
	}
	c.dst = append(c.dst, word...)
	c.i += len(word)
	return nil
}

// str copies a string literal starting at its quote, escaping as
// encoding/json's compacting does.
func (c *compactor[S]) str() error {
	src := c.src
	start := c.i
	i := c.i + 1
	for i < len(src) {
		b := src[i]
		switch {
		case b == '"':
			c.dst = append(c.dst, src[start:i+1]...)
			c.i = i + 1
			return nil
		case b == '\\':
			if i+1 >= len(src) {
				return c.failAt(i, "unexpected end of JSON input")
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(src)-i < 6 || !isHex(src[i+2]) || !isHex(src[i+3]) || !isHex(src[i+4]) || !isHex(src[i+5]) {
					return c.failAt(i, "invalid character in \\u hexadecimal character escape")
				}
				i += 6
			default:
				return c.failAt(i, "invalid character in string escape code")
			}
		case b < 0x20:
			return c.failAt(i, "invalid character in string literal")
		case b == '<' || b == '>' || b == '&':
			c.dst = append(c.dst, src[start:i]...)
			c.dst = append(c.dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			i++
			start = i
		case b == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			c.dst = append(c.dst, src[start:i]...)
			c.dst = append(c.dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			i += 3
			start = i
		default:
			i++
		}
	}
	return c.failAt(i, "unexpected end of JSON input")
}

func isHex(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// number copies a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *compactor[S]) number() error {
	src, i := c.src, c.i
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && '1' <= src[i] && src[i] <= '9':
		i = digits(src, i)
	default:
		return c.failAt(i, "invalid character looking for beginning of value")
	}
	for _, part := range [...]struct {
		starts func(byte) bool
		sign   bool
		what   string
	}{
		{func(b byte) bool { return b == '.' }, false, "after decimal point in numeric literal"},
		{func(b byte) bool { return b == 'e' || b == 'E' }, true, "in exponent of numeric literal"},
	} {
		if i >= len(src) || !part.starts(src[i]) {
			continue
		}
		i++
		if part.sign && i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || !isDigit(src[i]) {
			return c.failAt(i, "invalid character "+part.what)
		}
		i = digits(src, i)
	}
	c.dst = append(c.dst, src[c.i:i]...)
	c.i = i
	return nil
}

// digits returns the index past the run of digits at src[i:].
func digits[S ~string | ~[]byte](src S, i int) int {
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	return i
}
