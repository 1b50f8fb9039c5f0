package main

import (
	"context"
	"strings"
	"testing"
)

// TestShardStdioEmailRule: `brainstem shard --stdio --email` applies the
// email rule (auth.CanonicalEmail) before serving: a refused address is a
// usage error naming the flag, and nothing is served.
func TestShardStdioEmailRule(t *testing.T) {
	brain := t.TempDir()
	for _, email := range []string{"\u212aate@example.com", "ann\n@example.com", "ann@example.com\u00a0", "not-an-email"} {
		var out, errb strings.Builder
		code := run(context.Background(), []string{"shard", "--stdio", "--brain", brain, "--wing", "payments", "--email", email},
			strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "--email") {
			t.Errorf("--email %q: code %d, stderr %q; want a usage error about --email", email, code, errb.String())
		}
	}
}
