package helmtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/tooling/gitserver"
)

// TestRemoteRunsOnLoopback runs a wing's shard with the flags and files the
// chart renders for its remote, against a real git smart-HTTP server
// (git http-backend behind basic auth) on loopback: `brainstem shard
// --check-config` accepts them and lists the remote's refs with the token
// from the mounted Secret, and refuses a wrong token without printing it;
// the running shard answers a signed webhook call 202 (an unsigned one 401,
// a wrongly signed one 403), and the pull it triggers brings a note a
// person pushed into the brain directory.
func TestRemoteRunsOnLoopback(t *testing.T) {
	t.Parallel()
	const token, hookSecret = "tok-3f9a1c7e", "hook-5b2d8e"
	repos := t.TempDir()
	bare, err := gitserver.InitBare(repos, "brain.git")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartHTTP(repos, "x-access-token", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	seedRemote(t, bare)

	r := render(t, []string{defaultValues, valuesFile(t, fmt.Sprintf(`wings:
  - name: payments
    policy: {readers: ["*"]}
    remote:
      enabled: true
      url: %s/brain.git
      username: x-access-token
      token: {secretName: git-token}
      webhookSecret: {secretName: git-webhook, key: secret}
      pushDelay: 1h
      pushMaxDelay: 2h
      pullInterval: 1h
`, srv.URL))})
	s := shardOf(t, r, "payments")
	secrets := func(tok string) map[string]map[string][]byte {
		return map[string]map[string][]byte{
			"git-token":   {"token": []byte(tok + "\n")},
			"git-webhook": {"secret": []byte(hookSecret)},
		}
	}

	bad, _, _ := loopbackShard(t, r, s, filepath.Join(t.TempDir(), "bad"), secrets("wrong-token"))
	out, err := runBrainstem(t, append(bad, "--check-config")...)
	if err == nil || !strings.Contains(out, "credentials") {
		t.Errorf("--check-config with a wrong token passed or did not say why (err %v):\n%s", err, out)
	}
	if strings.Contains(out, "wrong-token") {
		t.Errorf("--check-config printed the token:\n%s", out)
	}

	argv, _, admin := loopbackShard(t, r, s, filepath.Join(t.TempDir(), "good"), secrets(token))
	checkRun(t, append(slices.Clone(argv), "--check-config")...)
	p := start(t, "payments", argv...)
	waitReady(t, p, "http://"+admin+"/readyz")

	hook := "http://" + admin + "/remote/webhook"
	body := []byte(`{"ref":"refs/heads/main"}`)
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write(body)
	for _, tc := range []struct {
		name, header, value string
		want                int
	}{
		{"unsigned", "", "", http.StatusUnauthorized},
		{"wrong signature", "X-Hub-Signature-256", "sha256=" + strings.Repeat("0", 64), http.StatusForbidden},
		{"signed", "X-Hub-Signature-256", "sha256=" + hex.EncodeToString(mac.Sum(nil)), http.StatusAccepted},
	} {
		req, err := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("webhook %s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	// The push delays and the pull interval are hours: only the webhook's
	// pull can bring the note.
	note := filepath.Join(argv[slices.IndexFunc(argv, func(a string) bool { return strings.HasPrefix(a, "--brain=") })][len("--brain="):],
		"wiki", "payments", "facts", "from-a-person.md")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(note); err == nil {
			if !strings.Contains(string(b), "merged by a person") {
				t.Errorf("pulled note holds %q", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the person's note did not reach %s within 5 s of the webhook call:\n%s", note, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(p.output(), token) || strings.Contains(p.output(), hookSecret) {
		t.Errorf("the shard logged a secret:\n%s", p.output())
	}
}

// seedRemote commits a note to the bare repository as a person would,
// through a clone of their own.
func seedRemote(t *testing.T, bare string) {
	t.Helper()
	clone := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Pat", "GIT_AUTHOR_EMAIL=pat@acme.com",
			"GIT_COMMITTER_NAME=Pat", "GIT_COMMITTER_EMAIL=pat@acme.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "--quiet", "--initial-branch=main", ".")
	dir := filepath.Join(clone, "wiki", "payments", "facts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	note := "---\ntitle: From a person\n---\nA fact merged by a person.\n"
	if err := os.WriteFile(filepath.Join(dir, "from-a-person.md"), []byte(note), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "--quiet", "-m", "Add a fact")
	git("push", "--quiet", bare, "main")
}

// runBrainstem runs the brainstem binary and returns its combined output.
func runBrainstem(t *testing.T, argv ...string) (string, error) {
	t.Helper()
	bin, err := brainstemBin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, argv...).CombinedOutput()
	return string(out), err
}
