package remote

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// refStorer is the repository's storer as the fetch and the push see it:
// its references are only the wing's branch and the fetched remote head,
// each read by name. go-git's own listing walks refs/ and reads every
// file there, the history engine's refs/heads/<branch>.lock included:
// empty while a commit is being made ("ref file is empty"), a bogus ref
// once written; a fetch or push that ran beside a commit failed.
// It embeds the concrete storage, so that go-git still finds its optional
// interfaces (a fetched pack is written as a pack, not object by object).
type refStorer struct {
	*filesystem.Storage
	names []plumbing.ReferenceName
}

// IterReferences lists the named references that exist, then has go-git
// list the packs again (see Remote.head), so that their commits are seen.
func (s refStorer) IterReferences() (storer.ReferenceIter, error) {
	defer s.Reindex()
	var refs []*plumbing.Reference
	for _, n := range s.names {
		ref, err := s.Reference(n)
		switch {
		case errors.Is(err, plumbing.ErrReferenceNotFound):
		case err != nil:
			return nil, err
		default:
			refs = append(refs, ref)
		}
	}
	return storer.NewReferenceSliceIter(refs), nil
}
