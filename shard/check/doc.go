// Package check verifies that a directory is a well-formed brain, the way
// a shard will read it, and reports every problem with its brain-relative
// path. It is what `brainstem check BRAIN` runs, and the CI check for the
// repository that holds a brain.
//
// It applies the rules of shard/layout (names, places) and shard/frontmatter
// (headers) to every entry of wiki/, inbox/ and sessions/:
//
//   - Layout: wiki/<wing>/<hall>/<slug>.md, wiki/<wing>/_index.md (generated;
//     not checked), inbox/<wing>/<name>.md, sessions/<wing>/<session>.jsonl.
//     Anything else in those trees is a problem: a name that is not a valid
//     wing, hall, slug, inbox name or session, a file out of place, a
//     directory nested too deep, a symbolic link or other non-regular file,
//     a note over the size limit (the shard skips such files), a temporary
//     file left by an interrupted write. Hidden entries (names starting with
//     '.', such as .gitkeep) are not part of a brain and are passed over;
//     so is everything at the top of the brain besides the three trees.
//   - Notes (wiki and inbox): a frontmatter header that parses, with a
//     non-empty title, wing (that of the path), hall (that of the path in
//     the wiki; a valid hall, if given, in the inbox), created_by (an email)
//     and created_at (RFC 3339); tags, if given, a list.
//   - Links: every [[wing/hall/slug]] (or [[hall/slug]]) wikilink of a note
//     is a well-formed note id naming a note of the brain.
//   - Sessions: every line of a log is a JSON object.
//
// A shard loads exactly the notes Brain finds no layout problem with (it
// uses the same rules); content problems are about keeping a brain clean
// and editable (a note whose header does not parse cannot be updated).
package check
