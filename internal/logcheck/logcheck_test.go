package logcheck

import "testing"

func TestDuplicateKey(t *testing.T) {
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`, false},
		{`{"a":1,"a":2}`, true},
		{`{"x":{"wing":"a","wing":"a"}}`, true},
		{`{"x":[{"k":1,"k":2}]}`, true},
		{`not json`, true},
		{``, true},
	} {
		if err := DuplicateKey(tc.line); (err != nil) != tc.bad {
			t.Errorf("DuplicateKey(%q) = %v, want an error: %v", tc.line, err, tc.bad)
		}
	}
}
