package brain

import (
	"errors"
	"fmt"
	"strings"
)

// A curated note is also an MCP resource, named by the URI
// brain://<wing>/<hall>/<slug>: the note's id after the scheme, nothing
// else (no query, fragment, percent-encoding, ".md" or "wiki/"), so that
// one note has exactly one URI.
const (
	// URIScheme is the prefix of every note URI.
	URIScheme = "brain://"
	// URITemplate is the RFC 6570 template of the note URIs.
	URITemplate = URIScheme + "{wing}/{hall}/{slug}"
	// MaxURILen bounds a note URI in bytes: the scheme and the longest id.
	MaxURILen = len(URIScheme) + MaxPathLen
)

// ErrBadURI reports a string that is not a note URI. Every refusal of
// ParseNoteURI wraps it (and, for a bad wing, hall or slug, the naming
// rule's own sentinel).
var ErrBadURI = errors.New("brain: not a note URI")

// ParseNoteURI parses a note URI brain://<wing>/<hall>/<slug> and
// validates its parts with the naming rules. A refusal is an *Error with
// CodeInvalidArgument saying what is wrong.
func ParseNoteURI(s string) (ID, error) {
	if len(s) > MaxURILen {
		return ID{}, reject(errors.Join(ErrBadURI, ErrTooLong), "resource URI is %d bytes, the limit is %d", len(s), MaxURILen)
	}
	rest, ok := strings.CutPrefix(s, URIScheme)
	if !ok {
		return ID{}, badURI(nil, "resource URI %s is not a note URI: note URIs are %s", Preview(s), URITemplate)
	}
	if i := strings.IndexAny(rest, "?#%\\"); i >= 0 {
		return ID{}, badURI(nil, "resource URI %s has %q: a note URI is %s with nothing else (no query, fragment or escape)", Preview(s), rest[i], URITemplate)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return ID{}, badURI(nil, "resource URI %s has %d path segments: a note URI is %s", Preview(s), len(parts), URITemplate)
	}
	id := ID{Wing: parts[0], Hall: parts[1], Slug: parts[2]}
	if err := id.Validate(); err != nil {
		return ID{}, badURI(err, "resource URI %s: %s", Preview(s), err.Error())
	}
	return id, nil
}

func badURI(cause error, format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...), Err: errors.Join(ErrBadURI, cause)}
}
