package layout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors. Every rejection by this package wraps at least one of
// them; name and segment length violations wrap both ErrInvalidName and
// ErrTooLong. (Resolve also returns unexpected I/O errors from lstat, wrapped
// as they are.)
var (
	// ErrInvalidName reports a wing, slug, inbox name, session or path
	// segment that breaks the naming rules.
	ErrInvalidName = errors.New("layout: invalid name")
	// ErrInvalidHall reports a hall that is not one of Halls().
	ErrInvalidHall = errors.New("layout: invalid hall")
	// ErrEscape reports a path that would leave its wing: "..", absolute
	// paths, backslashes, a missing top directory or wing, or a symlink.
	ErrEscape = errors.New("layout: path escapes its wing")
	// ErrTooLong reports a name, segment or path over its length limit.
	ErrTooLong = errors.New("layout: too long")
)

// Top-level directories of a brain.
const (
	TopWiki     = "wiki"
	TopInbox    = "inbox"
	TopSessions = "sessions"
)

// File names and extensions.
const (
	// IndexSlug is the base name (without ".md") of a wing's generated table
	// of contents; it is reserved and never a valid slug.
	IndexSlug = "_index"
	// NoteExt is the extension of notes, inbox notes and the index.
	NoteExt = ".md"
	// SessionExt is the extension of session logs.
	SessionExt = ".jsonl"
)

// Length limits, in bytes.
const (
	MaxWingLen    = 64
	MaxSlugLen    = 96
	MaxSessionLen = 128
	MaxSegmentLen = 255
	MaxPathLen    = 1024
)

const hallList = "facts, decisions, failures, hypotheses, sources"

// Halls returns the valid halls of a wing, in their canonical order. The
// slice is a fresh copy on every call.
func Halls() []string {
	return []string{"facts", "decisions", "failures", "hypotheses", "sources"}
}

// ruleError is a rejection: a message naming the broken rule plus the
// sentinels it wraps.
type ruleError struct {
	msg  string
	errs []error
}

func (e *ruleError) Error() string   { return "layout: " + e.msg }
func (e *ruleError) Unwrap() []error { return e.errs }

func reject(sentinel error, format string, args ...any) error {
	return &ruleError{msg: fmt.Sprintf(format, args...), errs: []error{sentinel}}
}

func tooLong(what, s string, limit int) error {
	return &ruleError{
		msg:  fmt.Sprintf("%s is %d bytes, the limit is %d (%s)", what, len(s), limit, preview(s)),
		errs: []error{ErrInvalidName, ErrTooLong},
	}
}

// preview quotes s for an error message, cut to a readable length.
func preview(s string) string {
	const max = 40
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// reservedDevice reports whether s (compared case-insensitively) is a DOS
// device name, which cannot be used as a file name on Windows, with or
// without an extension.
func reservedDevice(s string) bool {
	if len(s) != 3 && len(s) != 4 {
		return false
	}
	l := strings.ToLower(s)
	switch l {
	case "con", "prn", "aux", "nul":
		return true
	}
	if len(l) == 4 && (l[:3] == "com" || l[:3] == "lpt") && l[3] >= '0' && l[3] <= '9' {
		return true
	}
	return false
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isPortable(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// badByte describes the byte at i of s for an error message.
func badByte(s string, i int) string {
	return fmt.Sprintf("%q at byte %d of %s", s[i], i, preview(s))
}

// ValidWing checks a wing name: 1 to 64 characters from [a-z0-9-], starting
// with a letter or digit, not a reserved device name.
func ValidWing(s string) error {
	const rule = "a wing is 1 to 64 characters from a-z, 0-9 and '-', starting with a letter or digit"
	if s == "" {
		return reject(ErrInvalidName, "empty wing: %s", rule)
	}
	if len(s) > MaxWingLen {
		return tooLong("wing", s, MaxWingLen)
	}
	for i := 0; i < len(s); i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return reject(ErrInvalidName, "wing has %s: %s", badByte(s, i), rule)
		}
	}
	if s[0] == '-' {
		return reject(ErrInvalidName, "wing %s starts with '-': %s", preview(s), rule)
	}
	if reservedDevice(s) {
		return reject(ErrInvalidName, "wing %s is a reserved device name (con, prn, aux, nul, com0-9, lpt0-9)", preview(s))
	}
	return nil
}

// ValidHall checks that s is one of Halls().
func ValidHall(s string) error {
	switch s {
	case "facts", "decisions", "failures", "hypotheses", "sources":
		return nil
	}
	return reject(ErrInvalidHall, "unknown hall %s: valid halls are %s", preview(s), hallList)
}

// ValidSlug checks a note slug: 1 to 96 characters from [a-z0-9-], no
// leading, trailing or doubled '-', not "_index" nor a reserved device name.
func ValidSlug(s string) error { return validSlugLike("slug", s) }

// ValidInboxName checks the name of an inbox note (the file is <name>.md);
// the rule is the slug rule.
func ValidInboxName(s string) error { return validSlugLike("inbox name", s) }

func validSlugLike(what, s string) error {
	rule := "a " + what + " is 1 to 96 characters from a-z, 0-9 and '-', with no leading, trailing or doubled '-'"
	if s == "" {
		return reject(ErrInvalidName, "empty %s: %s", what, rule)
	}
	if len(s) > MaxSlugLen {
		return tooLong(what, s, MaxSlugLen)
	}
	if s == IndexSlug {
		return reject(ErrInvalidName, "%s %q is reserved for the wing's generated index", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLowerAlnum(c):
		case c == '-':
			if i == 0 || i == len(s)-1 || s[i-1] == '-' {
				return reject(ErrInvalidName, "%s %s has a leading, trailing or doubled '-': %s", what, preview(s), rule)
			}
		default:
			return reject(ErrInvalidName, "%s has %s: %s", what, badByte(s, i), rule)
		}
	}
	if reservedDevice(s) {
		return reject(ErrInvalidName, "%s %q is a reserved device name (con, prn, aux, nul, com0-9, lpt0-9)", what, s)
	}
	return nil
}

// ValidSession checks a session id (the file is <session>.jsonl): 1 to 128
// characters from [A-Za-z0-9._-], not "." or "..", no leading '.', not a
// reserved device name in any case.
func ValidSession(s string) error {
	const rule = "a session is 1 to 128 characters from A-Z, a-z, 0-9, '.', '_' and '-', not starting with '.'"
	if s == "" {
		return reject(ErrInvalidName, "empty session: %s", rule)
	}
	if len(s) > MaxSessionLen {
		return tooLong("session", s, MaxSessionLen)
	}
	for i := 0; i < len(s); i++ {
		if !isPortable(s[i]) {
			return reject(ErrInvalidName, "session has %s: %s", badByte(s, i), rule)
		}
	}
	if s[0] == '.' {
		return reject(ErrInvalidName, "session %s starts with '.': %s", preview(s), rule)
	}
	if reservedDevice(s) {
		return reject(ErrInvalidName, "session %s is a reserved device name (con, prn, aux, nul, com0-9, lpt0-9)", preview(s))
	}
	return nil
}

// ID identifies a curated note: wiki/<Wing>/<Hall>/<Slug>.md.
type ID struct {
	Wing, Hall, Slug string
}

// ParseID parses and validates a note id "wing/hall/slug". It also accepts
// the note's brain-relative path "wiki/wing/hall/slug.md" (with or without
// ".md") and "wing/hall/slug.md". Nothing is normalised: no leading '/',
// "./", backslashes or case folding.
func ParseID(s string) (ID, error) {
	if len(s) > MaxPathLen {
		return ID{}, &ruleError{
			msg:  fmt.Sprintf("note id is %d bytes, the limit is %d", len(s), MaxPathLen),
			errs: []error{ErrInvalidName, ErrTooLong},
		}
	}
	parts := strings.Split(s, "/")
	if strings.HasPrefix(s, "/") || strings.Contains(s, `\`) || slices.Contains(parts, "..") || slices.Contains(parts, ".") {
		return ID{}, reject(ErrEscape, "note id %s is not a plain id (no leading '/', '\\', '.' or '..'): use wing/hall/slug or wiki/wing/hall/slug.md", preview(s))
	}
	if len(parts) == 4 && parts[0] == TopWiki {
		parts = parts[1:]
	}
	if len(parts) != 3 {
		return ID{}, reject(ErrInvalidName, "note id %s must be wing/hall/slug (or the path wiki/wing/hall/slug.md)", preview(s))
	}
	id := ID{Wing: parts[0], Hall: parts[1], Slug: strings.TrimSuffix(parts[2], NoteExt)}
	if err := id.Validate(); err != nil {
		return ID{}, err
	}
	return id, nil
}

// Validate checks the wing, hall and slug of id.
func (id ID) Validate() error {
	if err := ValidWing(id.Wing); err != nil {
		return err
	}
	if err := ValidHall(id.Hall); err != nil {
		return err
	}
	return ValidSlug(id.Slug)
}

// String returns "wing/hall/slug".
func (id ID) String() string { return id.Wing + "/" + id.Hall + "/" + id.Slug }

// Path returns the brain-relative slash path "wiki/wing/hall/slug.md".
func (id ID) Path() string { return TopWiki + "/" + id.String() + NoteExt }

// WingDir returns the brain-relative slash path "<top>/<wing>". Like the
// other path builders it does not validate; use Resolve for that.
func WingDir(top, wing string) string { return top + "/" + wing }

// HallDir returns "wiki/<wing>/<hall>".
func HallDir(wing, hall string) string { return TopWiki + "/" + wing + "/" + hall }

// InboxPath returns "inbox/<wing>/<name>.md".
func InboxPath(wing, name string) string { return TopInbox + "/" + wing + "/" + name + NoteExt }

// SessionPath returns "sessions/<wing>/<session>.jsonl".
func SessionPath(wing, session string) string {
	return TopSessions + "/" + wing + "/" + session + SessionExt
}

// IndexPath returns "wiki/<wing>/_index.md".
func IndexPath(wing string) string { return TopWiki + "/" + wing + "/" + IndexSlug + NoteExt }
