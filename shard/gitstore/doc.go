// Package gitstore owns every write into a brain's git repository, for
// the history engine and the remotes alike: object reads (with the
// re-listing retry that outlives pack merges), the durable batch of
// loose objects, the pack writer and the merging of packs, git's lock
// protocol (with flock and stale-lock detection) and ref moves, the raw
// tree codec and the commit walk. It never runs the git binary; the git
// CLI reads everything it writes. docs/decisions.md says why it writes
// objects itself rather than through go-git, and its benchmark measures
// the difference.
package gitstore
