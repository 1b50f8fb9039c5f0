// Package agenthooks holds the end-to-end tests and the benchmark of
// `brainstem hook <event>`: the brainstem binary, built once, run as Claude
// Code runs a hook — a process with the hook's JSON on stdin, the person's
// stored sign-in in its configuration directory — against a development
// environment (devenv) on loopback, with the inputs of Claude Code's hooks
// reference. The package has no code of its own besides this doc.
package agenthooks
