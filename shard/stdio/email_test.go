package stdio

import (
	"errors"
	"testing"

	"github.com/brainstem/brainstem/tooling/emailcases"
)

// TestCheckEmailRule: the stdio author (git's user.email) obeys the email
// rule (tooling/emailcases).
func TestCheckEmailRule(t *testing.T) {
	for _, c := range emailcases.Load(t) {
		in, want := c.In, c.Want
		got, err := checkEmail(in)
		switch {
		case c.Refused && err == nil:
			t.Errorf("checkEmail(%q) accepted %q", in, got)
		case c.Refused && !errors.Is(err, ErrNoEmail):
			t.Errorf("checkEmail(%q): %v does not wrap ErrNoEmail", in, err)
		case !c.Refused && (err != nil || got != want):
			t.Errorf("checkEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
