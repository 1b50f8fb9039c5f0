package brain

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors of the naming rules. Every rejection is an *Error wrapping
// at least one of them; name and segment length violations wrap both
// ErrInvalidName and ErrTooLong.
var (
	// ErrInvalidName reports a wing, slug, inbox name, session or path
	// segment that breaks the naming rules.
	ErrInvalidName = errors.New("brain: invalid name")
	// ErrInvalidHall reports a hall that is not one of Halls().
	ErrInvalidHall = errors.New("brain: invalid hall")
	// ErrEscape reports a path that would leave its wing: "..", absolute
	// paths, backslashes, a missing top directory or wing (and, from
	// shard/layout's Resolve, a symbolic link).
	ErrEscape = errors.New("brain: path escapes its wing")
	// ErrTooLong reports a name, segment or path over its length limit.
	ErrTooLong = errors.New("brain: too long")
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
	MaxWingLen    = 63 // a DNS label: wings name Kubernetes objects and TLS server names
	MaxSlugLen    = 96
	MaxSessionLen = 128
	MaxSegmentLen = 255
	MaxPathLen    = 1024
)

// The rules, as error messages and the documentation (docs/tools.md,
// generated) state them; none may be a reserved device name either
// (ReservedNames).
const (
	WingRule      = "1 to 63 characters from a-z, 0-9 and '-', starting and ending with a letter or digit"
	SlugRule      = "1 to 96 characters from a-z, 0-9 and '-', with no leading, trailing or doubled '-'"
	SessionRule   = "1 to 128 characters from A-Z, a-z, 0-9, '.', '_' and '-', not starting with '.'"
	SegmentRule   = "1 to 255 bytes from A-Z, a-z, 0-9, '.', '_' and '-', not ending in '.'"
	ReservedNames = "con, prn, aux, nul, com0-9, lpt0-9"
	reservedMsg   = "a reserved device name (" + ReservedNames + ")"
)

// Halls returns the valid halls of a wing, in their canonical order. The
// slice is a fresh copy on every call.
func Halls() []string {
	return []string{"facts", "decisions", "failures", "hypotheses", "sources"}
}

// HallList is Halls() joined for a message: "facts, decisions, …".
const HallList = "facts, decisions, failures, hypotheses, sources"

func reject(sentinel error, format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...), Err: sentinel}
}

func tooLong(what, s string, limit int) error {
	return reject(errors.Join(ErrInvalidName, ErrTooLong), "%s is %d bytes, the limit is %d (%s)", what, len(s), limit, Preview(s))
}

// Preview quotes s for an error message, cut to a readable length.
func Preview(s string) string {
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
	return len(l) == 4 && (l[:3] == "com" || l[:3] == "lpt") && l[3] >= '0' && l[3] <= '9'
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isPortable(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// badByte describes the byte at i of s for an error message.
func badByte(s string, i int) string {
	return fmt.Sprintf("%q at byte %d of %s", s[i], i, Preview(s))
}

// ValidWing checks a wing name (WingRule): 1 to 63 characters from
// [a-z0-9-], starting and ending with a letter or digit, not a reserved
// device name.
func ValidWing(s string) error {
	if err := checkBytes("wing", s, MaxWingLen, WingRule, func(c byte) bool { return isLowerAlnum(c) || c == '-' }); err != nil {
		return err
	}
	if s[0] == '-' {
		return reject(ErrInvalidName, "wing %s starts with '-': a wing is %s", Preview(s), WingRule)
	}
	if s[len(s)-1] == '-' {
		return reject(ErrInvalidName, "wing %s ends with '-': a wing is %s", Preview(s), WingRule)
	}
	if reservedDevice(s) {
		return reject(ErrInvalidName, "wing %s is %s", Preview(s), reservedMsg)
	}
	return nil
}

// checkBytes is where the wing and session rules start: s is not empty,
// at most max bytes, and every byte is one ok allows.
func checkBytes(what, s string, max int, rule string, ok func(byte) bool) error {
	if s == "" {
		return reject(ErrInvalidName, "empty %s: a %s is %s", what, what, rule)
	}
	if len(s) > max {
		return tooLong(what, s, max)
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return reject(ErrInvalidName, "%s has %s: a %s is %s", what, badByte(s, i), what, rule)
		}
	}
	return nil
}

// ValidHall checks that s is one of Halls().
func ValidHall(s string) error {
	switch s {
	case "facts", "decisions", "failures", "hypotheses", "sources":
		return nil
	}
	return reject(ErrInvalidHall, "unknown hall %s: valid halls are %s", Preview(s), HallList)
}

// ValidSlug checks a note slug: 1 to 96 characters from [a-z0-9-], no
// leading, trailing or doubled '-', not "_index" nor a reserved device name.
func ValidSlug(s string) error { return validSlugLike("slug", s) }

// ValidInboxName checks the name of an inbox note (the file is <name>.md);
// the rule is the slug rule.
func ValidInboxName(s string) error { return validSlugLike("inbox name", s) }

func validSlugLike(what, s string) error {
	rule := "a " + what + " is " + SlugRule
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
				return reject(ErrInvalidName, "%s %s has a leading, trailing or doubled '-': %s", what, Preview(s), rule)
			}
		default:
			return reject(ErrInvalidName, "%s has %s: %s", what, badByte(s, i), rule)
		}
	}
	if reservedDevice(s) {
		return reject(ErrInvalidName, "%s %q is %s", what, s, reservedMsg)
	}
	return nil
}

// ValidSession checks a session id (the file is <session>.jsonl): 1 to 128
// characters from [A-Za-z0-9._-], not "." or "..", no leading '.', not a
// reserved device name in any case.
func ValidSession(s string) error {
	if err := checkBytes("session", s, MaxSessionLen, SessionRule, isPortable); err != nil {
		return err
	}
	if s[0] == '.' {
		return reject(ErrInvalidName, "session %s starts with '.': a session is %s", Preview(s), SessionRule)
	}
	if reservedDevice(s) {
		return reject(ErrInvalidName, "session %s is %s", Preview(s), reservedMsg)
	}
	return nil
}

// ID identifies a curated note: wiki/<Wing>/<Hall>/<Slug>.md.
type ID struct {
	Wing, Hall, Slug string
}

// VersionRule is what a version id is: the git commit that made the
// version, as brain_history lists it.
const VersionRule = "40 hexadecimal digits, a version id as brain_history lists it"

// ValidVersion checks a version id.
func ValidVersion(s string) error {
	if len(s) != 40 {
		return reject(ErrInvalidName, "version %s is not a version id: a version is %s", Preview(s), VersionRule)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return reject(ErrInvalidName, "version %s has %s: a version is %s", Preview(s), badByte(s, i), VersionRule)
		}
	}
	return nil
}

// ParseID parses and validates a note id "wing/hall/slug". It also accepts
// the note's brain-relative path "wiki/wing/hall/slug.md" (with or without
// ".md") and "wing/hall/slug.md". Nothing is normalised: no leading '/',
// "./", backslashes or case folding.
func ParseID(s string) (ID, error) {
	if len(s) > MaxPathLen {
		return ID{}, reject(errors.Join(ErrInvalidName, ErrTooLong), "note id is %d bytes, the limit is %d", len(s), MaxPathLen)
	}
	parts := strings.Split(s, "/")
	if strings.HasPrefix(s, "/") || strings.Contains(s, `\`) || slices.Contains(parts, "..") || slices.Contains(parts, ".") {
		return ID{}, reject(ErrEscape, "note id %s is not a plain id (no leading '/', '\\', '.' or '..'): use wing/hall/slug or wiki/wing/hall/slug.md", Preview(s))
	}
	if len(parts) == 4 && parts[0] == TopWiki {
		parts = parts[1:]
	}
	if len(parts) != 3 {
		return ID{}, reject(ErrInvalidName, "note id %s must be wing/hall/slug (or the path wiki/wing/hall/slug.md)", Preview(s))
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
// other path builders it does not validate; use ValidPath for that.
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

// ParseInboxPath parses and validates the path of an inbox note,
// "inbox/<wing>/<name>.md". Nothing is normalised.
func ParseInboxPath(p string) (wing, name string, err error) {
	rest, isInbox := strings.CutPrefix(p, TopInbox+"/")
	wing, file, hasName := strings.Cut(rest, "/")
	name, isMD := strings.CutSuffix(file, NoteExt)
	if !isInbox || !hasName || !isMD {
		return "", "", reject(ErrInvalidName, "inbox path %s must be inbox/<wing>/<name>.md", Preview(p))
	}
	if err := ValidWing(wing); err != nil {
		return "", "", err
	}
	if err := ValidInboxName(name); err != nil {
		return "", "", err
	}
	return wing, name, nil
}

// RefWing returns the wing a note reference names, the way a shard reads
// the reference: an inbox path "inbox/<wing>/<name>.md", a note id
// "<wing>/<hall>/<slug>" (ParseID), or else a path under wiki/ naming its
// wing second: "wiki/<wing>/<hall>/<slug>.md" (with or without ".md"), and
// "wiki/<wing>/<file>" such as "wiki/platform/_index.md". Three segments
// under wiki/ are ambiguous: "wiki/facts/x" is a note id of a wing called
// "wiki" (ParseID reads it so), and it is read as one exactly when ParseID
// accepts it; otherwise ("wiki/platform/_index.md": "platform" is no hall,
// "_index" no slug) it is a path of the wing it names. isPath reports that
// ref is written as a path: it starts with "wiki/" or "inbox/". RefWing
// validates nothing else and it skips one leading '/': a gateway routes a
// call with it, and the wing's shard then refuses a malformed reference
// with the exact rule it breaks. The wing is "" when the reference names
// none ("", "wiki/", "inbox/").
func RefWing(ref string) (wing string, isPath bool) {
	ref = strings.TrimPrefix(ref, "/")
	first, rest, found := strings.Cut(ref, "/")
	if !found || first != TopWiki && first != TopInbox {
		return first, false
	}
	if first == TopWiki && strings.Count(rest, "/") == 1 {
		if _, err := ParseID(ref); err == nil {
			return TopWiki, true // the id wiki/<hall>/<slug>
		}
	}
	wing, _, _ = strings.Cut(rest, "/")
	return wing, true
}

// ValidPath checks a brain-relative slash path without touching the disk and
// returns its top directory and wing (see the package documentation).
func ValidPath(rel string) (top, wing string, err error) {
	if rel == "" {
		return "", "", reject(ErrInvalidName, "empty path: want <top>/<wing>/..., top being wiki, inbox or sessions")
	}
	if len(rel) > MaxPathLen {
		return "", "", reject(ErrTooLong, "path is %d bytes, the limit is %d", len(rel), MaxPathLen)
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return "", "", reject(ErrInvalidName, "path %s contains a NUL byte", Preview(rel))
	}
	if strings.IndexByte(rel, '\\') >= 0 {
		return "", "", reject(ErrEscape, "path %s contains a backslash: use '/' as the only separator", Preview(rel))
	}
	if rel[0] == '/' {
		return "", "", reject(ErrEscape, "path %s is absolute: want a brain-relative path such as wiki/<wing>/<hall>/<slug>.md", Preview(rel))
	}
	segs := strings.Split(rel, "/")
	for _, seg := range segs {
		if seg == "." || seg == ".." {
			return "", "", reject(ErrEscape, "path %s contains %q: dot segments are not allowed", Preview(rel), seg)
		}
	}
	top = segs[0]
	switch top {
	case TopWiki, TopInbox, TopSessions:
	default:
		return "", "", reject(ErrEscape, "path %s does not start with wiki/, inbox/ or sessions/", Preview(rel))
	}
	if len(segs) < 2 {
		return "", "", reject(ErrEscape, "path %s names no wing: want %s/<wing>/...", Preview(rel), top)
	}
	wing = segs[1]
	if err := ValidWing(wing); err != nil {
		return "", "", err
	}
	for _, seg := range segs[2:] {
		if err := validSegment(seg); err != nil {
			return "", "", err
		}
	}
	return top, wing, nil
}

// validSegment checks one path segment below the wing directory.
func validSegment(seg string) error {
	if seg == "" {
		return reject(ErrInvalidName, "empty path segment (doubled or trailing '/'): a path segment is %s", SegmentRule)
	}
	if len(seg) > MaxSegmentLen {
		return reject(errors.Join(ErrInvalidName, ErrTooLong), "path segment is %d bytes, the limit is %d (%s)", len(seg), MaxSegmentLen, Preview(seg))
	}
	for i := 0; i < len(seg); i++ {
		if !isPortable(seg[i]) {
			return reject(ErrInvalidName, "path segment has %s: a path segment is %s", badByte(seg, i), SegmentRule)
		}
	}
	if seg[len(seg)-1] == '.' {
		return reject(ErrInvalidName, "path segment %s ends in '.': a path segment is %s", Preview(seg), SegmentRule)
	}
	base, _, _ := strings.Cut(seg, ".")
	if reservedDevice(base) {
		return reject(ErrInvalidName, "path segment %s is %s", Preview(seg), reservedMsg)
	}
	return nil
}
