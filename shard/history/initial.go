package history

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/shard/gitstore"
)

// initialCommit gives a wing without history one commit of every tracked
// file on disk (action initial, by the service identity), written
// straight into one pack, file by file, so that 100,000 notes neither
// become 100,000 loose objects nor sit in memory at once. It builds on
// the branch head if there is one (another wing's history in a shared
// repository). It reports whether the wing's files were read (false when
// another process made the wing's first commit meanwhile). writeMu is held.
func (h *History) initialCommit(ctx context.Context) (bool, error) {
	start := time.Now()
	files, err := h.opt.Files()
	if err != nil {
		return false, fmt.Errorf("history: list the wing's files: %w", err)
	}
	sort.Strings(files)
	lock, head, err := h.lockHead(ctx)
	if err != nil {
		return false, err
	}
	defer lock.Release()
	h.mu.RLock()
	has := len(h.ix.byPath) > 0
	h.mu.RUnlock()
	if has {
		return false, nil // another process made it meanwhile: reconcile covers the rest
	}
	pw, err := h.objs.NewPackWriter()
	if err != nil {
		return false, err
	}
	changes, err := h.packFiles(pw, files)
	if err != nil {
		pw.Abort()
		h.discardModel()
		return false, err
	}
	if len(changes) == 0 {
		pw.Abort()
		return true, nil
	}
	root, err := h.tree.Write(pw)
	if err != nil {
		pw.Abort()
		h.discardModel()
		return false, err
	}
	pl := plan{meta: meta{Subject: "Initial history of wing " + h.opt.Wing, Wing: h.opt.Wing, Action: ActionInitial},
		author: h.opt.Service, at: h.opt.Now()}
	id, err := writeCommit(pw, pl, root, head)
	if err == nil {
		_, err = pw.Finish()
	} else {
		pw.Abort()
	}
	if err == nil {
		err = lock.Commit([]byte(id.String() + "\n"))
	}
	if err != nil {
		h.discardModel()
		return false, err
	}
	h.tree.Base = id
	ci := &commitInfo{id: id, at: pl.at, author: pl.author.Email, action: ActionInitial}
	h.mu.Lock()
	h.ix.apply(ci, changes)
	h.ix.head = id
	h.snapDirty++
	h.mu.Unlock()
	h.idxAll = true
	h.log.Info("history: made the initial commit", "files", len(changes), "commit", id, "took_seconds", time.Since(start).Seconds())
	return true, nil
}

// packFiles reads each file, puts its blob into the pack and the tree
// model, and returns the versions they make.
func (h *History) packFiles(pw *gitstore.PackWriter, files []string) ([]pathChange, error) {
	var changes []pathChange
	for i, p := range files {
		if i > 0 && files[i-1] == p || !h.opt.Tracked(p) || strings.HasPrefix(p, "/") {
			continue
		}
		before, _ := os.Lstat(h.abs(p))
		b, err := h.readFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		blob, err := pw.Put(plumbing.BlobObject, b)
		if err != nil {
			return nil, err
		}
		h.sawFile(p, before, blob)
		if err := h.tree.Set(h.repo.treePath(p), blob, 0); err != nil {
			return nil, err
		}
		changes = append(changes, pathChange{path: p, blob: blob, sum: sumOf(b), purged: strings.HasPrefix(string(b), purgeNotice)})
	}
	return changes, nil
}
