package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSignInThroughBinary runs the developer's commands as processes
// against `brainstem dev`: login (the browser is this test binary as a
// scripted browser, through $BROWSER), token, a forced refresh, token
// --json-header, join --dry-run and doctor; then a sign-in file others can
// read is refused.
func TestSignInThroughBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brainstem dev")
	}
	if runtime.GOOS == "windows" {
		t.Skip("POSIX file modes")
	}
	d := startDev(t)
	config := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + config, "HOME=" + t.TempDir(), "PATH=" + t.TempDir(),
		"BROWSER=" + os.Args[0] + " testbrowser-signin alice@example.com %s"}
	cli := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := brainstem(ctx, args...)
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		if code != wantCode {
			t.Fatalf("brainstem %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, &stdout, &stderr)
		}
		return stdout.String(), stderr.String()
	}

	out, _ := cli(0, "login", d.url)
	for _, want := range []string{"Signed in to " + d.url + " as alice@example.com.", "You can reach 3 wings:", "/authorize?"} {
		if !strings.Contains(out, want) {
			t.Errorf("login output lacks %q:\n%s", want, out)
		}
	}
	dir := filepath.Join(config, "brainstem", "signins")
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("sign-in files %v", files)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, files[0]: 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %#o", p, st.Mode(), err, want)
		}
	}

	tok, _ := cli(0, "token", d.url)
	tok = strings.TrimSpace(tok)
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \n") {
		t.Fatalf("token printed %q", tok)
	}
	// Force a refresh: the stored access token expired a minute ago.
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["expires_at"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	b, _ = json.Marshal(rec)
	if err := os.WriteFile(files[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	hdr, _ := cli(0, "token", "--json-header", d.url)
	var h map[string]string
	if err := json.Unmarshal([]byte(hdr), &h); err != nil || len(h) != 1 || !strings.HasPrefix(h["Authorization"], "Bearer ") {
		t.Fatalf("--json-header printed %q (%v)", hdr, err)
	}
	if h["Authorization"] == "Bearer "+tok {
		t.Error("the expired access token was printed instead of a refreshed one")
	}

	out, _ = cli(0, "join", d.url, "--dry-run")
	for _, want := range []string{"✓ sign-in: alice@example.com (stored sign-in", "dry run: would run\n  claude mcp add --transport http --scope user brainstem " + d.url + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("join --dry-run output lacks %q:\n%s", want, out)
		}
	}
	out, _ = cli(0, "doctor", d.url)
	if !strings.Contains(out, "✓ brain_wings") || !strings.Contains(out, "Every step passed.") {
		t.Errorf("doctor output:\n%s", out)
	}

	if err := os.Chmod(files[0], 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut := cli(1, "token", d.url)
	if !strings.Contains(errOut, "chmod 600") {
		t.Errorf("token with a readable sign-in file: %s", errOut)
	}
	out, _ = cli(1, "doctor", d.url)
	if !strings.Contains(out, "✗ token") {
		t.Errorf("doctor with a readable sign-in file:\n%s", out)
	}
}
