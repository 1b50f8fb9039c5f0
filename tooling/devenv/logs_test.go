package devenv

import (
	"bytes"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/internal/logging"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// TestComponentLogger: a component's logger names it once per line, and a
// part of it that names its own (the gateway's "oauth") replaces it, so no
// line carries the key twice.
func TestComponentLogger(t *testing.T) {
	var b bytes.Buffer
	base, err := logging.New(&b, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	gw := componentLogger(base, "gateway")
	gw.Info("a")
	gw.With("component", "oauth").With("client", "ci-bot").Info("b")
	gw.With("wing", "platform").WithGroup("g").Info("c", "n", 1)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{`"component":"gateway"`, `"component":"oauth"`, `"component":"gateway","g":{"n":1}`}
	for i, line := range lines {
		if err := logcheck.DuplicateKey(line); err != nil || i >= len(want) || !strings.Contains(line, want[i]) || strings.Count(line, `"component"`) != 1 {
			t.Errorf("line %d %s (%v), want %s once", i, line, err, want[min(i, len(want)-1)])
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[1], `"client":"ci-bot"`) || !strings.Contains(lines[2], `"wing":"platform"`) {
		t.Errorf("lines:\n%s", b.String())
	}
}
