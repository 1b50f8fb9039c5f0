// Package diskgrep finds text left on disk, for the tests that prove a
// purge: in the raw bytes of every file under a directory, and in every
// object of its git repository (packed, loose or unreachable alike).
package diskgrep

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// GitObjects is the place Find names for a match in the repository's
// objects.
const GitObjects = "git objects"

// Find returns the places under dir that hold text: each file's path,
// and GitObjects when an object of dir's git repository (if dir is one)
// does. A file gone between its directory's listing and its read (a
// lock or temporary file of a running shard) is skipped.
func Find(dir, text string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case bytes.Contains(b, []byte(text)):
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("diskgrep: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return found, nil
	}
	out, err := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		return nil, fmt.Errorf("diskgrep: git cat-file: %w", err)
	}
	if bytes.Contains(out, []byte(text)) {
		found = append(found, GitObjects)
	}
	return found, nil
}
