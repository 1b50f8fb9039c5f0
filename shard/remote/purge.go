package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/brainstem/brainstem/internal/atomicfile"
)

// Files of a purge's state, under the repository's git directory.
const (
	// ForcePushFile holds the force push a purge still owes the remote
	// (the lease: the remote head the purge was synced with). It is
	// written before the purge rewrites anything and removed once the
	// remote holds the rewritten branch, so a crash or an outage between
	// leaves the syncer forcing, never merging the old history back.
	ForcePushFile = "brainstem/force-push"
	// PurgedFile lists the blob ids (hex, one a line) every purge
	// removed: a remote head whose new commits hold one is refused.
	PurgedFile = "brainstem/purged"
)

// Bounds of the purge's state files.
const (
	maxForcePushFile = 4 << 10
	maxPurgedFile    = 16 << 20
)

// Named errors of a purge with a remote.
var (
	// ErrPurgeNeedsRemote: a purge with a remote syncs first, so that the
	// remote holds nothing the wing lacks; the remote could not be synced
	// and nothing was changed.
	ErrPurgeNeedsRemote = errors.New("remote: a purge with a remote set needs the remote reachable and in sync first (nothing was changed); retry when brainstem check shows the wing in sync")
	// ErrPurgedContent: the remote's new commits hold content a purge
	// removed (a stale clone pushed old history back); they are not
	// integrated.
	ErrPurgedContent = errors.New("remote: the remote's history holds purged content, so it is not integrated")
	// ErrLeaseMoved: the remote branch moved after the purge synced with
	// it, so the force push of the rewritten branch stays pending.
	ErrLeaseMoved = errors.New("remote: the remote branch moved since the purge synced with it; the force push of the purged history stays pending")
	// errForcePushFile: the pending force push cannot be read back.
	errForcePushFile = errors.New("remote: the pending force push file cannot be read")
)

// forcePush is the persisted form of a pending force push.
type forcePush struct {
	Lease string    `json:"lease"` // the remote head the purge synced with ("" : none)
	Since time.Time `json:"since"`
}

// gitPath is the path of name (slash-separated) under the repository's
// git directory ("" for a Remote without a repository: a probe).
func (r *Remote) gitPath(name string) string {
	if r.store == nil {
		return ""
	}
	return filepath.Join(r.store.Filesystem().Root(), filepath.FromSlash(name))
}

// writeState writes one of the remote's state files (a gitPath)
// atomically, making its directory first.
func writeState(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// pendingForcePush returns the lease of the force push a purge owes the
// remote, if one is pending.
func (r *Remote) pendingForcePush() (lease plumbing.Hash, pending bool, err error) {
	b, err := readBounded(r.gitPath(ForcePushFile), maxForcePushFile)
	if errors.Is(err, fs.ErrNotExist) {
		return plumbing.ZeroHash, false, nil
	}
	if err == nil {
		lease, err = parseForcePush(b)
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("%w (%s): %w", errForcePushFile, ForcePushFile, err)
	}
	return lease, true, nil
}

// parseForcePush reads the lease of a pending force push file.
func parseForcePush(b []byte) (plumbing.Hash, error) {
	var fp forcePush
	if err := json.Unmarshal(b, &fp); err != nil {
		return plumbing.ZeroHash, err
	}
	if fp.Lease != "" && (len(fp.Lease) != 40 || !plumbing.IsHash(fp.Lease)) {
		return plumbing.ZeroHash, fmt.Errorf("lease %q is not a commit id", fp.Lease)
	}
	return plumbing.NewHash(fp.Lease), nil
}

// formatForcePush is the file of a force push owed with lease.
func formatForcePush(lease plumbing.Hash, since time.Time) ([]byte, error) {
	fp := forcePush{Since: since.UTC()}
	if !lease.IsZero() {
		fp.Lease = lease.String()
	}
	b, err := json.Marshal(fp)
	return append(b, '\n'), err
}

// setForcePush records (or, with pending false, clears) the force push
// owed with lease.
func (r *Remote) setForcePush(lease plumbing.Hash, pending bool) error {
	path := r.gitPath(ForcePushFile)
	if !pending {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remote: %w", err)
		}
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	b, err := formatForcePush(lease, r.now())
	if err == nil {
		err = writeState(path, b)
	}
	if err != nil {
		return fmt.Errorf("remote: record the pending force push: %w", err)
	}
	return nil
}

func (r *Remote) purged() (map[plumbing.Hash]bool, error) {
	b, err := readBounded(r.gitPath(PurgedFile), maxPurgedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		var set map[plumbing.Hash]bool
		if set, err = parsePurged(b); err == nil {
			return set, nil
		}
	}
	return nil, fmt.Errorf("remote: read %s: %w", PurgedFile, err)
}

// parsePurged reads a purged file: blob ids in hex, one a line.
func parsePurged(b []byte) (map[plumbing.Hash]bool, error) {
	set := map[plumbing.Hash]bool{}
	for _, l := range strings.Fields(string(b)) {
		if len(l) != 40 || !plumbing.IsHash(l) {
			return nil, fmt.Errorf("%q is not a blob id", l)
		}
		set[plumbing.NewHash(l)] = true
	}
	return set, nil
}

// formatPurged is the purged file of set and the ids (hex) more.
func formatPurged(set map[plumbing.Hash]bool, more []string) ([]byte, error) {
	lines := make([]string, 0, len(set)+len(more))
	for h := range set {
		lines = append(lines, h.String())
	}
	for _, b := range more {
		if len(b) != 40 || !plumbing.IsHash(b) {
			return nil, fmt.Errorf("remote: %q is not a blob id", b)
		}
		lines = append(lines, strings.ToLower(b))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

// addPurged records the blob ids (hex) a purge removed.
func (r *Remote) addPurged(blobs []string) error {
	set, err := r.purged()
	if err != nil {
		return err
	}
	b, err := formatPurged(set, blobs)
	if err != nil {
		return err
	}
	if err := writeState(r.gitPath(PurgedFile), b); err != nil {
		return fmt.Errorf("remote: record the purged blobs: %w", err)
	}
	return nil
}

// refusePurged refuses the remote head when a commit of it that the
// local head does not reach holds a purged blob.
func (r *Remote) refusePurged(local, remote plumbing.Hash) error {
	set, err := r.purged()
	if err != nil {
		return err
	}
	return r.refuseBlobs(set, local, remote)
}

// refuseBlobs is refusePurged with the purged blobs of set.
func (r *Remote) refuseBlobs(set map[plumbing.Hash]bool, local, remote plumbing.Hash) error {
	if len(set) == 0 {
		return nil
	}
	_, err := r.newObjects(remote, local, func(c *object.Commit, objs []plumbing.Hash) error {
		for _, h := range objs {
			if set[h] {
				return fmt.Errorf("%w: commit %s of %s holds the purged blob %s: a clone made before the purge pushed its old history back; force push the wing's branch again or reset the remote branch, and have every clone re-cloned (or `git fetch && git reset --hard`)",
					ErrPurgedContent, c.Hash, r.cfg.Branch, h)
			}
		}
		return nil
	})
	return err
}

// PurgeHold is the syncer held for a purge: no round runs until Finish.
type PurgeHold struct {
	s     *Syncer
	lease plumbing.Hash
}

// HoldForPurge holds the syncer for a purge and syncs first (fetch,
// integrate, push), so that the remote holds nothing the wing lacks; it
// records the force push owed before anything is rewritten. When the
// remote cannot be synced the purge is refused (ErrPurgeNeedsRemote) and
// the syncer released.
func (s *Syncer) HoldForPurge(ctx context.Context) (*PurgeHold, error) {
	if err := s.r.CheckPurge(); err != nil {
		return nil, err
	}
	s.hold.Lock()
	lease, err := s.syncForPurge(ctx)
	if err != nil {
		s.hold.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrPurgeNeedsRemote, err)
	}
	return &PurgeHold{s: s, lease: lease}, nil
}

// syncForPurge runs a round's attempts (or the force push a purge still
// owes) and returns the remote head then, recorded as the lease.
func (s *Syncer) syncForPurge(ctx context.Context) (plumbing.Hash, error) {
	rctx, cancel := s.r.roundContext(ctx)
	defer cancel()
	if err := s.round(rctx); err != nil {
		s.failed(err)
		return plumbing.ZeroHash, err
	}
	lease, _ := s.r.git.Read(s.r.track) // zero: never fetched or pushed
	return lease, s.r.setForcePush(lease, true)
}

// DropRefs are the refs the purge deletes with its rewrite: the
// remote-tracking ref, which the force push replaces.
func (h *PurgeHold) DropRefs() []string {
	return []string{"refs/remotes/" + remoteName + "/"}
}

// Finish ends the hold once. With purged nil (the purge failed, nothing
// was rewritten) it clears the force push owed. Otherwise it records the
// purged blobs, so that the remote's old history is never integrated
// back, and force pushes the rewritten branch with a lease on the remote
// head synced with; a push that fails stays pending (logged, in Status
// and the status file) and the syncer's next rounds retry it. The purge
// is done locally either way: only a failure to record its state is
// returned.
func (h *PurgeHold) Finish(ctx context.Context, purged []string) error {
	s := h.s
	defer s.hold.Unlock()
	if purged == nil {
		return s.r.setForcePush(plumbing.ZeroHash, false)
	}
	if err := s.r.addPurged(purged); err != nil {
		return err
	}
	// Bounded: the curator's call waits for it, and the purge is done.
	rctx, cancel := context.WithTimeout(ctx, localRoundTimeout)
	defer cancel()
	if err := s.forcePush(rctx, h.lease); err != nil {
		s.failed(err)
	}
	return nil
}
