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

func TestBufferLines(t *testing.T) {
	var b Buffer
	b.Write([]byte("{\"msg\":\"policy reloaded\",\"n\":1}\nnot json\n{\"msg\":\"policy file rejected; kept\"}\n{\"msg\":7}\n{\"msg\":\"policy reloaded\",\"n\":2}"))
	if got := b.Lines("policy reloaded"); len(got) != 2 || got[1]["n"] != 2.0 {
		t.Errorf("Lines(policy reloaded) = %v", got)
	}
	if got := b.Lines("policy file rejected"); len(got) != 1 {
		t.Errorf("Lines(policy file rejected) = %v", got)
	}
	if got := b.Lines("mint"); len(got) != 0 {
		t.Errorf("Lines(mint) = %v", got)
	}
}
