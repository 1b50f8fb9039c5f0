package tools

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// TestArgumentNamesAreExact runs testdata/argument-names.txt: an argument
// name that matches a known one only under case folding is an unknown
// argument (invalid_argument naming it), and the call changes nothing.
func TestArgumentNamesAreExact(t *testing.T) {
	s, _, root := fixture(t)
	f, err := os.Open("testdata/argument-names.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := tree(t, root)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tool, args, _ := strings.Cut(line, " ")
		n++
		res, isErr := call(t, s, curator, tool, args)
		if !isErr {
			t.Errorf("%s %s succeeded: %s", tool, args, res)
			continue
		}
		if code, msg := errCode(t, res); code != brain.CodeInvalidArgument || !strings.Contains(msg, "unknown argument") {
			t.Errorf("%s %s: %s %q, want invalid_argument naming the unknown argument", tool, args, code, msg)
		}
	}
	if n < 20 {
		t.Fatalf("only %d cases", n)
	}
	if after := tree(t, root); after != before {
		t.Errorf("refused calls changed the brain:\n%s\n---\n%s", before, after)
	}
}
