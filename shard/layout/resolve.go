package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/brainstem/brainstem/brain"
)

// Resolve validates the brain-relative slash path rel (brain.ValidPath) and
// joins it onto root. The result is always inside root/<top>/<wing> (or is
// that directory). Every existing component below root is checked with
// lstat: a symbolic link anywhere is refused with a *brain.Error wrapping
// brain.ErrEscape. Components that do not exist yet are fine (Resolve is
// used to create files). Other I/O errors are returned wrapped, and are
// not safe to show. Refusals name brain-relative paths only, never root:
// their messages reach agents.
func Resolve(root, rel string) (string, error) {
	if root == "" {
		return "", escape("empty brain root: cannot confine %s", brain.Preview(rel))
	}
	if _, _, err := brain.ValidPath(rel); err != nil {
		return "", err
	}
	root = filepath.Clean(root)
	p, segs := root, strings.Split(rel, "/")
	for i, seg := range segs {
		p = filepath.Join(p, seg)
		fi, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				break // nothing below can exist either
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: pe.Op, Path: strings.Join(segs[:i+1], "/"), Err: pe.Err}
			}
			return "", fmt.Errorf("layout: resolving %s: %w", brain.Preview(rel), err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", escape("path %s goes through the symbolic link %s: links are not allowed inside a brain", brain.Preview(rel), strings.Join(segs[:i+1], "/"))
		}
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// escape is a refusal of a path that would leave its wing: a code and a
// message safe to show (brain-relative paths only), wrapping
// brain.ErrEscape.
func escape(format string, args ...any) error {
	return brain.Wrap(brain.ErrEscape, brain.CodeInvalidArgument, format, args...)
}
