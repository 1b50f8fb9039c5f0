package check

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/brainstem/brainstem/shard/remote"
)

// Remote is what the wing's git remote last reported (its syncer's
// status file), with the conflicts a curator has not settled yet.
type Remote struct {
	remote.Report
	// Open lists the conflicts whose note still holds the remote's
	// version from the merge: a curator settles each with brain_history
	// and brain_restore (any later version of the note settles it).
	Open []remote.ConflictRecord `json:"open_conflicts"`
}

// remote reads the status file the shard's syncer keeps in the brain's
// repository: a failing sync and the remote's rejected files are
// problems; conflicts are listed, open or settled.
func (c *checker) remote() {
	rep, ok, err := remote.ReadReport(filepath.Join(c.root, ".git"))
	switch {
	case err != nil:
		c.problem("remote", "%v", err)
		return
	case !ok:
		return
	}
	r := &Remote{Report: rep, Open: []remote.ConflictRecord{}}
	for _, cf := range rep.Conflicts {
		if c.open(cf) {
			r.Open = append(r.Open, cf)
		}
	}
	if rep.LastError != "" {
		msg := fmt.Sprintf("the wing does not sync with %s (last good sync: %s; %d commits not pushed yet; as of %s): %s",
			rep.URL, lastSync(rep.LastSync), rep.Unpushed, rep.Updated.Format(time.RFC3339), rep.LastError)
		if rep.Hint != "" {
			msg += ". Fix: " + rep.Hint
		}
		c.problem("remote", "%s", msg)
	}
	if rep.ForcePushPending {
		c.problem("remote", "a purge's rewritten history is not force pushed to %s yet (the shard retries it at each round): until it is, the remote still holds the purged content; see the error above", rep.URL)
	}
	for _, rej := range rep.Rejected {
		c.problem(rej.Path, "in the remote, not loaded (%s): %s; fix or remove it there", rej.Kind, rej.Reason)
	}
	c.rep.Remote = r
}

// open reports whether the conflict's note still holds the version the
// merge made current.
func (c *checker) open(cf remote.ConflictRecord) bool {
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(cf.Path)))
	if err != nil {
		return cf.Remote == "" && os.IsNotExist(err)
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data).String() == cf.Remote
}

// writeText writes the remote's summary and its open conflicts.
func (r *Remote) writeText(w io.Writer) {
	state := "in sync"
	if r.LastError != "" {
		state = "failing"
	}
	fmt.Fprintf(w, "remote %s (branch %s, wings %s): %s, last good sync %s, %d commits not pushed, %d conflicts listed, %d open\n",
		r.URL, r.Branch, strings.Join(r.Wings, ", "), state, lastSync(r.LastSync), r.Unpushed, len(r.Conflicts), len(r.Open))
	for _, cf := range r.Open {
		fmt.Fprintf(w, "%s: conflict settled by merge %.12s at %s: the remote's version is current, the wing's (%.12s) stays in history; keep one with brain_history and brain_restore\n",
			cf.Path, cf.Merge, cf.When.Format(time.RFC3339), cf.Local)
	}
}

// lastSync is when the remote last synced, "never" before its first sync.
func lastSync(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}
