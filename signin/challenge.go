package signin

import (
	"errors"
	"fmt"
	"strings"
)

// Limits of a WWW-Authenticate header.
const (
	// MaxChallengeBytes bounds the WWW-Authenticate values read together.
	MaxChallengeBytes = 8 << 10
	// maxChallenges bounds the challenges of one header.
	maxChallenges = 16
	// maxChallengeParams bounds the parameters of one challenge.
	maxChallengeParams = 32
)

// ErrChallenge reports a WWW-Authenticate header that does not parse.
var ErrChallenge = errors.New("signin: malformed WWW-Authenticate header")

// Challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 9110 §11.6.1): a scheme and either auth-params or a token68.
type Challenge struct {
	Scheme  string            // as sent; compare with strings.EqualFold
	Params  map[string]string // names lower-cased; values unquoted
	Token68 string
}

// ParseChallenges parses the values of WWW-Authenticate headers (joined
// with ", " when there are several). Parameter names are case-insensitive
// and may appear once per challenge.
func ParseChallenges(values ...string) ([]Challenge, error) {
	h := strings.Join(values, ", ")
	if len(h) > MaxChallengeBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrChallenge, len(h), MaxChallengeBytes)
	}
	p := &challengeParser{s: h}
	var out []Challenge
	for {
		p.skipListSeparators()
		if p.done() {
			break
		}
		if len(out) == maxChallenges {
			return nil, fmt.Errorf("%w: more than %d challenges", ErrChallenge, maxChallenges)
		}
		c, err := p.challenge()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no challenge", ErrChallenge)
	}
	return out, nil
}

// Bearer returns the first challenge whose scheme is Bearer.
func Bearer(cs []Challenge) (Challenge, bool) {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "Bearer") {
			return c, true
		}
	}
	return Challenge{}, false
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

// span is the end of the run of bytes from from that in accepts.
func (p *challengeParser) span(from int, in func(byte) bool) int {
	for from < len(p.s) && in(p.s[from]) {
		from++
	}
	return from
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func (p *challengeParser) skipSpaces() { p.i = p.span(p.i, isSpace) }

func (p *challengeParser) skipListSeparators() {
	p.i = p.span(p.i, func(c byte) bool { return isSpace(c) || c == ',' })
}

func (p *challengeParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d", ErrChallenge, fmt.Sprintf(format, args...), p.i)
}

// token reads an RFC 9110 token.
func (p *challengeParser) token() string {
	start := p.i
	p.i = p.span(p.i, isTchar)
	return p.s[start:p.i]
}

// challenge reads auth-scheme [ 1*SP ( token68 / #auth-param ) ].
func (p *challengeParser) challenge() (Challenge, error) {
	scheme := p.token()
	if scheme == "" {
		return Challenge{}, p.errorf("expected an auth scheme")
	}
	c := Challenge{Scheme: scheme, Params: map[string]string{}}
	if p.done() || p.s[p.i] == ',' {
		return c, nil
	}
	if p.s[p.i] != ' ' && p.s[p.i] != '\t' {
		return Challenge{}, p.errorf("unexpected %q after the scheme %q", p.s[p.i], scheme)
	}
	p.skipSpaces()
	if p.done() || p.s[p.i] == ',' {
		return c, nil
	}
	// token68: token68 chars, then "=" padding, then the end or a comma.
	if t, ok := p.token68(); ok {
		c.Token68 = t
		return c, nil
	}
	for {
		start := p.i
		name := p.token()
		if name == "" {
			return Challenge{}, p.errorf("expected a parameter name")
		}
		p.skipSpaces()
		if p.done() || p.s[p.i] != '=' {
			if len(c.Params) == 0 {
				return Challenge{}, p.errorf("parameter %q has no value", name)
			}
			// Not a parameter: the next challenge's scheme.
			p.i = start
			return c, nil
		}
		p.i++ // '='
		p.skipSpaces()
		var val string
		if !p.done() && p.s[p.i] == '"' {
			v, err := p.quoted()
			if err != nil {
				return Challenge{}, err
			}
			val = v
		} else {
			val = p.token()
			if val == "" {
				return Challenge{}, p.errorf("parameter %q has an empty value", name)
			}
		}
		key := strings.ToLower(name)
		if _, dup := c.Params[key]; dup {
			return Challenge{}, p.errorf("parameter %q appears twice", key)
		}
		if len(c.Params) == maxChallengeParams {
			return Challenge{}, p.errorf("more than %d parameters", maxChallengeParams)
		}
		c.Params[key] = val
		p.skipSpaces()
		if p.done() {
			return c, nil
		}
		if p.s[p.i] != ',' {
			return Challenge{}, p.errorf("expected a comma, got %q", p.s[p.i])
		}
		p.skipListSeparators()
		if p.done() {
			return c, nil
		}
	}
}

// token68 reads a token68 when one stands here alone (followed by the end
// of the header or a comma); otherwise it leaves the position unchanged.
func (p *challengeParser) token68() (string, bool) {
	j := p.span(p.i, isToken68Char)
	if j == p.i {
		return "", false
	}
	k := p.span(j, func(c byte) bool { return c == '=' })
	end := p.span(k, isSpace)
	if end < len(p.s) && p.s[end] != ',' {
		return "", false
	}
	// A lone "name=" is ambiguous; it is read as a token68, as a
	// parameter without a value is not allowed anyway.
	t := p.s[p.i:k]
	p.i = end
	return t, true
}

// quoted reads a quoted-string and returns its unescaped content.
func (p *challengeParser) quoted() (string, error) {
	p.i++ // opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.errorf("unterminated escape")
			}
			n := p.s[p.i+1]
			if !isQuotedTextChar(n) && n != '"' && n != '\\' {
				return "", p.errorf("invalid escaped byte %#x", n)
			}
			b.WriteByte(n)
			p.i += 2
		case isQuotedTextChar(c):
			b.WriteByte(c)
			p.i++
		default:
			return "", p.errorf("invalid byte %#x in a quoted string", c)
		}
	}
	return "", p.errorf("unterminated quoted string")
}

// isTchar reports an RFC 9110 tchar.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// isQuotedTextChar reports qdtext without obs-text (HTAB, SP, visible
// ASCII except '"' and '\').
func isQuotedTextChar(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || c >= 0x23 && c <= 0x5b || c >= 0x5d && c <= 0x7e
}
