// Package layout is the filesystem side of a brain's names: it joins a
// brain-relative path onto the brain root without ever leaving the wing
// (Resolve), tells note, inbox and session files by their names (NoteFile,
// InboxFile, SessionFile, Hidden), derives slugs from titles (Slugify) and
// reads the wikilinks of a body (Links, LinkID). It never creates, reads or
// writes files.
//
// The naming rules themselves (wings, halls, slugs, inbox names, sessions,
// note ids and path forms) are the contract package brain's, shared with
// the gateway; this package applies them and adds what only a shard needs.
//
// # Layout
//
//	wiki/<wing>/<hall>/<slug>.md     curated notes
//	wiki/<wing>/_index.md            generated table of contents
//	inbox/<wing>/<name>.md           unreviewed notes
//	sessions/<wing>/<session>.jsonl  append-only session logs
//
// # Resolve
//
// Resolve checks a brain-relative slash path with brain.ValidPath and joins
// it onto the brain root. It refuses any symbolic link below the root,
// wherever it points (the root itself may be a symlink): checking only links
// that point outside the wing would be racy and subtle, and a brain has no
// reason to hold links. The check is made when Resolve runs; a component
// swapped for a link afterwards is not detected, so callers that need race
// freedom should also open files through an os.Root of the wing directory.
//
// # Errors
//
// Every refusal is a *brain.Error (code invalid_argument, a message safe to
// show that names brain-relative paths only) wrapping one of
// brain.ErrInvalidName, brain.ErrInvalidHall, brain.ErrEscape or
// brain.ErrTooLong. Slugify is the only function that transforms input; it
// is for titles, not for ids.
package layout
