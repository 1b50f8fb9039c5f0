package jsontext

import "testing"

func TestSkipSpaceAndStringEnd(t *testing.T) {
	if got := SkipSpace(" \t\r\n x", 0); got != 5 {
		t.Errorf("SkipSpace = %d, want 5", got)
	}
	if got := SkipSpace([]byte("  "), 0); got != 2 {
		t.Errorf("SkipSpace of white space only = %d, want 2", got)
	}
	for s, want := range map[string]int{`"ab"x`: 4, `"a\"b"`: 6, `"a\\"b`: 5, `"ab`: 4, `"a\`: 4} {
		if got := StringEnd(s, 0); got != want {
			t.Errorf("StringEnd(%s) = %d, want %d", s, got, want)
		}
	}
}
