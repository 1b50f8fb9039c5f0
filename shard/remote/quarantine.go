package remote

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// quarantine is the storage a fetch writes into once the wing has purged
// content: the fetched objects and the fetched remote head stay in
// memory, over the repository's (which the fetch still reads, so that it
// sends its haves and gets only what the wing lacks), until the remote
// head is checked for purged blobs. git's receive-pack keeps a push in a
// quarantine directory the same way until its hooks accept it. So a stale
// clone's push of the old history never reaches the wing's disk.
//
// It embeds the repository's storage as the interface storage.Storer, so
// that go-git does not find the repository's pack writer and parses the
// fetched pack into memory instead.
type quarantine struct {
	storage.Storer
	mem  *memory.ObjectStorage
	refs map[plumbing.ReferenceName]*plumbing.Reference
}

func (q *quarantine) NewEncodedObject() plumbing.EncodedObject { return q.mem.NewEncodedObject() }

func (q *quarantine) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	return q.mem.SetEncodedObject(o)
}

func (q *quarantine) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, err := q.mem.EncodedObject(t, h); err == nil {
		return o, nil
	}
	return q.Storer.EncodedObject(t, h)
}

func (q *quarantine) HasEncodedObject(h plumbing.Hash) error {
	if q.mem.HasEncodedObject(h) == nil {
		return nil
	}
	return q.Storer.HasEncodedObject(h)
}

func (q *quarantine) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if n, err := q.mem.EncodedObjectSize(h); err == nil {
		return n, nil
	}
	return q.Storer.EncodedObjectSize(h)
}

func (q *quarantine) SetReference(ref *plumbing.Reference) error {
	q.refs[ref.Name()] = ref
	return nil
}

func (q *quarantine) CheckAndSetReference(ref, _ *plumbing.Reference) error {
	return q.SetReference(ref)
}

func (q *quarantine) Reference(n plumbing.ReferenceName) (*plumbing.Reference, error) {
	if ref, ok := q.refs[n]; ok {
		return ref, nil
	}
	return q.Storer.Reference(n)
}

// fetchQuarantined is Fetch for a wing with purged content: the remote
// branch is fetched into a quarantine, its new commits are checked for
// purged blobs (ErrPurgedContent: nothing is written), and only then are
// the fetched objects written to the repository, as one pack, and the
// remote head recorded. It returns the remote head (zero: none).
func (r *Remote) fetchQuarantined(ctx context.Context, opts *git.FetchOptions, purged map[plumbing.Hash]bool) (plumbing.Hash, error) {
	q := &quarantine{Storer: r.refs, mem: &memory.NewStorage().ObjectStorage, refs: map[plumbing.ReferenceName]*plumbing.Reference{}}
	err := git.NewRemote(q, &gitconfig.RemoteConfig{Name: remoteName, URLs: []string{r.cfg.URL}}).FetchContext(ctx, opts)
	if done, head, err := r.fetched(err); done {
		return head, err
	}
	ref, err := q.Reference(r.track)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("remote: read %s: %w", r.track, err)
	}
	view := *r
	if view.repo, err = git.Open(q, nil); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("remote: %w", err)
	}
	local, err := r.head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := view.refuseBlobs(purged, local, ref.Hash()); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := q.admit(r); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.git.Set(context.Background(), ref.Name(), ref.Hash()); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("remote: record the fetched head: %w", err)
	}
	return ref.Hash(), nil
}

// admit writes the quarantined objects to r's repository, as one
// durable pack (gitstore's pack writer), and makes go-git list the packs
// again.
func (q *quarantine) admit(r *Remote) error {
	if len(q.mem.Objects) == 0 {
		return nil
	}
	pw, err := r.objs.NewPackWriter()
	if err != nil {
		return fmt.Errorf("remote: write the fetched objects: %w", err)
	}
	for _, o := range q.mem.Objects {
		data, err := gitstore.ReadAll(o)
		if err == nil {
			_, err = pw.Put(o.Type(), data)
		}
		if err != nil {
			pw.Abort()
			return fmt.Errorf("remote: write the fetched objects: %w", err)
		}
	}
	if err := pw.Commit(); err != nil {
		return fmt.Errorf("remote: write the fetched objects: %w", err)
	}
	r.store.Reindex()
	return nil
}
