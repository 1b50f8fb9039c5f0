package shardserver

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/tooling/gitserver"
)

func post(h http.Handler, body []byte, header, value string) int {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/remote/webhook", bytes.NewReader(body))
	if header != "" {
		req.Header.Set(header, value)
	}
	h.ServeHTTP(rec, req)
	return rec.Code
}

// webhookWing serves a wing whose remote (a bare repository, pulled every
// hour) holds a note of Ada's the wing has not pulled, with a webhook
// secret of "hook-secret".
func webhookWing(t *testing.T) (*fixture, *Server) {
	t.Helper()
	f := newFixture(t)
	root := t.TempDir()
	bare, err := gitserver.InitBare(root, "brain.git")
	if err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(t.TempDir(), "webhook")
	if err := os.WriteFile(secretFile, []byte("hook-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := f.config(nil)
	cfg.Shard.Remote = &remote.Config{URL: bare, PushDelay: time.Hour, PullInterval: time.Hour, WebhookSecretFile: secretFile}
	srv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ada := gitserver.Person{Name: "Ada", Email: "ada@example.com"}
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "wiki/payments/facts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "wiki/payments/facts/from-ada.md"), []byte("---\ntitle: From Ada\n---\nhello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main", "."}, {"add", "-A"}, {"commit", "--quiet", "-m", "Ada's note"}, {"push", "--quiet", bare, "main"}} {
		if _, err := ada.Git(work, args...); err != nil {
			t.Fatal(err)
		}
	}
	return f, srv
}

// TestWebhookTriggersPull: a signed push event makes the wing pull within
// 5 s (the pull interval being an hour); unsigned, wrongly signed and
// oversized calls are refused.
func TestWebhookTriggersPull(t *testing.T) {
	f, srv := webhookWing(t)

	h := srv.AdminHandler()
	body := []byte(`{"ref":"refs/heads/main"}`)
	good := "sha256=" + hex.EncodeToString(remote.Sign([]byte("hook-secret"), body))
	for _, tt := range []struct {
		name          string
		body          []byte
		header, value string
		want          int
	}{
		{"unsigned", body, "", "", http.StatusUnauthorized},
		{"wrong secret", body, "X-Hub-Signature-256", "sha256=" + hex.EncodeToString(remote.Sign([]byte("nope"), body)), http.StatusForbidden},
		{"gitlab wrong token", body, "X-Gitlab-Token", "nope", http.StatusForbidden},
		{"oversized", bytes.Repeat([]byte("x"), remote.MaxWebhookBody+1), "X-Hub-Signature-256", good, http.StatusRequestEntityTooLarge},
	} {
		if code := post(h, tt.body, tt.header, tt.value); code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, code, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.brain, "wiki/payments/facts/from-ada.md")); err == nil {
		t.Fatal("pulled before any valid webhook call")
	}
	if code := post(h, body, "X-Hub-Signature-256", good); code != http.StatusAccepted {
		t.Fatalf("signed call: %d", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(f.brain, "wiki/payments/facts/from-ada.md"))
		if err == nil && strings.Contains(string(b), "hello") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pull within 5 s of the webhook (status %+v)", srv.Service().Remote().Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookAttacks: every call of testdata/webhook-attacks.txt, sent
// over HTTP to the admin endpoint, gets its status and triggers no pull;
// then a signed call does.
func TestWebhookAttacks(t *testing.T) {
	f, srv := webhookWing(t)
	pulled := filepath.Join(f.brain, "wiki/payments/facts/from-ada.md")
	hs := httptest.NewServer(srv.AdminHandler())
	defer hs.Close()

	raw, err := os.ReadFile("testdata/webhook-attacks.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 {
			t.Fatalf("webhook-attacks.txt: %d fields in %q", len(fields), line)
		}
		name, method, headers, bodyKind, want := fields[0], fields[1], fields[2], fields[3], fields[4]
		body := []byte(`{"ref":"refs/heads/main"}`)
		if bodyKind == "big" {
			body = bytes.Repeat([]byte("x"), remote.MaxWebhookBody+1)
		}
		sig := func(secret string, b []byte) string { return hex.EncodeToString(remote.Sign([]byte(secret), b)) }
		hub := "sha256=" + sig("hook-secret", body)
		repl := strings.NewReplacer("{{hub}}", hub, "{{hub:32}}", hub[:32], "{{hex}}", sig("hook-secret", body),
			"{{other}}", "sha256="+sig("hook-secret", []byte(`{"ref":"refs/heads/evil"}`)),
			"{{wrong}}", "sha256="+sig("nope", body), "{{wrongHex}}", sig("nope", body))
		req, err := http.NewRequest(method, hs.URL+"/remote/webhook", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if headers != "-" {
			for h := range strings.SplitSeq(headers, " | ") {
				k, v, ok := strings.Cut(h, ": ")
				if !ok {
					t.Fatalf("webhook-attacks.txt: header %q", h)
				}
				req.Header.Add(k, repl.Replace(v))
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := fmt.Sprint(resp.StatusCode); got != want {
			t.Errorf("%s: status %s, want %s", name, got, want)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d attacks read", n)
	}
	// No refused call triggered a pull; the signed one does within 5 s.
	if _, err := os.Stat(pulled); err == nil {
		t.Fatal("an attack made the wing pull")
	}
	body := []byte(`{"ref":"refs/heads/main"}`)
	if code := post(srv.AdminHandler(), body, "X-Hub-Signature-256", "sha256="+hex.EncodeToString(remote.Sign([]byte("hook-secret"), body))); code != http.StatusAccepted {
		t.Fatalf("signed call: %d", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, err := os.Stat(pulled); err != nil; _, err = os.Stat(pulled) {
		if time.Now().After(deadline) {
			t.Fatal("no pull within 5 s of the signed call")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
