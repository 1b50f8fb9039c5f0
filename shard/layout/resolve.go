package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ValidPath checks a brain-relative slash path without touching the disk and
// returns its top directory and wing. The rules are those of Resolve.
func ValidPath(rel string) (top, wing string, err error) {
	if rel == "" {
		return "", "", reject(ErrInvalidName, "empty path: want <top>/<wing>/..., top being wiki, inbox or sessions")
	}
	if len(rel) > MaxPathLen {
		return "", "", &ruleError{
			msg:  fmt.Sprintf("path is %d bytes, the limit is %d", len(rel), MaxPathLen),
			errs: []error{ErrTooLong},
		}
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return "", "", reject(ErrInvalidName, "path %s contains a NUL byte", preview(rel))
	}
	if strings.IndexByte(rel, '\\') >= 0 {
		return "", "", reject(ErrEscape, "path %s contains a backslash: use '/' as the only separator", preview(rel))
	}
	if rel[0] == '/' {
		return "", "", reject(ErrEscape, "path %s is absolute: want a brain-relative path such as wiki/<wing>/<hall>/<slug>.md", preview(rel))
	}
	segs := strings.Split(rel, "/")
	for _, seg := range segs {
		if seg == "." || seg == ".." {
			return "", "", reject(ErrEscape, "path %s contains %q: dot segments are not allowed", preview(rel), seg)
		}
	}
	top = segs[0]
	switch top {
	case TopWiki, TopInbox, TopSessions:
	default:
		return "", "", reject(ErrEscape, "path %s does not start with wiki/, inbox/ or sessions/", preview(rel))
	}
	if len(segs) < 2 {
		return "", "", reject(ErrEscape, "path %s names no wing: want %s/<wing>/...", preview(rel), top)
	}
	wing = segs[1]
	if err := ValidWing(wing); err != nil {
		return "", "", err
	}
	for _, seg := range segs[2:] {
		if err := validSegment(seg); err != nil {
			return "", "", err
		}
	}
	return top, wing, nil
}

// validSegment checks one path segment below the wing directory.
func validSegment(seg string) error {
	const rule = "a path segment is 1 to 255 bytes from A-Z, a-z, 0-9, '.', '_' and '-', not ending in '.'"
	if seg == "" {
		return reject(ErrInvalidName, "empty path segment (doubled or trailing '/'): %s", rule)
	}
	if len(seg) > MaxSegmentLen {
		return &ruleError{
			msg:  fmt.Sprintf("path segment is %d bytes, the limit is %d (%s)", len(seg), MaxSegmentLen, preview(seg)),
			errs: []error{ErrInvalidName, ErrTooLong},
		}
	}
	for i := 0; i < len(seg); i++ {
		if !isPortable(seg[i]) {
			return reject(ErrInvalidName, "path segment has %s: %s", badByte(seg, i), rule)
		}
	}
	if seg[len(seg)-1] == '.' {
		return reject(ErrInvalidName, "path segment %s ends in '.': %s", preview(seg), rule)
	}
	base, _, _ := strings.Cut(seg, ".")
	if reservedDevice(base) {
		return reject(ErrInvalidName, "path segment %s is a reserved device name (con, prn, aux, nul, com0-9, lpt0-9)", preview(seg))
	}
	return nil
}

// Resolve validates the brain-relative slash path rel (see ValidPath and the
// package documentation) and joins it onto root. The result is always inside
// root/<top>/<wing> (or is that directory). Every existing component below
// root is checked with lstat: a symbolic link anywhere is refused with
// ErrEscape. Components that do not exist yet are fine (Resolve is used to
// create files). Other I/O errors are returned wrapped. Errors name
// brain-relative paths only, never root: their messages reach agents.
func Resolve(root, rel string) (string, error) {
	if root == "" {
		return "", reject(ErrEscape, "empty brain root: cannot confine %s", preview(rel))
	}
	if _, _, err := ValidPath(rel); err != nil {
		return "", err
	}
	root = filepath.Clean(root)
	p := root
	for i, seg := range strings.Split(rel, "/") {
		p = filepath.Join(p, seg)
		fi, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				break // nothing below can exist either
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: pe.Op, Path: prefix(rel, i), Err: pe.Err}
			}
			return "", fmt.Errorf("layout: resolving %s: %w", preview(rel), err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", reject(ErrEscape, "path %s goes through the symbolic link %s: links are not allowed inside a brain", preview(rel), prefix(rel, i))
		}
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// prefix returns the first n+1 segments of the slash path rel.
func prefix(rel string, n int) string {
	end := 0
	for range n + 1 {
		j := strings.IndexByte(rel[end:], '/')
		if j < 0 {
			return rel
		}
		end += j + 1
	}
	return rel[:end-1]
}
