// Package layout names the files of a brain and keeps every path inside its
// wing. It is pure string validation plus one filesystem check (Resolve); it
// never creates, reads or writes files.
//
// # Layout
//
//	wiki/<wing>/<hall>/<slug>.md     curated notes
//	wiki/<wing>/_index.md            generated table of contents
//	inbox/<wing>/<name>.md           unreviewed notes
//	sessions/<wing>/<session>.jsonl  append-only session logs
//
// A note id is "<wing>/<hall>/<slug>": the brain-relative path of the note
// without the "wiki/" prefix and the ".md" suffix. ParseID also accepts the
// note's path "wiki/<wing>/<hall>/<slug>.md" (and "<wing>/<hall>/<slug>.md").
//
// # Naming rules
//
//   - wing: 1 to 64 characters from [a-z0-9-], starting with a letter or a
//     digit; not a reserved device name (con, prn, aux, nul, com0-com9,
//     lpt0-lpt9).
//   - hall: exactly one of facts, decisions, failures, hypotheses, sources.
//   - slug (and inbox name, the file being <name>.md): 1 to 96 characters
//     from [a-z0-9-]; no leading, trailing or doubled '-'; not "_index" and
//     not a reserved device name.
//   - session: 1 to 128 characters from [A-Za-z0-9._-]; not "." or "..", no
//     leading '.', and not a reserved device name in any letter case
//     (CON.jsonl is unusable on Windows checkouts).
//
// Names are checked byte by byte: upper case (except in session names),
// spaces, '%', '\', '/', NUL, control characters and every non-ASCII
// character (including look-alikes of '.', '/' and '-') are rejected, never
// normalised. Slugify is the only function that transforms input; it is for
// titles, not for ids.
//
// # Paths
//
// Resolve joins a brain-relative slash path onto the brain root. The path
// must start with a top directory (wiki, inbox or sessions) and a valid wing,
// and every further segment must be 1 to 255 bytes from [A-Za-z0-9._-], not
// "." or "..", not ending in '.', and not a reserved device name. Absolute
// paths, "..", backslashes, NUL, empty segments and paths over 1024 bytes are
// rejected. Resolve refuses any symbolic link below the root, wherever it
// points (the root itself may be a symlink): checking only links that point
// outside the wing would be racy and subtle, and a brain has no reason to
// hold links. The check is made when Resolve runs; a component swapped for a
// link afterwards is not detected, so callers that need race freedom should
// also open files through an os.Root of the wing directory.
//
// # Errors
//
// Every rejection wraps one of ErrInvalidName, ErrInvalidHall, ErrEscape or
// ErrTooLong (test with errors.Is) and its message says which rule was broken
// and what is allowed.
package layout
