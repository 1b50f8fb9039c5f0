package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/brainstem/brainstem/shard/check"
)

const checkUsage = `Usage: brainstem check [--max-note-bytes N] [--json] BRAIN

Checks that BRAIN is a well-formed brain, the way the shards read it: names
and places of every file under wiki/, inbox/ and sessions/, note frontmatter
(title, wing, hall, created_by, created_at), wikilinks that resolve, session
logs of JSON objects, and files a shard would skip (too large, symlinks).
Prints every problem with its path, then a summary. Use it as the CI check
of a brain repository.

Exit codes: 0 no problem, 1 problems found, 2 bad usage or not a brain.

Flags:
`

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", stderr, checkUsage)
	maxNote := fs.Int("max-note-bytes", check.DefaultMaxNoteBytes, "the shards' note size limit (their --max-note-bytes)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"check: give the brain directory, e.g. brainstem check ./brain"}
	}
	rep, err := check.Brain(ctx, fs.Arg(0), check.Options{MaxNoteBytes: *maxNote})
	if err != nil {
		return usageError{err.Error()}
	}
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
			return err
		}
	} else if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if !rep.OK() {
		return errors.New("check: " + fmt.Sprint(len(rep.Problems)) + " problems in " + rep.Root)
	}
	return nil
}
