// Package docstest makes the project's documentation a test: it finds the
// code blocks of a markdown file (README.md, docs/*.md), reads the marker
// before each one, and runs the shell commands the docs show, in order and
// in one shell per file, against a fresh `brainstem dev` started on free
// ports. Where a block shows what a command prints, the printed output is
// compared with it, after normalising what changes from run to run (ports,
// tokens, times, hashes, durations, temporary paths).
//
// A marker is an HTML comment on the line before the block, invisible on
// GitHub:
//
//	<!-- docs-test: run -->              the commands run and must succeed
//	<!-- docs-test: output -->           each paragraph is a command and what it prints
//	<!-- docs-test: stack -->            the block starts `brainstem dev`: the harness does
//	<!-- docs-test: skip (the reason) --> not run, for the reason given
//
// In any block, lines starting with "$ " are commands and the lines after
// them what they print. A shell block without a marker is an error, so a
// new example either runs in CI or says why it cannot (docs/decisions.md,
// "Docs that are tests"). Failures name the file and line of the command:
// "docs/operating.md:123: the output differs: …".
package docstest
