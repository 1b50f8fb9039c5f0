package history

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/gitstore"
)

// Identity is a git author or committer.
type Identity struct {
	Name, Email string
}

// The identity of the commits the engine makes itself (the initial
// commit and outside edits) unless Options.Service names another.
const (
	DefaultServiceName  = "Brainstem"
	DefaultServiceEmail = "history@brainstem.invalid"
)

// DefaultLockTimeout is how long a git lock (a ref's or the index's) held
// by another process is waited for before the operation fails.
const DefaultLockTimeout = 10 * time.Second

// Options configures Open.
type Options struct {
	// Root is the brain directory; Wing the wing whose history this is.
	Root, Wing string
	// StateDir holds the pending log and the version-index snapshot of
	// this wing (required; one per wing: Open locks it).
	StateDir string
	// Tracked reports which brain-relative slash paths are history
	// (required): the wing's note files and inbox notes.
	Tracked func(rel string) bool
	// Files lists every tracked path on disk now (required).
	Files func() ([]string, error)
	// Dirs are the brain-relative directories every tracked path lies
	// under (e.g. wiki/<wing> and inbox/<wing>). Optional: nil means the
	// whole tree, which costs a walk of other wings' changes too.
	Dirs []string
	// Logger receives the engine's logs; nil discards them. The engine
	// adds no "wing" key: the caller's logger has it.
	Logger *slog.Logger
	// Now is the clock of commit times (nil: time.Now).
	Now func() time.Time
	// Service is the author of the initial commit and of outside edits
	// (zero: DefaultServiceName <DefaultServiceEmail>).
	Service Identity
	// AllowPurge enables Purge (off by default).
	AllowPurge bool
	// LockTimeout bounds the wait for a git lock held by another process
	// (0: DefaultLockTimeout).
	LockTimeout time.Duration

	// staleLock is the age past which a lock file nobody holds is taken
	// for a crashed writer's (0: gitstore.DefaultStaleLock). Tests shorten it.
	staleLock time.Duration
	// onRead, when set, is told of every tracked file read from disk
	// (tests count them).
	onRead func(rel string)
	// packEvery is the number of loose objects that starts a background
	// pack (0: defaultPackEvery).
	packEvery int
}

// withDefaults validates opt and fills its zero fields.
func (opt Options) withDefaults() (Options, error) {
	var missing []string
	if opt.Root == "" {
		missing = append(missing, "Root")
	}
	if opt.StateDir == "" {
		missing = append(missing, "StateDir")
	}
	if opt.Tracked == nil {
		missing = append(missing, "Tracked")
	}
	if opt.Files == nil {
		missing = append(missing, "Files")
	}
	if len(missing) > 0 {
		return opt, fmt.Errorf("history: Options without %s", strings.Join(missing, ", "))
	}
	if err := brain.ValidWing(opt.Wing); err != nil {
		return opt, fmt.Errorf("history: %w", err)
	}
	root, err := filepath.Abs(opt.Root)
	if err != nil {
		return opt, fmt.Errorf("history: %w", err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return opt, fmt.Errorf("history: the brain directory: %w", err)
	}
	opt.Root = root
	for i, d := range opt.Dirs {
		d = strings.Trim(filepath.ToSlash(filepath.Clean(d)), "/")
		if d == "" || d == "." || strings.HasPrefix(d, "../") || d == ".." {
			return opt, fmt.Errorf("history: Dirs[%d] %q is not a directory inside the brain", i, opt.Dirs[i])
		}
		opt.Dirs[i] = d
	}
	opt.Logger = cmp.Or(opt.Logger, slog.New(slog.DiscardHandler))
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Service.Email == "" {
		opt.Service = Identity{Name: DefaultServiceName, Email: DefaultServiceEmail}
	}
	opt.Service.Name = cmp.Or(opt.Service.Name, opt.Service.Email)
	if strings.ContainsAny(opt.Service.Name+opt.Service.Email, "<>\n") {
		return opt, errors.New("history: the service identity may not contain <, > or a newline")
	}
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = DefaultLockTimeout
	}
	if opt.staleLock <= 0 {
		opt.staleLock = gitstore.DefaultStaleLock
	}
	if opt.packEvery <= 0 {
		opt.packEvery = defaultPackEvery
	}
	return opt, nil
}

// Op is one file change of a Change. Paths are brain-relative slash paths
// that Options.Tracked accepts.
type Op struct {
	// Path is the file changed (for a rename, where it goes).
	Path string
	// From is, for a rename, the path the note leaves ("" otherwise).
	From string
	// Content is the file's complete new bytes (nil for a removal).
	Content []byte
	// Remove records the removal of Path.
	Remove bool
	// Base is the sha256 of the bytes the change replaces, when HadBase
	// (the file existed). Recovery after a crash uses it.
	Base    [32]byte
	HadBase bool
}

// Change is one acknowledged change of the wing's files: one commit.
type Change struct {
	Ops []Op
	// Author is the caller's verified email (required).
	Author string
	// Action names what the change does ("create", "update", …; required).
	Action string
	// Tool is the caller's name for the operation (opaque to the engine).
	Tool string
	// Subject is the commit's subject line ("" → Action and the first path).
	Subject string
	// Reason is the caller's reason, if any.
	Reason string
	// Key is the idempotency key of the write, if any.
	Key string
}

// Version is one version of a note: the commit that made it and what the
// note was then.
type Version struct {
	// ID is the commit id, 40 hex digits: the version's name
	// (`git show <ID>:<path>` shows it).
	ID string
	// Path is the note's brain-relative path at this version.
	Path string
	// Blob is the git blob id; ContentHash the sha256 hex of the bytes
	// (both "" when Removed).
	Blob, ContentHash string
	// At is the commit's author time, in UTC.
	At time.Time
	// Author is the email of the change's author (for an outside change,
	// the committer the commit names).
	Author string
	Action string
	Tool   string
	Reason string
	Key    string
	// Removed: this version removes the note.
	Removed bool
	// Purged: the content was purged; the blob holds the purge notice.
	Purged bool
	// From is, for a rename, the path the note had before this version.
	From string
}

// PurgeRequest asks Purge to remove content from history.
type PurgeRequest struct {
	// Path is the note's brain-relative path (its current one, or the
	// last before it was removed).
	Path string
	// Version is the id of the version to purge; "" purges every version.
	Version string
	// Author is the curator's verified email, the audit commit's author.
	Author string
	// Tool and Subject describe the audit commit as Change does.
	Tool, Subject string
	// Reason is required; it is recorded in the purge notice and the
	// audit commit.
	Reason string
	// DropRefs are prefixes of refs (e.g. refs/remotes/brainstem/) the
	// purge deletes with the rewrite instead of refusing because they
	// reach the content: the remote-tracking ref of a remote that the
	// rewritten branch is then force pushed to. Only loose refs are
	// dropped; a packed one still refuses the purge.
	DropRefs []string
}

// PurgeResult is what a purge did.
type PurgeResult struct {
	// Purged are the versions whose content was replaced, as they are now
	// (new ids, Purged set).
	Purged []Version
	// Audit is the id of the audit commit.
	Audit string
	// RemoveFile is set when every version was purged: the caller must
	// remove the note's file (Path) from the brain; the audit commit
	// already removed it from the tree.
	RemoveFile bool
	// Path is the note's path.
	Path string
	// Rewritten is the number of commits rewritten (they have new ids).
	Rewritten int
	// Blobs are the ids (hex) of the blobs purged, sorted: a remote
	// refuses history that holds one again.
	Blobs []string
}

// Problem is a disagreement between the brain's files and its history.
type Problem struct {
	Path    string // brain-relative path, or "" for the history as a whole
	Message string
}
