package history

import (
	"context"
	"fmt"
	"sort"
)

// Check reports where the files and the history disagree: a tracked file
// whose bytes are not its last version (changed behind the shard's back
// and not recorded yet), a file with no version, a version whose file is
// gone, a committer that keeps failing, a git lock left by a crashed
// writer. It changes nothing.
func (h *History) Check(ctx context.Context) ([]Problem, error) {
	if err := h.closed(); err != nil {
		return nil, err
	}
	var out []Problem
	if err := h.fresh(ctx); err != nil {
		out = append(out, Problem{Message: fmt.Sprintf("the committer cannot commit (%v): changes wait in the pending log", err)})
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	head, err := h.repo.refs.Read(h.repo.currentBranch())
	if err != nil {
		return nil, err
	}
	if err := h.syncModel(head); err != nil {
		return nil, err
	}
	return h.driftProblems(out, h.opt.Files)
}

// driftProblems appends to out the files that differ from the head (what
// the committer would record as changed behind the shard's back) and the
// git locks a crashed writer left, sorted by path.
func (h *History) driftProblems(out []Problem, list func() ([]string, error)) ([]Problem, error) {
	files, err := list()
	if err != nil {
		return nil, fmt.Errorf("history: list the wing's files: %w", err)
	}
	ds, err := h.reconcileOps(files, h.loadStatCache())
	if err != nil {
		return nil, err
	}
	inHead := map[string]bool{}
	for _, d := range ds {
		inHead[d.op.Path] = d.had
	}
	for _, op := range pairRenames(ds) {
		out = append(out, Problem{Path: op.Path, Message: checkMessage(op, inHead[op.Path])})
	}
	out = append(out, h.lockProblems()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func checkMessage(op Op, inHead bool) string {
	switch {
	case op.Remove:
		return "the file is gone but history's last version has it (removed behind the shard's back, not recorded yet)"
	case op.From != "":
		return "the file was moved here from " + op.From + " behind the shard's back (not recorded yet)"
	case !inHead:
		return "the file has no version in history (created behind the shard's back, not recorded yet)"
	}
	return "the file differs from its last version in history (changed behind the shard's back, not recorded yet)"
}
