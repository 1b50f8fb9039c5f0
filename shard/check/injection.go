package check

import (
	"fmt"
	"strings"

	"github.com/brainstem/brainstem/brain/injection"
)

// Flagged is a note the injection audit flags (brain/injection): text that
// looks written to steer an agent rather than to inform it. A flag is no
// problem of the brain's layout (Report.OK ignores it; a curator may have
// promoted the note knowingly): it is a reason to read the note.
type Flagged struct {
	Path  string           `json:"path"` // brain-relative slash path
	Flags []injection.Flag `json:"flags"`
}

// audit records the note rel when the injection audit flags its bytes.
func (c *checker) audit(rel string, raw []byte) {
	if fs := injection.Scan(raw); len(fs) > 0 {
		c.rep.Flagged = append(c.rep.Flagged, Flagged{Path: rel, Flags: injection.Flags(fs)})
	}
}

// summary is the flags of f on one line: each rule with why.
func (f Flagged) summary() string {
	parts := make([]string, len(f.Flags))
	for i, fl := range f.Flags {
		parts[i] = fmt.Sprintf("%s (%s)", fl.Rule, fl.Why)
	}
	return strings.Join(parts, "; ")
}
