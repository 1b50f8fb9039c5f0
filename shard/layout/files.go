package layout

import (
	"fmt"
	"strings"
)

// Hidden reports whether a directory entry is hidden: its name starts with
// '.'. Hidden entries are not part of a brain (.git, .gitkeep, editors' swap
// files, a shard's temporary files and state) and are never read as notes.
func Hidden(name string) bool { return strings.HasPrefix(name, ".") }

// NoteFile returns the slug of the file name of a curated note,
// "<slug>.md", or an error wrapping ErrInvalidName that says why a file of
// that name in a hall directory is not a note.
func NoteFile(name string) (string, error) {
	slug, ok := strings.CutSuffix(name, NoteExt)
	if !ok {
		return "", reject(ErrInvalidName, "%s is not a note: a note is a file <slug>%s", preview(name), NoteExt)
	}
	if err := ValidSlug(slug); err != nil {
		return "", fmt.Errorf("not a note name: %w", err)
	}
	return slug, nil
}

// InboxFile returns the name of an inbox note from its file name
// "<name>.md", or an error wrapping ErrInvalidName.
func InboxFile(name string) (string, error) {
	n, ok := strings.CutSuffix(name, NoteExt)
	if !ok {
		return "", reject(ErrInvalidName, "%s is not an inbox note: an inbox note is a file <name>%s", preview(name), NoteExt)
	}
	if err := ValidInboxName(n); err != nil {
		return "", fmt.Errorf("not an inbox note name: %w", err)
	}
	return n, nil
}

// SessionFile returns the session of a session log's file name
// "<session>.jsonl", or an error wrapping ErrInvalidName.
func SessionFile(name string) (string, error) {
	n, ok := strings.CutSuffix(name, SessionExt)
	if !ok {
		return "", reject(ErrInvalidName, "%s is not a session log: a session log is a file <session>%s", preview(name), SessionExt)
	}
	if err := ValidSession(n); err != nil {
		return "", fmt.Errorf("not a session log name: %w", err)
	}
	return n, nil
}
