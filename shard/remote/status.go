package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// StatusFile is where a syncer keeps its Report, under the repository's
// git directory, after every round: `brainstem check` reads it beside a
// running shard (or after it stopped) to tell why a wing does not sync.
const StatusFile = "brainstem/remote-status.json"

// maxStatusFile bounds the status file ReadReport reads.
const maxStatusFile = 1 << 20

// ErrStatusFile: the status file cannot be read back.
var ErrStatusFile = errors.New("remote: the sync status file cannot be read")

// Report is the persisted form of a syncer's Status: what `brainstem
// check` lists. No field holds a secret (the URL is redacted, the error
// scrubbed).
type Report struct {
	URL       string           `json:"url"`
	Branch    string           `json:"branch"`
	Wings     []string         `json:"wings"`
	Updated   time.Time        `json:"updated"`
	LastSync  time.Time        `json:"last_sync,omitzero"`
	LastError string           `json:"last_error,omitempty"`
	Hint      string           `json:"hint,omitempty"` // what to do about LastError
	Unpushed  int              `json:"unpushed"`
	Pushes    int              `json:"pushes"`
	Conflicts []ConflictRecord `json:"conflicts"` // the last 100, oldest first
	Rejected  []Rejected       `json:"rejected"`  // of the last integration
	// ForcePushPending: a purge's rewritten history has not reached the
	// remote yet (the syncer retries it).
	ForcePushPending bool `json:"force_push_pending,omitempty"`
}

// ConflictRecord is a Conflict as reported: blob ids in hex, with the
// merge that settled it and when.
type ConflictRecord struct {
	Path   string    `json:"path"`
	Local  string    `json:"local"`  // the wing's version, kept in history
	Remote string    `json:"remote"` // the current version ("" when the remote removed the note)
	Merge  string    `json:"merge"`
	When   time.Time `json:"when"`
}

// Hint says in one sentence what an operator does about a sync error.
func Hint(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrCredentials):
		return "the remote refused the credentials: check the token (or deploy key) file, that it grants read and write on the repository, and --git-username"
	case errors.Is(err, ErrSecretFile):
		return "a credential file cannot be read: check that the Secret is mounted where --git-token-file or --git-ssh-key-file point, and readable by the shard"
	case errors.Is(err, ErrBadTree):
		return "the remote's head holds a tree git cannot read: fix the remote branch (revert the commit that made it)"
	case errors.Is(err, ErrPurgedContent):
		return "a clone made before a purge pushed the purged history back: force push the wing's branch again (or reset the remote branch) and have every clone re-cloned"
	case errors.Is(err, ErrLeaseLost):
		return "someone rewrote the remote branch after a purge synced with it: reset the remote branch to the wing's (push it from the brain's repository with --force) so that the purge's force push lands"
	case errors.Is(err, ErrLeaseMoved):
		return "the remote kept moving while the purge's force push was retried: it is retried; if it persists, look for another writer pushing in a loop"
	case errors.Is(err, ErrRemoteMoved):
		return "the remote kept moving during every attempt of the round: it is retried; if it persists, look for another writer pushing in a loop"
	case errors.As(err, &ne), errors.Is(err, transport.ErrRepositoryNotFound), strings.Contains(err.Error(), "connection refused"),
		strings.Contains(err.Error(), "no such host"):
		return "the remote cannot be reached: check the URL, DNS and the egress NetworkPolicy; writes go on locally and are pushed once it is back"
	}
	return ""
}

// statusPath is the status file of r's repository ("" for a Remote
// without one: a probe).
func (r *Remote) statusPath() string { return r.gitPath(StatusFile) }

// report is st as persisted.
func (r *Remote) report(st Status, lastErr error) Report {
	rep := Report{URL: r.cfg.Redacted(), Branch: r.cfg.Branch, Wings: r.cfg.Wings(), Updated: r.now().UTC(),
		LastSync: st.LastSync.UTC(), LastError: st.LastError, Hint: Hint(lastErr), Unpushed: st.Unpushed, Pushes: st.Pushes,
		Conflicts: st.Recent, Rejected: st.Rejected, ForcePushPending: st.ForcePushPending}
	if rep.Conflicts == nil {
		rep.Conflicts = []ConflictRecord{}
	}
	if rep.Rejected == nil {
		rep.Rejected = []Rejected{}
	}
	return rep
}

// saveReport writes the status file; a failure is logged, never fatal
// (the status is also in the metrics and the log).
func (r *Remote) saveReport(rep Report) {
	path := r.statusPath()
	if path == "" {
		return
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = writeState(path, append(b, '\n'))
	}
	if err != nil {
		r.log.Warn("remote: cannot write the sync status file", "path", path, "err", err)
	}
}

// ReadReport reads the status file of the repository whose git directory
// is gitDir; ok is false when there is none (no remote has run there).
func ReadReport(gitDir string) (rep Report, ok bool, err error) {
	b, err := readBounded(filepath.Join(gitDir, filepath.FromSlash(StatusFile)), maxStatusFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Report{}, false, nil
	}
	if err != nil {
		return Report{}, false, fmt.Errorf("%w: %w", ErrStatusFile, err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return Report{}, false, fmt.Errorf("%w: %w", ErrStatusFile, err)
	}
	return rep, true, nil
}
