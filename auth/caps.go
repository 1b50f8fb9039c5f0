package auth

import (
	"fmt"
	"strings"
)

// Caps is a set of capabilities a caller holds in one wing.
// Curate implies write, and write implies read (see Policy).
type Caps uint8

// The capabilities. Their order is their strength.
const (
	CapRead Caps = 1 << iota
	CapWrite
	CapCurate
)

var capNames = [...]struct {
	c    Caps
	name string
}{{CapRead, "read"}, {CapWrite, "write"}, {CapCurate, "curate"}}

// Has reports whether every capability in want is in c.
func (c Caps) Has(want Caps) bool { return c&want == want }

// Strings returns the capability names in a fixed order (read, write, curate).
func (c Caps) Strings() []string {
	out := make([]string, 0, len(capNames))
	for _, n := range capNames {
		if c.Has(n.c) {
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
			return 0, fmt.Errorf("auth: unknown capability %q (want read, write or curate)", s)
		}
	}
	return c, nil
}
