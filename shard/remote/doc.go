// Package remote connects one wing's history to a git remote: its Config
// (URL, branch, credentials read from files, push delay, pull interval,
// the force-push-on-purge setting, the webhook secret) and the push and
// fetch of the wing's branch with go-git. In the remote the wing's notes
// live under wiki/<wing>/, so that several wings share one repository and
// branch (docs/decisions.md, issue 19).
//
// Secrets (the token, the SSH key, the webhook secret) are read from
// files when used and never appear in an error or a log: errors name the
// file, and the URL is refused when it carries a password.
package remote
