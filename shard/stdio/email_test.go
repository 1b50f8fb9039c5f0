package stdio

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestCheckEmailRule: the stdio author (git's user.email) obeys the email
// rule of auth/testdata/emails.txt.
func TestCheckEmailRule(t *testing.T) {
	f, err := os.Open("../../auth/testdata/emails.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want, quoted, _ := strings.Cut(line, " ")
		in, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		got, err := checkEmail(in)
		switch {
		case want == "!" && err == nil:
			t.Errorf("checkEmail(%q) accepted %q", in, got)
		case want == "!" && !errors.Is(err, ErrNoEmail):
			t.Errorf("checkEmail(%q): %v does not wrap ErrNoEmail", in, err)
		case want != "!" && (err != nil || got != want):
			t.Errorf("checkEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
