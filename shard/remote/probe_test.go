package remote

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	url, tokenFile := httpRemote(t)
	ctx := context.Background()
	if err := Probe(ctx, Config{URL: url, Wing: "eng", TokenFile: tokenFile, Username: "git"}); err != nil {
		t.Fatalf("probe of an empty remote with the right token: %v", err)
	}
	wrong := filepath.Join(t.TempDir(), "token")
	mustWrite(t, wrong, []byte("not-it-4321"), 0o600)
	err := Probe(ctx, Config{URL: url, Wing: "eng", TokenFile: wrong, Username: "git"})
	if !errors.Is(err, ErrCredentials) || strings.Contains(err.Error(), "not-it-4321") {
		t.Fatalf("probe with a wrong token = %v", err)
	}
	if err := Probe(ctx, Config{URL: "http://127.0.0.1:1/x.git", Wing: "eng"}); err == nil || errors.Is(err, ErrCredentials) {
		t.Fatalf("probe of nothing = %v", err)
	}
	if err := Probe(ctx, Config{URL: "", Wing: "eng"}); !errors.Is(err, ErrNoURL) {
		t.Fatalf("probe without URL = %v", err)
	}
}
