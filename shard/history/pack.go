package history

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Packing policy: loose objects are packed once there are this many
// (each commit of a batch of one writes a blob, the trees on its path
// and itself) or they hold packBytes, and every mergeEvery packs of
// commit batches the smallest packs are merged while the next is less
// than twice their sum (git's geometric repacking, factor 2), which
// keeps the number of packs logarithmic in the number of objects.
const (
	defaultPackEvery = 1000
	packBytes        = 64 << 20
	mergeEvery       = 4
)

// packLoose packs every loose object of the repository into one new pack
// (EncodePack: deltas on the objects they replaced), makes it durable,
// deletes the loose objects it holds, then merges small packs. Another process packing at
// the same time makes it skip a round. writeMu is held.
func (h *History) packLoose() error {
	lock := h.objs.PackingLock()
	if lock == nil {
		return nil // someone else is packing
	}
	defer lock.Release()
	loose, err := h.objs.ListLoose()
	if err != nil || len(loose) == 0 {
		return err
	}
	start := time.Now()
	hashes := make([]plumbing.Hash, len(loose))
	for i, l := range loose {
		hashes[i] = l.Hash
	}
	hints := h.tree.Hints
	if _, err := h.objs.EncodePack(hashes, hints); err != nil {
		return err
	}
	for _, id := range hashes {
		delete(hints, id)
	}
	for _, l := range loose {
		if err := os.Remove(l.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("history: could not delete a packed loose object", "path", l.Path, "err", err)
		}
	}
	h.loose.Store(0)
	h.looseBytes.Store(0)
	h.log.Debug("history: packed loose objects", "objects", len(loose), "took_seconds", time.Since(start).Seconds())
	return h.mergeLocked()
}

// mergePacks merges the small packs gitstore.GeometricSplit picks into
// one, under the packing lock.
func (h *History) mergePacks() error {
	lock := h.objs.PackingLock()
	if lock == nil {
		return nil
	}
	defer lock.Release()
	return h.mergeLocked()
}

func (h *History) mergeLocked() error {
	h.newPacks.Store(0)
	return h.objs.MergeSmall(h.tree.Hints)
}
