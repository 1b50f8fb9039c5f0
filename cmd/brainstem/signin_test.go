package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brainstem/brainstem/tooling/testbrowser"
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
	cli := cliIn(t, env)

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

// TestStaleSignIn: after `brainstem dev` restarts with new keys at the
// same URL, the stored sign-in is refused: `token` exits non-zero naming
// `brainstem login` (and prints no token), `join` fails at its sign-in
// step with the same fix, and `login` then replaces the sign-in without
// anything deleted by hand.
func TestStaleSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brainstem dev twice")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	first := startDevWith(t, "--port", port, "--data", t.TempDir())
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "HOME=" + t.TempDir(), "PATH=" + t.TempDir(),
		"BROWSER=" + os.Args[0] + " testbrowser-signin alice@example.com %s"}
	cli := cliIn(t, env)
	cli(0, "login", first.url)
	old, _ := cli(0, "token", first.url)

	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	_ = first.cmd.Wait()
	second := startDevWith(t, "--port", port, "--data", t.TempDir()) // new keys, the same URL
	if second.url != first.url {
		t.Fatalf("the second dev serves %s, not %s", second.url, first.url)
	}
	out, errOut := cli(1, "token", second.url)
	if !strings.Contains(errOut, "sign in again: brainstem login http://127.0.0.1:"+port) || strings.TrimSpace(out) != "" || strings.Contains(errOut, strings.TrimSpace(old)) {
		t.Fatalf("token with a refused sign-in: stdout %q stderr %q", out, errOut)
	}
	if out, _ := cli(1, "join", "--dry-run", second.url); !strings.Contains(out, "✗ sign-in:") || !strings.Contains(out, "sign in again: brainstem login") {
		t.Fatalf("join with a refused sign-in:\n%s", out)
	}
	if out, _ := cli(0, "login", second.url); !strings.Contains(out, "Signed in to "+second.url+" as alice@example.com.") {
		t.Fatalf("login over a refused sign-in:\n%s", out)
	}
	if tok, _ := cli(0, "token", second.url); strings.TrimSpace(tok) == strings.TrimSpace(old) {
		t.Fatal("token printed the refused token after login")
	}
}

// TestHeadlessJoin: with no display and no $BROWSER, `brainstem join`
// signs in through the device flow with no flag (the person types the
// code in a browser elsewhere: the scripted one), then prints the next
// step.
func TestHeadlessJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brainstem dev")
	}
	d := startDev(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := brainstem(ctx, "join", d.url)
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+t.TempDir(), "HOME="+t.TempDir(), "PATH="+t.TempDir(), "DISPLAY=", "WAYLAND_DISPLAY=", "BROWSER=")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &lockedText{}
	codes := make(chan string, 1)
	read := make(chan struct{})
	go func() { // the person reads the code off the terminal
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if m := deviceCodeRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case codes <- m[1]:
				default:
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	select {
	case code := <-codes:
		approveDevice(ctx, t, code, "dora@example.com", out)
	case err := <-done:
		<-read
		t.Fatalf("join ended before printing a code: %v\n%s", err, out)
	}
	err := <-done
	<-read
	if err != nil {
		t.Fatalf("join: %v\n%s", err, out)
	}
	for _, want := range []string{"No browser can be opened on this computer", "(as with --device)", "✓ sign-in: dora@example.com (signed in now",
		"Claude Code is not installed here", "claude mcp add --transport http --scope user brainstem " + d.url} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("join output lacks %q:\n%s", want, out)
		}
	}
}

// cliIn returns a runner of the binary with env that fails the test
// unless the exit code is wantCode; it returns stdout and stderr.
func cliIn(t *testing.T, env []string) func(wantCode int, args ...string) (string, string) {
	return func(wantCode int, args ...string) (string, string) {
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
}

var deviceCodeRE = regexp.MustCompile(`^  ([B-Z]{4}-[B-Z]{4})$`)

// approveDevice is the person at a browser elsewhere: the verification
// page (the code already in its link), the approval, the IdP's sign-in.
func approveDevice(ctx context.Context, t *testing.T, code, email string, printed fmt.Stringer) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*(http://\S+/device)$`).FindStringSubmatch(printed.String()) // printed before the code
	if m == nil {
		t.Fatalf("no verification link for %s in:\n%s", code, printed)
	}
	b := testbrowser.New()
	p, err := b.Get(ctx, m[1])
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Form()
	if err != nil {
		t.Fatal(err)
	}
	if p, err = b.Submit(ctx, p, f, map[string]string{"user_code": code}, ""); err != nil {
		t.Fatal(err)
	}
	if f, err = p.Form(); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Submit(ctx, p, f, nil, "allow"); err != nil {
		t.Fatal(err)
	}
	if last, err := b.SignIn(ctx, p.Location.String(), nil, email, ""); err != nil || !strings.Contains(last.Body, "signed in as "+email) {
		t.Fatalf("approval: %v %s", err, testbrowser.Text(last.Body))
	}
}

// lockedText is output one goroutine writes while the test reads it.
type lockedText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedText) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
