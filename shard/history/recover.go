package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// recover commits the changes the pending log holds past the last one in
// history, if they landed: a change landed when its marker survived, when
// every file it changes holds its content now (removed for a removal; for
// a rename, the source gone), or when a later change of the same path was
// based on its content. Others never reached the disk (the caller
// acknowledges a change only once its files are durable): they are
// dropped. writeMu is held.
func (h *History) recover(ctx context.Context, rec *recovered) error {
	h.mu.RLock()
	last := h.ix.lastSeq
	h.mu.RUnlock()
	var seqs []uint64
	for s := range rec.changes {
		if s > last && !rec.abandoned[s] {
			seqs = append(seqs, s)
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var plans []plan
	dropped := 0
	for i, s := range seqs {
		r := rec.changes[s]
		ok := rec.landed[s] || basedOn(r, seqs[i+1:], rec)
		if !ok {
			var err error
			if ok, err = h.onDisk(r); err != nil {
				return err
			}
		}
		if !ok {
			dropped++
			continue
		}
		plans = append(plans, h.planOf(&Pending{seq: s, rec: r}))
	}
	for len(plans) > 0 {
		n := min(len(plans), maxBatch)
		if _, _, err := h.commitPlans(ctx, plans[:n]); err != nil {
			return fmt.Errorf("history: commit the changes recovered from the pending log: %w", err)
		}
		plans = plans[n:]
	}
	if len(seqs) > 0 {
		h.log.Info("history: settled the pending log", "committed", len(seqs)-dropped, "dropped_never_landed", dropped)
	}
	return nil
}

// basedOn reports whether a later change replaced the content r wrote.
func basedOn(r *record, later []uint64, rec *recovered) bool {
	for _, op := range r.change.Ops {
		if op.Remove {
			continue
		}
		sum := sumOf(op.Content)
		for _, s := range later {
			for _, o := range rec.changes[s].change.Ops {
				if (o.Path == op.Path || o.From == op.Path) && o.HadBase && o.Base == sum {
					return true
				}
			}
		}
	}
	return false
}

// onDisk reports whether the files hold everything r changed.
func (h *History) onDisk(r *record) (bool, error) {
	for _, op := range r.change.Ops {
		b, err := h.readFile(op.Path)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return false, err
		case op.Remove:
			if err == nil {
				return false, nil
			}
			continue
		case err != nil || !bytes.Equal(b, op.Content):
			return false, nil
		}
		if op.From != "" {
			if _, err := os.Lstat(h.abs(op.From)); err == nil {
				return false, nil
			} else if !errors.Is(err, fs.ErrNotExist) {
				return false, fmt.Errorf("history: %w", err)
			}
		}
	}
	return true, nil
}

func (h *History) abs(rel string) string { return filepath.Join(h.opt.Root, filepath.FromSlash(rel)) }

// readFile reads the tracked file rel; a path that is not a regular file
// (a symlink, a directory) reads as missing.
func (h *History) readFile(rel string) ([]byte, error) {
	p := h.abs(rel)
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("history: %s is not a regular file: %w", rel, fs.ErrNotExist)
	}
	if h.opt.onRead != nil {
		h.opt.onRead(rel)
	}
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("history: %w", err)
	}
	return b, err
}
