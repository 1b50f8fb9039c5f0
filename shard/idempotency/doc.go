// Package idempotency remembers the idempotency keys of one wing, per
// caller, in an append-only journal that survives a crash: for each key,
// the fingerprint of the call's arguments, the answer it got, and the
// intent of a change about to be made, so that a retry with the same key
// is answered the first answer and never applies a write twice. The
// protocol (intent, change, commit) and its retention are described in
// docs/tools.md ("Idempotency keys") and docs/decisions.md.
package idempotency
