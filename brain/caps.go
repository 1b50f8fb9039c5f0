package brain

import (
	"fmt"
	"strings"
)

// Caps is a set of capabilities a caller holds in one wing. Curate implies
// write, and write implies read: Implied adds what a set implies, and Has
// counts it, so a holder of curate may call every tool.
type Caps uint8

// The capabilities. Their order is their strength.
const (
	CapRead Caps = 1 << iota
	CapWrite
	CapCurate
)

// CapabilityMetaKey is the _meta key of a tool descriptor naming the one
// capability the tool needs ("read", "write" or "curate"): the shard sets
// it, the gateway lists a tool only to callers holding it.
const CapabilityMetaKey = "brainstem/capability"

var capNames = [...]struct {
	c    Caps
	name string
}{{CapRead, "read"}, {CapWrite, "write"}, {CapCurate, "curate"}}

// Implied returns c with every capability it implies: curate adds write,
// write adds read.
func (c Caps) Implied() Caps {
	if c&CapCurate != 0 {
		c |= CapWrite
	}
	if c&CapWrite != 0 {
		c |= CapRead
	}
	return c
}

// Has reports whether c, with what it implies, includes every capability
// in want.
func (c Caps) Has(want Caps) bool { return c.Implied()&want == want }

// Strings returns the names of the capabilities in c, without those it
// only implies, in a fixed order (read, write, curate).
func (c Caps) Strings() []string {
	out := make([]string, 0, len(capNames))
	for _, n := range capNames {
		if c&n.c != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// String returns the names joined by commas, or "none".
func (c Caps) String() string {
	if c == 0 {
		return "none"
	}
	return strings.Join(c.Strings(), ",")
}

// Strongest returns the name of the strongest capability in c ("curate",
// "write" or "read"), or "none": what a tool that needs c asks for.
func (c Caps) Strongest() string {
	if n := c.Strings(); len(n) > 0 {
		return n[len(n)-1]
	}
	return "none"
}

// ParseCaps parses capability names such as ["read", "write"].
func ParseCaps(names []string) (Caps, error) {
	var c Caps
	for _, s := range names {
		found := false
		for _, n := range capNames {
			if s == n.name {
				c |= n.c
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("brain: unknown capability %q (want read, write or curate)", s)
		}
	}
	return c, nil
}
