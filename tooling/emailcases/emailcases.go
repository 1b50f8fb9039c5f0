// Package emailcases holds the email rule's attack list (emails.txt), shared
// by the tests of every place that applies the rule (auth, auth/sso,
// auth/devidp, shard, shard/stdio), so that they cannot drift apart.
package emailcases

import (
	_ "embed"
	"strconv"
	"strings"
	"testing"
)

//go:embed emails.txt
var table string

// Case is one line of the table: an input and its canonical form, or an
// input the rule must refuse.
type Case struct {
	In, Want string // Want is "" when Refused
	Refused  bool
}

// Load parses the table, failing t on a malformed line or a table of fewer
// than 20 cases.
func Load(t testing.TB) []Case {
	t.Helper()
	var out []Case
	for line := range strings.Lines(table) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, quoted, ok := strings.Cut(line, " ")
		in, err := strconv.Unquote(quoted)
		if !ok || err != nil {
			t.Fatalf("emails.txt: bad line %q: %v", line, err)
		}
		c := Case{In: in, Want: want, Refused: want == "!"}
		if c.Refused {
			c.Want = ""
		}
		out = append(out, c)
	}
	if len(out) < 20 {
		t.Fatalf("emails.txt: only %d cases", len(out))
	}
	return out
}
