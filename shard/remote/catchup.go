package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// ErrLeaseLost: the remote branch no longer contains the head a purge
// synced with (its history was rewritten by someone else), so its new
// commits cannot be told apart; the force push stays pending.
var ErrLeaseLost = errors.New("remote: the remote branch no longer contains the head the purge synced with; the force push of the purged history stays pending")

// catchUp takes what the remote gained since a purge synced with it
// (the commits from lease to its head) as one ordinary commit on the
// wing's branch, never as a merge parent: their ancestors hold the purged
// content. They are fetched apart, into memory, so that the old history
// never reaches the disk; a new commit holding a purged blob is refused
// (ErrPurgedContent). It returns the remote head, the new lease.
func (s *Syncer) catchUp(ctx context.Context, lease plumbing.Hash) (plumbing.Hash, error) {
	apart, head, err := s.r.fetchApart(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if ok, err := apart.contains(head, lease); err != nil || !ok {
		return plumbing.ZeroHash, errors.Join(ErrLeaseLost, err)
	}
	if err := apart.refusePurged(lease, head); err != nil {
		return plumbing.ZeroHash, err
	}
	local, err := s.r.head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	in, err := s.r.integrateOnTop(apart, local, lease, head, s.by)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := s.r.Apply(local, in); err != nil {
		return plumbing.ZeroHash, err
	}
	s.log.Info("remote: took the remote's commits since the purge as one commit", "commit", in.Commit, "remote", head, "changed", len(in.Changed), "conflicts", len(in.Conflicts))
	return head, s.r.setForcePush(head, true)
}

// fetchApart fetches the remote branch into memory and returns a view of
// r whose objects are those (its files and refs are r's).
func (r *Remote) fetchApart(ctx context.Context) (*Remote, plumbing.Hash, error) {
	auth, err := r.auth()
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	mem := memory.NewStorage()
	repo, err := git.Init(mem, nil)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("remote: %w", err)
	}
	spec := gitconfig.RefSpec("+" + plumbing.NewBranchReferenceName(r.cfg.Branch).String() + ":" + r.track.String())
	rem := git.NewRemote(mem, &gitconfig.RemoteConfig{Name: remoteName, URLs: []string{r.cfg.URL}})
	err = rem.FetchContext(ctx, &git.FetchOptions{RemoteName: remoteName, RefSpecs: []gitconfig.RefSpec{spec}, Auth: auth})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, plumbing.ZeroHash, r.wrap("fetch", err)
	}
	ref, err := mem.Reference(r.track)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("remote: read the fetched head: %w", err)
	}
	apart := *r
	apart.repo = repo
	return &apart, ref.Hash(), nil
}

// integrateOnTop is Integrate of the remote's commits from lease to head
// (their objects in apart) as one commit on local: the merge of the
// lease's tree, the local one and the head's, with local as the only
// parent. Only the blobs the merged tree takes from the remote are copied
// into the repository.
func (r *Remote) integrateOnTop(apart *Remote, local, lease, head plumbing.Hash, by Identity) (Integration, error) {
	trees := [3]map[string]entry{}
	for i, side := range []struct {
		r *Remote
		c plumbing.Hash
	}{{apart, lease}, {r, local}, {apart, head}} {
		tree := plumbing.ZeroHash
		if !side.c.IsZero() {
			c, err := side.r.repo.CommitObject(side.c)
			if err != nil {
				return Integration{}, fmt.Errorf("remote: %w", err)
			}
			tree = c.TreeHash
		}
		var err error
		if trees[i], err = flatten(side.r.repo.Storer, tree); err != nil {
			return Integration{}, fmt.Errorf("%w: %w", ErrBadTree, err)
		}
	}
	// The merge reads the remote's blobs it checks (their size, whether
	// they load), so they are in the repository, durably, before it runs.
	blobs := r.batch()
	if err := r.copyBlobs(blobs, apart, trees[0], trees[2]); err != nil {
		blobs.Abort()
		return Integration{}, err
	}
	if err := blobs.Commit(); err != nil {
		return Integration{}, fmt.Errorf("remote: store the remote's notes: %w", err)
	}
	in, merged := r.merge(trees[0], trees[1], trees[2], DefaultMaxFileBytes)
	msg := fmt.Sprintf("Integrate %s of %s since the purge\n\nThe remote's commits from %s to %s, taken as one commit: their history holds purged content.\n",
		r.cfg.Branch, r.cfg.Redacted(), lease, head)
	var err error
	in.Commit, err = r.commitMerge(r.batch(), merged, by, msg, local)
	return in, err
}

// copyBlobs copies into the repository the blobs of the remote's tree
// that changed since the lease (what a merge may take or check), never a
// purged one.
func (r *Remote) copyBlobs(b gitstore.Sink, apart *Remote, base, remote map[string]entry) error {
	purged, err := r.purged()
	if err != nil {
		return err
	}
	for p, e := range remote {
		if base[p] == e || purged[e.Hash] || e.Hash.IsZero() || r.repo.Storer.HasEncodedObject(e.Hash) == nil {
			continue
		}
		data, err := gitstore.ReadRaw(apart.repo.Storer, plumbing.BlobObject, e.Hash, nil)
		if err != nil {
			return fmt.Errorf("remote: %s: %w", p, err)
		}
		if _, err := b.Put(plumbing.BlobObject, data); err != nil {
			return fmt.Errorf("remote: store %s: %w", p, err)
		}
	}
	return nil
}
