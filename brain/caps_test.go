package brain

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestCapsImplication: curate implies write implies read, for Implied and
// Has alike, and nothing implies more than it should.
func TestCapsImplication(t *testing.T) {
	tests := []struct {
		c       Caps
		implied Caps
		name    string
	}{
		{0, 0, "none"},
		{CapRead, CapRead, "read"},
		{CapWrite, CapRead | CapWrite, "write"},
		{CapCurate, CapRead | CapWrite | CapCurate, "curate"},
		{CapRead | CapCurate, CapRead | CapWrite | CapCurate, "read,curate"},
	}
	for _, tt := range tests {
		if got := tt.c.Implied(); got != tt.implied {
			t.Errorf("%v.Implied() = %v, want %v", tt.c, got, tt.implied)
		}
		if tt.c.String() != tt.name {
			t.Errorf("String() = %q, want %q", tt.c.String(), tt.name)
		}
		for _, want := range []Caps{CapRead, CapWrite, CapCurate, CapRead | CapWrite, CapRead | CapWrite | CapCurate} {
			if got, exp := tt.c.Has(want), tt.implied&want == want; got != exp {
				t.Errorf("%v.Has(%v) = %v, want %v", tt.c, want, got, exp)
			}
		}
		if !tt.c.Has(0) {
			t.Errorf("%v.Has(0) = false", tt.c)
		}
	}
	if CapRead.Has(CapWrite) || CapWrite.Has(CapCurate) {
		t.Fatal("a weaker capability implies a stronger one")
	}
}

func TestCapsNames(t *testing.T) {
	for _, c := range []Caps{0, CapRead, CapWrite, CapCurate, CapRead | CapWrite, CapRead | CapWrite | CapCurate} {
		got, err := ParseCaps(c.Strings())
		if err != nil || got != c {
			t.Errorf("ParseCaps(%v) = %v, %v; want %v", c.Strings(), got, err, c)
		}
	}
	if got := (CapRead | CapWrite).Strongest(); got != "write" {
		t.Errorf("Strongest = %q", got)
	}
	if got := Caps(0).Strongest(); got != "none" {
		t.Errorf("Strongest of none = %q", got)
	}
	if !slices.Equal(CapCurate.Strings(), []string{"curate"}) {
		t.Errorf("Strings lists implied capabilities: %v", CapCurate.Strings())
	}
	for _, bad := range [][]string{{"admin"}, {"Read"}, {""}, {"read", "owner"}} {
		if _, err := ParseCaps(bad); err == nil {
			t.Errorf("ParseCaps(%q) accepted", bad)
		}
	}
}

func TestErrorShowsItsMessageOnly(t *testing.T) {
	cause := errors.New("store: not found")
	e := Wrap(cause, CodeNotFound, "no note %s", "payments/facts/x")
	wrapped := fmt.Errorf("store: get /srv/brain/wiki/payments/facts/x.md: %w", e)
	got, ok := As(wrapped)
	if !ok || got.Code != CodeNotFound || got.Message != "no note payments/facts/x" {
		t.Fatalf("As = %+v, %v", got, ok)
	}
	if !errors.Is(wrapped, cause) {
		t.Fatal("the cause is not reachable with errors.Is")
	}
	if e.Error() != e.Message {
		t.Fatalf("Error() = %q", e.Error())
	}
	if _, ok := As(errors.New("plain")); ok {
		t.Fatal("a plain error is shown")
	}
	if _, ok := As(nil); ok {
		t.Fatal("nil is shown")
	}
	if e := Errorf(CodeConflict, "x %d", 1); e.Message != "x 1" || e.Err != nil || e.Code != CodeConflict {
		t.Fatalf("Errorf = %+v", e)
	}
}
