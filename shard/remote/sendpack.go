package remote

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// receivePack opens a push session and returns the remote branch's head
// it advertises (zero: no such branch).
func (r *Remote) receivePack(ctx context.Context, auth transport.AuthMethod) (transport.ReceivePackSession, *packp.AdvRefs, plumbing.Hash, error) {
	ep, err := transport.NewEndpoint(r.cfg.URL)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	cli, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	sess, err := cli.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		sess.Close()
		return nil, nil, plumbing.ZeroHash, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		sess.Close()
		return nil, nil, plumbing.ZeroHash, err
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
	branch := plumbing.NewBranchReferenceName(r.cfg.Branch)
	refs, err := ar.AllReferences()
	if err != nil {
		return err
	}
	if cur, ok := refs[branch]; ok != !old.IsZero() || ok && cur.Hash() != old {
		return ErrRemoteMoved
	}
	hs, err := r.newObjects(head, old)
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
// from (their parents outside the list) lack.
func (r *Remote) newObjects(head, old plumbing.Hash) ([]plumbing.Hash, error) {
	fresh, edges, err := r.newCommits(head, old)
	if err != nil {
		return nil, err
	}
	w := &treeWalk{r: r, have: map[plumbing.Hash]bool{}}
	for _, c := range edges {
		if err := w.add(c.TreeHash, false); err != nil {
			return nil, err
		}
	}
	for _, c := range fresh {
		w.out = append(w.out, c.Hash)
		if err := w.add(c.TreeHash, true); err != nil {
			return nil, err
		}
	}
	return w.out, nil
}

// treeWalk marks trees and what is below them as had, listing in out
// what was not had yet. It reads a tree's raw bytes itself: a push reads
// every tree its new commits made (a hall of 2,000 notes is a tree of
// 2,000 entries at each commit), and go-git's decoding, a string and a
// struct per entry, was the push's largest cost beside the writes.
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
	raw, err := w.read(h)
	if err != nil {
		return fmt.Errorf("remote: read tree %s: %w", h, err)
	}
	var subtrees []plumbing.Hash
	err = treeEntries(raw, func(kind entryKind, id plumbing.Hash) {
		switch {
		case kind == entryTree:
			subtrees = append(subtrees, id)
		case kind == entryGitlink || w.have[id]:
		default:
			w.have[id] = true
			if list {
				w.out = append(w.out, id)
			}
		}
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

// read returns tree h's raw bytes, in a buffer reused by the next read.
func (w *treeWalk) read(h plumbing.Hash) ([]byte, error) {
	o, err := w.r.repo.Storer.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if int64(cap(w.buf)) < o.Size() {
		w.buf = make([]byte, o.Size())
	}
	w.buf = w.buf[:o.Size()]
	if _, err := io.ReadFull(rd, w.buf); err != nil {
		return nil, err
	}
	return w.buf, nil
}

// ErrTreeFormat: a tree of the wing's own history, read for a push, is
// not in git's tree format (the push is not made).
var ErrTreeFormat = errors.New("remote: a tree object is not in git's tree format")

// Kinds of a tree's entries, by their mode as git reads it: a tree, a
// blob (a file or a symbolic link), or a gitlink (a submodule's commit,
// an object of another repository).
type entryKind uint8

const (
	entryBlob entryKind = iota
	entryTree
	entryGitlink
)

// treeEntries calls f with the kind and id of each entry of the raw tree
// b, git's format: "<octal mode> <name>\x00<20-byte id>" again and again.
func treeEntries(b []byte, f func(entryKind, plumbing.Hash)) error {
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp <= 0 || nul < sp+2 || len(b) < nul+1+len(plumbing.Hash{}) {
			return ErrTreeFormat
		}
		var mode uint32
		for _, d := range b[:sp] {
			if d < '0' || d > '7' || mode > math.MaxUint32>>3 {
				return ErrTreeFormat
			}
			mode = mode<<3 | uint32(d-'0')
		}
		var id plumbing.Hash
		b = b[nul+1:]
		b = b[copy(id[:], b):]
		switch mode & 0o170000 { // the type bits, as git and go-git read them
		case 0o040000:
			f(entryTree, id)
		case 0o100000, 0o120000:
			f(entryBlob, id)
		default:
			f(entryGitlink, id)
		}
	}
	return nil
}

// Colours of newCommits' walk.
const (
	fromHead = 1 // reachable from the new head
	fromOld  = 2 // reachable from the remote's head
)

// newCommits returns the commits reachable from head and not from old,
// and the parents of theirs outside that set (the edges). It
// walks both sides by commit time, as git does, and stops once every
// commit left to visit is reachable from old: a walk of the new commits,
// not of the whole history.
func (r *Remote) newCommits(head, old plumbing.Hash) (fresh, edges []*object.Commit, err error) {
	flags := map[plumbing.Hash]uint8{}
	commits := map[plumbing.Hash]*object.Commit{}
	var q byTime
	push := func(id plumbing.Hash, f uint8) error {
		if flags[id]&f == f {
			return nil
		}
		flags[id] |= f
		c := commits[id]
		if c == nil {
			if c, err = r.repo.CommitObject(id); err != nil {
				return fmt.Errorf("remote: %w", err)
			}
			commits[id] = c
		}
		heap.Push(&q, c)
		return nil
	}
	if err := push(head, fromHead); err != nil {
		return nil, nil, err
	}
	if !old.IsZero() {
		if err := push(old, fromOld); err != nil {
			return nil, nil, err
		}
	}
	for q.Len() > 0 && !q.allOld(flags) {
		c := heap.Pop(&q).(*object.Commit)
		for _, p := range c.ParentHashes {
			if err := push(p, flags[c.Hash]); err != nil {
				return nil, nil, err
			}
		}
	}
	seen := map[plumbing.Hash]bool{}
	for id, f := range flags {
		if f != fromHead {
			continue
		}
		fresh = append(fresh, commits[id])
		for _, p := range commits[id].ParentHashes {
			if flags[p] != fromHead && !seen[p] {
				seen[p] = true
				edges = append(edges, commits[p])
			}
		}
	}
	return fresh, edges, nil
}

// byTime is a max-heap of commits by committer time.
type byTime []*object.Commit

func (q byTime) Len() int           { return len(q) }
func (q byTime) Less(i, j int) bool { return q[i].Committer.When.After(q[j].Committer.When) }
func (q byTime) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *byTime) Push(x any)        { *q = append(*q, x.(*object.Commit)) }
func (q *byTime) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

// allOld reports whether every queued commit is reachable from old.
func (q byTime) allOld(flags map[plumbing.Hash]uint8) bool {
	for _, c := range q {
		if flags[c.Hash]&fromOld == 0 {
			return false
		}
	}
	return true
}
