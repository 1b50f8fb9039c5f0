// Package store keeps one wing of a brain directory: the markdown notes under
// wiki/<wing>/<hall>/, the unreviewed notes under inbox/<wing>/ and the
// append-only session logs under sessions/<wing>/.
//
// # Source of truth
//
// The files are the truth. The store derives from them, at Open and on every
// change, an in-memory BM25 index (package index), the outbound links and
// backlinks of every note, and the generated table of contents
// wiki/<wing>/_index.md (written behind by default: at most once per
// Options.IndexDelay after a change, and always by Close). Files edited behind
// the store's back (an editor, a git pull) are picked up by a directory
// watcher (Linux inotify: within milliseconds) and by a background rescanner
// that compares size, mtime and inode every Options.RescanInterval, or at once
// by Rescan. Get and search hits always reflect the file's current bytes: a
// version held in memory (a parsed note for Get, the title, hash and body
// offset for a hit) is used only while the file keeps the size, mtime and
// inode it was read with, and only once that mtime is older than the read by
// more than the filesystem's timestamp granularity could hide.
//
// Files of the wing's wiki directory that are not loaded (a name that is not
// <slug>.md, a symlink, a file over the size limit, a directory that is not a
// hall) are never skipped silently: each is logged once as a warning with its
// brain-relative path and reason, and Skipped lists them.
//
// # Restarts
//
// Close (and, now and then, the background loops) saves a snapshot of the
// index and of every note's metadata under Options.StateDir (by default the
// hidden, self-ignoring directory .brainstem at the top of the brain). Open
// restores it and re-reads only the files whose signature changed since, so
// a wing of 100,000 notes opens in seconds. The snapshot is derived data: a
// missing, corrupt (checksummed), foreign or outdated one is logged and the
// wing is read in full.
//
// # Durability
//
// Every write goes through package atomicfile: a temporary file named
// ".tmp-*" in the destination directory, which is written, fsynced, then
// linked (create: never replaces) or renamed (update: atomic replace) into
// place, and the directory is fsynced. A crash therefore leaves either the old or the new file, never a
// torn one; leftover ".tmp-*" files are ignored by scans and removed by Open.
// Session log lines are appended with O_APPEND and fsynced before the call
// returns. Writers of one note are serialised by a per-note lock, and creation
// uses link(2), which fails when the target exists, so two creators of one
// slug get one success and one ErrExists.
//
// # Links and tunnels
//
// Bodies may link notes with wikilinks: [[wing/hall/slug]], or [[hall/slug]]
// for a note of the same wing; an optional "|alias" or "#anchor" suffix is
// ignored. A link into another wing is a tunnel. Links reports a note's
// outbound links (all of them, in order of first appearance), its backlinks
// from notes of this wing, and its tunnels. One store serves one wing, so
// tunnels coming IN from other wings are not knowable here: finding them
// needs a query across shards.
//
// # Errors
//
// A failure a caller may be shown is a *brain.Error, built where it is
// known: its code (not_found, already_exists, conflict, invalid_argument,
// too_large, forbidden) and a message safe to show, which names
// brain-relative paths only and no tool (the tools add their own hints).
// It wraps one of the sentinels ErrNotFound, ErrExists, ErrConflict,
// ErrInvalid, ErrTooLarge and ErrForbidden, for errors.Is; a store that is
// closed fails with ErrClosed (code internal). Any other error is internal:
// the tools log it and show a generic message.
package store
