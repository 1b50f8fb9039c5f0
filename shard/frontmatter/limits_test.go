package frontmatter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// aliasHeavy returns a note whose 300 keys alias one 1000-item list: small
// on disk, 300k values once aliases are expanded.
func aliasHeavy() string {
	var b strings.Builder
	b.WriteString("---\ntitle: x\na: &a [")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("x")
	}
	b.WriteString("]\n")
	for i := range 300 {
		fmt.Fprintf(&b, "k%d: *a\n", i)
	}
	b.WriteString("---\n")
	return b.String()
}

func TestAliasExpansionIsBounded(t *testing.T) {
	raw := aliasHeavy()
	d, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Strings("k7"); len(got) != 1000 {
		t.Fatalf("Strings through an alias: %d items", len(got))
	}
	d.Set("title", "y")
	if !errors.Is(d.Err(), ErrInvalidYAML) || !strings.Contains(d.Err().Error(), "too many values") {
		t.Fatalf("Err() = %v, want a refusal for alias expansion", d.Err())
	}
	if string(d.Bytes()) != raw {
		t.Fatal("refused edit changed the note")
	}
}

func TestDecodeRefusesAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("---\n")
	d, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := d.Decode(&m); err == nil {
		t.Fatal("Decode expanded an alias bomb")
	}
	d.Set("title", "x") // must be refused quickly, not expand 10^12 values
	if !errors.Is(d.Err(), ErrInvalidYAML) {
		t.Fatalf("Err() = %v", d.Err())
	}
}

// A key aliasing the mapping that contains it (found by FuzzEdit): edits
// must finish quickly, refusing rather than expanding forever.
func TestSelfReferencingAlias(t *testing.T) {
	raw := "---\n&x \nb: *x\n---"
	d, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Get("b"); ok {
		t.Error("Get of a mapping alias reported a scalar")
	}
	d.SetStrings("a", nil)
	if !errors.Is(d.Err(), ErrInvalidYAML) {
		t.Fatalf("Err() = %v", d.Err())
	}
	if string(d.Bytes()) != raw {
		t.Fatal("refused edit changed the note")
	}
}
