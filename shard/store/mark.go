package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/store/sessionlog"
)

// MarkOp is the kind of change a Mark describes.
type MarkOp string

// The kinds of change.
const (
	MarkCreate  MarkOp = "create"  // a new file: a note, an inbox note, a promoted note
	MarkReplace MarkOp = "replace" // a note's new version (brain_update)
	MarkAppend  MarkOp = "append"  // bytes appended to a session log
	MarkRemove  MarkOp = "remove"  // a note's file removed (brain_archive)
	MarkPurge   MarkOp = "purge"   // content purged from history (brain_purge)
)

// Stamps name the frontmatter fields a created file keeps for life, which
// recognise it after later updates (see Mark.Stamp).
const (
	StampCreated  = "created"  // created_by, created_at
	StampPromoted = "promoted" // promoted_by, promoted_at
)

// A Mark is what a durable record needs to tell, after a crash, whether one
// change of the store reached the disk: where it goes and what the bytes
// will be. Settle reads it back. It is plain data (JSON) so that a journal
// can keep it without knowing the store.
type Mark struct {
	Op   MarkOp `json:"op"`
	Path string `json:"path"` // brain-relative slash path of the file changed
	// Hash is the content hash the file will have (create, replace), the
	// sha256 of the appended bytes (append), the content hash of the file
	// removed (remove), or the content hash purged ("" for every version;
	// purge, whose Path is the note's path).
	Hash string `json:"hash"`
	// Offset and Size locate the appended bytes (append only).
	Offset int64 `json:"offset,omitempty"`
	Size   int64 `json:"size,omitempty"`
	// Stamp, By and At (create only): the author (or promoter) and time the
	// new file's frontmatter records. A file updated since it was created
	// has another hash but keeps these, so it is still recognised.
	Stamp string `json:"stamp,omitempty"`
	By    string `json:"by,omitempty"`
	At    string `json:"at,omitempty"`
	// Remove and RemoveHash (promote only): the inbox file the move deletes
	// once the wiki note is written, and its content hash.
	Remove     string `json:"remove,omitempty"`
	RemoveHash string `json:"remove_hash,omitempty"`
}

// Intent is a change the store is about to make durable, as handed to a
// Hook.
type Intent struct {
	Mark    Mark
	Note    *Note    // Create, Update, Promote: the note as it will be
	Tunnels []string // Promote: the note's links into other wings
	Line    int      // AppendSession: the 1-based number of the new line
	// Outcome is what the call returns if the change lands: Archived
	// (Archive), Moved (Move), Purged (Purge).
	Outcome any
}

// Hook is called by a write under the lock of the note (or session log) it
// changes, after every check has passed and right before the change
// touches the disk. An error cancels the write: nothing is changed and the
// write returns the error (wrapped). Idempotency records use it to make the
// intent durable first (shard/idempotency).
type Hook func(Intent) error

// errHook marks a failure of the caller's hook.
var errHook = errors.New("store: the write's hook refused it")

func runHook(h Hook, in Intent) error {
	if h == nil {
		return nil
	}
	if err := h(in); err != nil {
		return fmt.Errorf("%w: %w", errHook, err)
	}
	return nil
}

// Settle reports whether the change m describes is on disk, and finishes
// its idempotent tail: a promotion whose wiki note is there but whose inbox
// file is still present (a crash between the two) has the inbox file
// removed. A file that is missing, or holds other bytes (and, for a
// created file, other stamps), means the change did not land. Errors are
// failures to read; the answer is then unknown.
func (s *Store) Settle(m Mark) (bool, error) {
	abs, err := s.wingFile(m.Path)
	if err != nil {
		return false, fmt.Errorf("store: settle: %w", err)
	}
	switch m.Op {
	case MarkCreate, MarkReplace:
		raw, _, err := readFileLimit(abs, s.maxNote)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case errors.Is(err, ErrTooLarge), errors.Is(err, ErrInvalid):
			return false, nil // not a file this store could have written
		case err != nil:
			return false, fmt.Errorf("store: settle %s: %w", m.Path, err)
		}
		applied := HashOf(raw) == m.Hash
		if !applied && m.Op == MarkCreate && m.Stamp != "" && m.By != "" && m.At != "" {
			p := parseNote(raw, "")
			n := Note{Fields: p.fields}
			byKey, atKey := KeyCreatedBy, KeyCreatedAt
			if m.Stamp == StampPromoted {
				byKey, atKey = KeyPromotedBy, KeyPromotedAt
			}
			applied = n.Get(byKey) == m.By && n.Get(atKey) == m.At
		}
		if applied && m.Remove != "" {
			if err := s.removeIfHash(m.Remove, m.RemoveHash); err != nil {
				return true, err
			}
		}
		return applied, nil
	case MarkAppend:
		return sessionlog.Landed(abs, sessionlog.Pending{Path: m.Path, Hash: m.Hash, Offset: m.Offset, Size: m.Size})
	case MarkRemove:
		raw, _, err := readFileLimit(abs, s.maxNote)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("store: settle %s: %w", m.Path, err)
		}
		// Another file there was written after the removal (the note's lock
		// kept everyone else off it until then).
		return HashOf(raw) != m.Hash, nil
	case MarkPurge:
		return s.purgeSettled(m)
	}
	return false, fmt.Errorf("store: settle: unknown change %q: %w", m.Op, ErrInvalid)
}

// removeIfHash removes the brain-relative file rel if it still holds the
// bytes of hash, and makes the removal durable.
func (s *Store) removeIfHash(rel, hash string) error {
	abs, err := s.wingFile(rel)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	raw, _, err := readFileLimit(abs, s.maxNote)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || HashOf(raw) != hash {
		return nil // another file by that name now: not ours to remove
	}
	if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", rel, err)
	}
	return atomicfile.SyncDir(filepath.Dir(abs))
}

// wingFile resolves a brain-relative path that must lie in one of this
// wing's directories (wiki/<wing>/, inbox/<wing>/, sessions/<wing>/).
func (s *Store) wingFile(rel string) (string, error) {
	ok := false
	for _, top := range []string{brain.TopWiki, brain.TopInbox, brain.TopSessions} {
		if strings.HasPrefix(rel, top+"/"+s.wing+"/") {
			ok = true
		}
	}
	if !ok {
		return "", fmt.Errorf("%s is not a file of wing %q: %w", rel, s.wing, ErrInvalid)
	}
	return s.abs(rel)
}
