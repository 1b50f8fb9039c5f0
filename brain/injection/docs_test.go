package injection

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the rule table of docs/security.md")

const securityDoc = "../../docs/security.md"

// rulesTable is the markdown table of Rules, as docs/security.md shows it.
func rulesTable() string {
	var b strings.Builder
	b.WriteString("| rule | flags | in code |\n|---|---|---|\n")
	for _, r := range Rules() {
		where := "yes"
		if r.Name == RuleToolCall || r.Name == RuleHTMLComment {
			where = "no: shown there, not hidden"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Name, strings.ReplaceAll(r.Description, "|", `\|`), where) // a | ends a cell, even in code
	}
	return b.String()
}

// TestRulesDocumented: docs/security.md's table of the rules is generated
// from Rules (go test ./brain/injection -run TestRulesDocumented -update
// rewrites it).
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)(<!-- generated:injection_rules -->\n)(.*?)(<!-- /generated:injection_rules -->)`)
	m := block.FindSubmatchIndex(doc)
	if m == nil {
		t.Fatalf("%s lacks the block <!-- generated:injection_rules --><!-- /generated:injection_rules -->", securityDoc)
	}
	want := rulesTable()
	if string(doc[m[4]:m[5]]) == want {
		return
	}
	if !*update {
		t.Fatalf("the rule table of %s is out of date: run go test ./brain/injection -run TestRulesDocumented -update", securityDoc)
	}
	out := string(doc[:m[4]]) + want + string(doc[m[5]:])
	if err := os.WriteFile(securityDoc, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
