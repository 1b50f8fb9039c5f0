package remote

import (
	"context"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// receivePack opens a push session with the remote's credentials and
// returns the remote branch's head it advertises (zero: no such branch);
// its errors name op, the push it is for.
func (r *Remote) receivePack(ctx context.Context, op string) (transport.ReceivePackSession, *packp.AdvRefs, plumbing.Hash, error) {
	auth, err := r.auth()
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	ep, err := transport.NewEndpoint(r.cfg.URL)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, r.wrap(op, err)
	}
	cli, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, r.wrap(op, err)
	}
	sess, err := cli.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, r.wrap(op, err)
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		sess.Close()
		return nil, nil, plumbing.ZeroHash, r.wrap(op, err)
	}
	refs, err := ar.AllReferences()
	if err != nil {
		sess.Close()
		return nil, nil, plumbing.ZeroHash, r.wrap(op, err)
	}
	if ref, ok := refs[plumbing.NewBranchReferenceName(r.cfg.Branch)]; ok {
		return sess, ar, ref.Hash(), nil
	}
	return sess, ar, plumbing.ZeroHash, nil
}

// sendPack moves the remote branch from old to head on the session
// receivePack opened, git's send-pack, sending the objects of the commits
// old lacks: found by a walk of those commits only, against the trees of
// the commits they grew from. go-git's push lists every object of the
// remote's whole history first, at each push, so that its CPU grew with
// the wing's history and slowed the writes beside it. A remote branch
// that was not at old when the session opened gives ErrRemoteMoved.
func (r *Remote) sendPack(ctx context.Context, sess transport.ReceivePackSession, ar *packp.AdvRefs, old, head plumbing.Hash) error {
	return r.send(ctx, sess, ar, old, head, old)
}

// send is sendPack with the objects of the commits base lacks (zero:
// every object head reaches, for a force push, whose old head is no
// longer in the repository).
func (r *Remote) send(ctx context.Context, sess transport.ReceivePackSession, ar *packp.AdvRefs, old, head, base plumbing.Hash) error {
	branch := plumbing.NewBranchReferenceName(r.cfg.Branch)
	refs, err := ar.AllReferences()
	if err != nil {
		return err
	}
	if cur, ok := refs[branch]; ok != !old.IsZero() || ok && cur.Hash() != old {
		return ErrRemoteMoved
	}
	hs, err := r.newObjects(head, base, nil)
	if err != nil {
		return err
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: branch, Old: old, New: head}}
	return r.sendObjects(ctx, sess, req, hs, !ar.Capabilities.Supports(capability.OFSDelta))
}

// packWindow is the delta window of a pushed pack (git's default).
const packWindow = 10

func (r *Remote) sendObjects(ctx context.Context, sess transport.ReceivePackSession, req *packp.ReferenceUpdateRequest, hs []plumbing.Hash, refDeltas bool) error {
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(wr, r.repo.Storer, refDeltas).Encode(hs, packWindow)
		wr.CloseWithError(err)
		done <- err
	}()
	rs, err := sess.ReceivePack(ctx, req)
	rd.Close() // unblocks the encoder if the send stopped early
	if eerr := <-done; err == nil && eerr != nil {
		err = fmt.Errorf("encode the pack: %w", eerr)
	}
	if err != nil {
		return err
	}
	if rs != nil {
		return rs.Error()
	}
	return nil
}

// newObjects lists the commits reachable from head and not from old, and
// the trees and blobs of theirs that the trees of the commits they grew
// from (their parents outside the list) lack; each, if set, is called
// with every commit listed and the objects listed with it (its own tree's
// new ones), and an error it returns ends the walk.
func (r *Remote) newObjects(head, old plumbing.Hash, each func(c *object.Commit, objs []plumbing.Hash) error) ([]plumbing.Hash, error) {
	wk, err := r.newCommits(head, old)
	if err != nil {
		return nil, err
	}
	w := &treeWalk{r: r, have: map[plumbing.Hash]bool{}}
	for _, c := range wk.Edges {
		if err := w.add(c.TreeHash, false); err != nil {
			return nil, err
		}
	}
	for _, c := range wk.Fresh {
		w.out = append(w.out, c.Hash)
		n := len(w.out)
		if err := w.add(c.TreeHash, true); err != nil {
			return nil, err
		}
		if each != nil {
			if err := each(c, w.out[n:]); err != nil {
				return nil, err
			}
		}
	}
	return w.out, nil
}

// treeWalk marks trees and what is below them as had, listing in out
// what was not had yet. It reads a tree's raw bytes (gitstore.WalkTree):
// a push reads every tree its new commits made (a hall of 2,000 notes is
// a tree of 2,000 entries at each commit).
type treeWalk struct {
	r    *Remote
	have map[plumbing.Hash]bool
	out  []plumbing.Hash
	buf  []byte
}

// add marks tree h and everything below it as had, appending to out
// (when list) what was not had yet; a tree had is not read again.
func (w *treeWalk) add(h plumbing.Hash, list bool) error {
	if w.have[h] {
		return nil
	}
	w.have[h] = true
	if list {
		w.out = append(w.out, h)
	}
	raw, err := gitstore.ReadRaw(w.r.repo.Storer, plumbing.TreeObject, h, w.buf)
	if err != nil {
		return fmt.Errorf("remote: read tree %s: %w", h, err)
	}
	w.buf = raw
	var subtrees []plumbing.Hash
	err = gitstore.WalkTree(raw, func(mode filemode.FileMode, _ []byte, id plumbing.Hash) error {
		switch {
		case mode == filemode.Dir:
			subtrees = append(subtrees, id)
		case mode == filemode.Submodule || w.have[id]: // a gitlink names another repository's commit
		default:
			w.have[id] = true
			if list {
				w.out = append(w.out, id)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remote: tree %s: %w", h, err)
	}
	for _, id := range subtrees {
		if err := w.add(id, list); err != nil {
			return err
		}
	}
	return nil
}

// newCommits is gitstore.NewCommits in the wing's repository: the
// commits reachable from head and not from old, and the parents of theirs
// outside that set, by a walk of the new commits only.
func (r *Remote) newCommits(head, old plumbing.Hash) (*gitstore.Walk, error) {
	w, err := gitstore.NewCommits(r.repo.CommitObject, head, old, 0)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	return w, nil
}
