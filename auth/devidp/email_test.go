package devidp

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMintAppliesEmailRule: the development IdP refuses what the email rule
// refuses (auth/testdata/emails.txt) instead of signing it, and signs the
// canonical form of the rest.
func TestMintAppliesEmailRule(t *testing.T) {
	p := serve(t, newClock())
	v := verifier(t, p, newClock())
	f, err := os.Open("../testdata/emails.txt")
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
		tok, _, err := p.Mint(in, nil, time.Minute)
		if want == "!" {
			if err == nil {
				t.Errorf("Mint(%q) signed a token", in)
			}
			continue
		}
		if err != nil {
			t.Errorf("Mint(%q): %v", in, err)
			continue
		}
		if id, err := v.Verify(t.Context(), tok); err != nil || id.Email != want {
			t.Errorf("Mint(%q) token verifies as %q, %v; want %q", in, id.Email, err, want)
		}
	}
}
