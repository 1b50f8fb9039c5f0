package layout

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/brainstem/brainstem/brain"
)

// Hidden reports whether a directory entry is hidden: its name starts with
// '.'. Hidden entries are not part of a brain (.git, .gitkeep, editors' swap
// files, a shard's temporary files and state) and are never read as notes.
func Hidden(name string) bool { return strings.HasPrefix(name, ".") }

// NoteFile returns the slug of the file name of a curated note,
// "<slug>.md", or a *brain.Error wrapping brain.ErrInvalidName that says why a file of
// that name in a hall directory is not a note.
func NoteFile(name string) (string, error) {
	return fileStem(name, brain.NoteExt, "a note", "slug", brain.ValidSlug)
}

// InboxFile returns the name of an inbox note from its file name
// "<name>.md", or a *brain.Error wrapping brain.ErrInvalidName.
func InboxFile(name string) (string, error) {
	return fileStem(name, brain.NoteExt, "an inbox note", "name", brain.ValidInboxName)
}

// SessionFile returns the session of a session log's file name
// "<session>.jsonl", or a *brain.Error wrapping brain.ErrInvalidName.
func SessionFile(name string) (string, error) {
	return fileStem(name, brain.SessionExt, "a session log", "session", brain.ValidSession)
}

// fileStem is name without its extension ext, checked by valid: the file
// name of kind (a note, …), "<stem>ext".
func fileStem(name, ext, kind, stem string, valid func(string) error) (string, error) {
	s, ok := strings.CutSuffix(name, ext)
	if !ok {
		return "", invalidName("%s is not %s: %s is a file <%s>%s", brain.Preview(name), kind, kind, stem, ext)
	}
	if err := valid(s); err != nil {
		return "", named("not "+kind+" name", err)
	}
	return s, nil
}

// wikilink matches [[target]], [[target|alias]] and [[target#anchor]].
var wikilink = regexp.MustCompile(`\[\[([^\[\]|#\r\n]+)(?:[|#][^\[\]\r\n]*)?\]\]`)

// Link is a wikilink of a note body: its text as written ("[[…]]") and its
// target, trimmed, without alias, anchor or ".md".
type Link struct {
	Text, Target string
}

// Links returns the wikilinks of a markdown body in order of appearance,
// valid or not. A target "wing/hall/slug" names a note of any wing,
// "hall/slug" a note of the linking note's wing (see LinkID).
func Links(body string) []Link {
	if !strings.Contains(body, "[[") {
		return nil
	}
	var out []Link
	for _, m := range wikilink.FindAllStringSubmatch(body, -1) {
		out = append(out, Link{Text: m[0], Target: strings.TrimSuffix(strings.TrimSpace(m[1]), brain.NoteExt)})
	}
	return out
}

// LinkID resolves a link target written in a note of wing to a note id.
func LinkID(wing, target string) (brain.ID, error) {
	if strings.Count(target, "/") == 1 {
		target = wing + "/" + target
	}
	return brain.ParseID(target)
}

// invalidName is a refusal of a file name: a code and a message safe to
// show, wrapping brain.ErrInvalidName.
func invalidName(format string, args ...any) error {
	return brain.Wrap(brain.ErrInvalidName, brain.CodeInvalidArgument, format, args...)
}

// named puts what a file name is not in front of the message of err, a
// refusal of package brain's naming rules.
func named(what string, err error) error {
	if e, ok := brain.As(err); ok {
		return brain.Wrap(err, e.Code, "%s: %s", what, e.Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Tracked reports whether the brain-relative path rel is in wing's
// history: a note file wiki/<wing>/<hall>/<slug>.md or an inbox note
// inbox/<wing>/<name>.md (never _index.md, never a session log).
func Tracked(rel, wing string) bool {
	top, w, err := brain.ValidPath(rel)
	if err != nil || w != wing {
		return false
	}
	parts := strings.Split(rel, "/")
	switch {
	case top == brain.TopWiki && len(parts) == 4:
		_, err := NoteFile(parts[3])
		return err == nil && brain.ValidHall(parts[2]) == nil
	case top == brain.TopInbox && len(parts) == 3:
		_, err := InboxFile(parts[2])
		return err == nil
	}
	return false
}

// RewriteLinks returns body with every wikilink that a note of wing
// resolves to from pointing at to instead, written as it was (the wing
// kept only when the link named it, alias and anchor kept), and how many
// links it rewrote.
func RewriteLinks(body, wing string, from, to brain.ID) (string, int) {
	if !strings.Contains(body, "[[") {
		return body, 0
	}
	n := 0
	out := wikilink.ReplaceAllStringFunc(body, func(text string) string {
		m := wikilink.FindStringSubmatch(text)
		target := strings.TrimSuffix(strings.TrimSpace(m[1]), brain.NoteExt)
		id, err := LinkID(wing, target)
		if err != nil || id != from {
			return text
		}
		n++
		repl := to.String()
		if strings.Count(target, "/") == 1 && to.Wing == wing {
			repl = to.Hall + "/" + to.Slug
		}
		return "[[" + repl + text[2+len(m[1]):]
	})
	return out, n
}
