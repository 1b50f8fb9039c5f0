package docstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain makes the test binary a stand-in for brainstem when
// DOCSTEST_FAKE_BRAINSTEM is set: `dev` listens on its --port, prints a
// banner like the real one and waits for Ctrl-C; `dev token` prints a
// token naming its email and IdP.
func TestMain(m *testing.M) {
	if os.Getenv("DOCSTEST_FAKE_BRAINSTEM") == "1" {
		os.Exit(fakeBrainstem(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeBrainstem(args []string) int {
	flag := func(name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	if len(args) >= 2 && args[0] == "dev" && args[1] == "token" {
		user, _, _ := strings.Cut(flag("--email"), "@")
		fmt.Printf("eyJ%s.eyJx.sig from %s\n", user, flag("--idp"))
		return 0
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+flag("--port"))
	if err != nil {
		fmt.Println(err) // "address already in use", as the real one says
		return 1
	}
	defer ln.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Printf("Brainstem dev is ready (%s).\n  MCP URL:  http://127.0.0.1:%s/mcp\n  Token:    eyJalice.eyJx.sig\n", strings.Join(args, " "), flag("--port"))
	<-ctx.Done()
	return 0
}

// testConfig is a Config running the test binary as brainstem, with one
// pinned npx package.
func testConfig(t *testing.T) Config {
	t.Setenv("DOCSTEST_FAKE_BRAINSTEM", "1")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho \"tool $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Config{Root: dir, Bin: bin, Npx: map[string]string{"@x/tool@1.0.0": tool}, Timeout: 20 * time.Second, Logf: t.Logf}
}

func writeDoc(t *testing.T, cfg Config, text string) string {
	path := filepath.Join(cfg.Root, "doc.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const passingDoc = "# A doc\n\n" +
	"<!-- docs-test: stack -->\n\n    go run ./cmd/brainstem dev --email carol@example.com --port 9999   # starts it\n\n" +
	"<!-- docs-test: run -->\n```sh\nf() { echo \"f says $1\"; }\necho \"$URL\" | grep -q '^http://127.0.0.1:'\n```\n\n" +
	"<!-- docs-test: output -->\n\n" +
	"    echo http://127.0.0.1:8080/mcp '<token>' $TOKEN\n    http://127.0.0.1:8080/mcp <token> <token>\n\n" +
	"    f hello\n    f says hello\n\n" +
	"    npx @x/tool@1.0.0 --cli\n    tool --cli\n\n" +
	"    go run ./cmd/brainstem dev token --email bob@example.com\n    <token> from http://127.0.0.1:5556\n\n" +
	"<!-- docs-test: skip (needs a cluster) -->\n```sh\nkubectl apply -f x\n```\n\n" +
	"```\n a diagram ──▶\n```\n\n" +
	"<!-- docs-test: run -->\n```console\n$ echo one; echo two\none\ntwo\n```\n"

func TestRunFile(t *testing.T) {
	cfg := testConfig(t)
	sum, err := RunFile(context.Background(), cfg, writeDoc(t, cfg, passingDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Run: 2, Output: 1, Stack: 1, Skip: 1, Other: 1, Commands: 7}
	if sum != want {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
}

func TestRunFileFailures(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		line int
		msg  string
	}{
		{"output differs", "<!-- docs-test: output -->\n\n    echo a\n    a\n\n    echo '{\"wing\":\"payments\"}'\n    {\"wing\":\"platform\"}\n",
			6, "the output differs: after `{\"wing\":\"p` the docs show `latform\"}`, it prints `ayments\"}`"},
		{"a command fails", "x\n\n<!-- docs-test: run -->\n    true\n    (exit 3)\n", 5, "the command failed (exit status 3): (exit 3)"},
		{"npx unpinned", "<!-- docs-test: run -->\n    npx @x/tool --cli\n", 2, "npx @x/tool: pin the version CI runs (CI installs @x/tool@1.0.0)"},
		{"npx another version", "<!-- docs-test: run -->\n    npx @x/tool@0.9 --cli\n", 2, "npx @x/tool@0.9: pin the version CI runs"},
		{"no marker", "text\n\n    go test ./...\n", 3, "a shell block without a docs-test marker"},
		{"a bad marker", "<!-- docs-test: skip -->\n    a\n", 1, "a docs-test skip needs its reason"},
		{"a stack block that is not brainstem dev", "<!-- docs-test: stack -->\n    brainstem gateway --config x\n", 2, "a stack block runs `brainstem dev [flags]`"},
		{"a stack flag with a quote", "<!-- docs-test: stack -->\n    brainstem dev --email 'a@b.c'\n", 2, "a stack block's flags are plain words"},
		{"too slow", "<!-- docs-test: run -->\n    sleep 30\n", 2, "sleep 30: the command did not end within 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			if tt.name == "too slow" {
				cfg.Timeout = 300 * time.Millisecond
			}
			_, err := RunFile(context.Background(), cfg, writeDoc(t, cfg, tt.doc))
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("RunFile = %v, want a *Failure", err)
			}
			if f.File != "doc.md" || f.Line != tt.line || !strings.HasPrefix(f.Msg, tt.msg) {
				t.Errorf("RunFile = %q\nwant doc.md:%d: %s…", err, tt.line, tt.msg)
			}
		})
	}
}

// TestStackPortTaken: a block of ports whose gateway port is taken is
// reported as such (StartStack then tries another); a free one starts.
func TestStackPortTaken(t *testing.T) {
	cfg := testConfig(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if _, err := startAt(context.Background(), cfg.Bin, cfg.Root, nil, l.Addr().(*net.TCPAddr).Port); !errors.Is(err, errPortTaken) {
		t.Fatalf("startAt on a taken port = %v, want errPortTaken", err)
	}
	s, err := StartStack(context.Background(), cfg.Bin, cfg.Root, []string{"--email", "carol@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || s.Token != "eyJalice.eyJx.sig" || s.IdP != fmt.Sprintf("http://127.0.0.1:%d", s.port(docIdPPort)) {
		t.Errorf("stack = %q %q %q", s.URL, s.Token, s.IdP)
	}
}
