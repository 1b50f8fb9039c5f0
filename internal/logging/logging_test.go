package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSeconds: the process logger writes durations as seconds.
func TestSeconds(t *testing.T) {
	var b bytes.Buffer
	l, err := New(&b, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("x", "wait", 1500*time.Millisecond, slog.Group("g", "d", 2*time.Second))
	if s := b.String(); !strings.Contains(s, `"wait":1.5`) || !strings.Contains(s, `"g":{"d":2}`) {
		t.Fatalf("durations not in seconds: %s", s)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ format, level, want string }{
		{"xml", "info", `format "xml" must be json or text`},
		{"json", "loud", `"loud" must be debug, info, warn or error`},
	} {
		if _, err := New(&bytes.Buffer{}, tc.format, tc.level); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) = %v, want %q", tc.format, tc.level, err, tc.want)
		}
	}
	for _, ok := range []string{"debug", "INFO", "", "warning", "Error"} {
		if _, err := ParseLevel(ok); err != nil {
			t.Errorf("ParseLevel(%q): %v", ok, err)
		}
	}
}
