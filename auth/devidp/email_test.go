package devidp

import (
	"testing"
	"time"

	"github.com/brainstem/brainstem/tooling/emailcases"
)

// TestMintAppliesEmailRule: the development IdP refuses what the email rule
// refuses (tooling/emailcases) instead of signing it, and signs the
// canonical form of the rest.
func TestMintAppliesEmailRule(t *testing.T) {
	p := serve(t, newClock())
	v := verifier(t, p, newClock())
	for _, c := range emailcases.Load(t) {
		in, want := c.In, c.Want
		tok, _, err := p.Mint(in, nil, time.Minute)
		if c.Refused {
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
