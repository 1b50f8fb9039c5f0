// Package history keeps one wing's history in the brain's git repository:
// every acknowledged change of the wing's files is one commit, authored by
// the caller's verified email, and old versions can be listed, read,
// diffed, restored (by the caller) and purged. It never runs the git
// binary; the git CLI reads everything it writes.
//
// # The repository
//
// The brain directory's own repository: Options.Root, or the worktree git
// finds above it (the brain's paths are then prefixed by Root's path in
// the worktree), or a new one initialised at Root/.git on branch main.
// Commits go on the branch HEAD names; a detached HEAD is refused. A
// commit only ever changes the wing's own tracked paths (Options.Tracked);
// the rest of its tree is the head it is built on, so several wings (and
// people) can share one repository.
//
// # Writing
//
// The write path of the caller (the store) is Begin, which appends the
// change with the full new content of every file to the pending log under
// Options.StateDir and starts its fsync (concurrent Begins share one);
// then the caller changes the files durably; then Landed, which returns
// once the record is durable too (or Abandon). A
// committer goroutine commits landed changes in sequence order, one commit
// per change, in batches: the batch's objects (written here with
// crypto/sha1 and compress/zlib: loose for one commit, one pack with
// deltas for several) are made durable, then the branch ref is moved
// under git's lock protocol. An in-memory model of the wing's trees
// rebuilds only the trees on the changed paths. Flush waits until what
// landed is committed; the reads call it, so history is read-your-writes.
//
// After a crash, Open commits every change of the pending log that landed
// (its marker survived, its files hold its content, or a later change was
// based on it) and drops the others: history holds nothing that was not
// on disk, and every acknowledged change is in history.
//
// # Changes by others
//
// Before each commit batch and each read the branch head is compared with
// the head the engine knows: commits made by another shard, a person or a
// pull are read into the version index (a commit without Brainstem
// trailers is an outside change by its own author); a head that is no
// longer an ancestor rebuilds the index from git. Outside records files
// changed behind the shard's back; at Open the same comparison runs over
// every tracked file, with .git/index as the stat cache. A wing without
// history gets one initial commit, written straight into a pack.
//
// # Reading
//
// The version index holds every tracked path's lineage of versions,
// following renames (Brainstem-Moved-From trailers, or a removed and an
// added path with the same blob in a commit without trailers). It is
// snapshotted under StateDir with the head it reflects and rebuilt from
// git when the snapshot is missing, corrupt or not an ancestor.
//
// # Housekeeping
//
// .git/index is kept in step with the commits for the wing's paths (so
// `git status` is clean); loose objects are packed in the background (each
// tree and blob a delta on the version it replaced), and small packs are
// merged geometrically. Purge, when
// enabled, rewrites history to replace purged versions by a notice, then
// repacks so that the bytes leave the disk.
//
// See docs/history.md.
package history
