// Package frontmatter reads and edits the YAML frontmatter of a markdown note
// without losing anything: values are read through gopkg.in/yaml.v3, while
// edits work on the header's lines, so every line an edit does not touch
// (comments, blank lines, unknown fields, key order, line endings) is written
// back byte for byte, and Parse(x).Bytes() == x for every input Parse accepts.
//
// # Format
//
// A note may start with a UTF-8 byte order mark, then a header opened by a
// line "---" and closed by the next line "---" (trailing spaces or tabs after
// the dashes are allowed; "..." does not close a header). The lines between
// are a YAML block mapping with its keys at column 1. Everything after the
// closing line is the body. An input that does not start with "---" has no
// header: it is all body.
//
// # Rules and limits
//
//   - A header opened but never closed is ErrUnterminated.
//   - A header over MaxHeaderBytes (64 KiB) is ErrTooLarge.
//   - A header that is not valid YAML, is not a block mapping (a flow mapping
//     "{a: 1}" or a list), repeats a top-level key, has a non-scalar or
//     explicit ("? key") top-level key, holds several YAML documents, or uses
//     a line break other than "\n" or "\r\n" (a lone "\r", U+0085, U+2028,
//     U+2029) or a document end line "..." is ErrInvalidYAML; the message
//     gives the file line whenever yaml.v3 reports one.
//
// # Editing
//
// A top-level key owns its line and the following lines up to the next key,
// minus trailing blank lines and comments that start at column 1 (those stay
// in place, they usually introduce the next key). Set, SetStrings and Delete
// replace or remove exactly those lines; a new key is appended at the end of
// the header. Values are written on one line, quoted by yaml.v3 only when
// YAML needs it (double-quoted with escapes when they hold line breaks; RFC
// 3339 timestamps stay plain, as hand-written notes have them), and a
// trailing comment on a one-line value is kept. New lines take the line
// ending of the opening fence (of the body's first line when a header is
// created).
//
// Every edit is checked by re-parsing the header: an edit that would make the
// header invalid, change the value of any other key (for example by removing
// an anchor that another key aliases) or grow it over the limit is not
// applied, and the error is reported by Doc.Err. Callers that write the
// result must check Err first. Keys must satisfy ValidKey.
package frontmatter
