package auth

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
)

// Identity is a verified caller. Email is the one identity dimension used
// everywhere: cache keys, authorship, audit lines and rate limits.
type Identity struct {
	Email   string    // canonical (CanonicalEmail), verified by the issuer
	Groups  []string  // from the configured groups claim, as the issuer sent them
	Issuer  string    // for logs only
	Subject string    // for logs only
	Expiry  time.Time // when the SSO token that proved this identity expires
	// IssuedAt is when that token was issued (its iat; zero when it has
	// none). Offboarding refuses tokens issued before an operator ended
	// the person's sign-ins.
	IssuedAt time.Time
}

// MaxEmailLocalPart bounds the part of an email address before its '@'
// (RFC 5321 §4.5.3.1.1). The whole address is bounded by
// brain.MaxEmailBytes, the one limit every layer applies.
const MaxEmailLocalPart = 64

// ErrBadEmail is wrapped by every refusal of CanonicalEmail.
var ErrBadEmail = errors.New("auth: not an acceptable email address")

// CanonicalEmail is the one email rule of Brainstem, applied wherever an
// address enters: the gateway's SSO verifier, shard-token minting and
// checking, wing policies, authorship of writes, the stdio mode's --email
// and the development IdP. It returns the canonical form of s or an error
// wrapping ErrBadEmail:
//
//   - ASCII white space (space, \t, \n, \v, \f, \r) around the address is
//     trimmed, nothing else;
//   - the address must be ASCII: no normalisation is attempted, so look-alike
//     and case-folding characters (the Kelvin sign K, the long s ſ,
//     full-width letters, Cyrillic а) are refused rather than folded onto
//     another person's address; an internationalised domain must be sent in
//     its xn-- (A-label) form;
//   - control characters (below 0x20, and 0x7f) are refused anywhere;
//   - A-Z are lowercased, and nothing else changes;
//   - exactly one '@', a local part of 1 to 64 bytes of letters, digits, '.'
//     and !#$%&'*+/=?^_`{|}~- (no quoted forms, no comments), and a domain
//     of dot-separated, non-empty labels of letters, digits and '-';
//   - at most brain.MaxEmailBytes (254) bytes in all.
//
// The rule is deliberately narrower than RFC 5322: every address a company
// IdP issues to a person fits it, and what does not fit is refused rather
// than guessed at.
func CanonicalEmail(s string) (string, error) {
	s = trimASCIISpace(s)
	if s == "" {
		return "", fmt.Errorf("%w: empty", ErrBadEmail)
	}
	if len(s) > brain.MaxEmailBytes {
		return "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadEmail, len(s), brain.MaxEmailBytes)
	}
	at := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return "", fmt.Errorf("%w: control character %#02x at byte %d", ErrBadEmail, c, i)
		case c >= 0x80:
			return "", fmt.Errorf("%w: non-ASCII byte at %d (internationalised domains must be sent in their xn-- form)", ErrBadEmail, i)
		case c == '@':
			if at >= 0 {
				return "", fmt.Errorf("%w: more than one '@'", ErrBadEmail)
			}
			at = i
		case 'A' <= c && c <= 'Z': // lowered at the end
		case at < 0 && !localByte(c):
			return "", fmt.Errorf("%w: %q is not allowed in the part before '@'", ErrBadEmail, c)
		case at >= 0 && !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.'):
			return "", fmt.Errorf("%w: %q is not allowed in the domain", ErrBadEmail, c)
		}
	}
	switch {
	case at < 0:
		return "", fmt.Errorf("%w: no '@'", ErrBadEmail)
	case at == 0:
		return "", fmt.Errorf("%w: nothing before '@'", ErrBadEmail)
	case at > MaxEmailLocalPart:
		return "", fmt.Errorf("%w: %d bytes before '@', the limit is %d", ErrBadEmail, at, MaxEmailLocalPart)
	case at == len(s)-1:
		return "", fmt.Errorf("%w: no domain after '@'", ErrBadEmail)
	}
	for label := range strings.SplitSeq(s[at+1:], ".") {
		if label == "" {
			return "", fmt.Errorf("%w: the domain has an empty label (a leading, trailing or doubled '.')", ErrBadEmail)
		}
	}
	return strings.ToLower(s), nil // s is ASCII: only A-Z change
}

func trimASCIISpace(s string) string { return strings.Trim(s, " \t\n\v\f\r") }

// localByte reports whether c may appear before the '@' (RFC 5322 atext and
// '.', lowercase letters; uppercase is handled by the caller).
func localByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte(".!#$%&'*+/=?^_`{|}~-", c) >= 0
}

// GroupSet is the canonical form of a caller's groups: sorted, without
// duplicates or empty names. Two tokens whose groups claims hold the same
// names in any order have the same GroupSet.
func GroupSet(groups []string) []string {
	out := slices.Clone(groups)
	out = slices.DeleteFunc(out, func(g string) bool { return g == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// GroupsDigest is a SHA-256 digest of the canonical group set of groups
// (GroupSet): equal for the same names in any order or multiplicity,
// different (barring a SHA-256 collision) for different sets. No groups
// digest to the zero value.
func GroupsDigest(groups []string) [sha256.Size]byte {
	set := groups
	for i, g := range groups {
		if g == "" || i > 0 && groups[i-1] >= g {
			set = GroupSet(groups)
			break
		}
	}
	if len(set) == 0 {
		return [sha256.Size]byte{}
	}
	var stack [512]byte
	buf := stack[:0]
	for _, g := range set {
		// Length-prefixed, so no two sets encode alike.
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(g)))
		buf = append(buf, g...)
	}
	return sha256.Sum256(buf)
}
