// Package docs holds the test that makes the documentation a test: every
// shell block of README.md and docs/*.md carries a docs-test marker
// (TestDocsMarked, always), and with BRAINSTEM_DOCS=1 the blocks marked to
// run are run, file by file, against a fresh `brainstem dev` on free ports,
// their printed outputs compared with the docs (TestDocs; .ci/docs.sh, a
// step of .ci/run). The harness is tooling/docstest.
package docs
