package hookcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/hooks"
	"github.com/brainstem/brainstem/tooling/cli"
)

func usage(name string) string { return "Usage: brainstem " + name + "\n" }

// TestHookNeverFailsAHook: a command line Claude Code would run but the
// hook cannot (an unknown event, flag or argument, a URL that is none) is
// answered with one JSON object naming it, and no error, so the exit
// status is 0 (2 would block the prompt or the stop); -h is help.
func TestHookNeverFailsAHook(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
		want string // in the systemMessage
	}{
		{"unknown event", []string{"post-tool-use"}, "want session-start"},
		{"no event", nil, "want session-start"},
		{"unknown flag", []string{"prompt", "--bogus"}, "bogus"},
		{"argument", []string{"stop", "extra"}, `unexpected argument "extra"`},
		{"not a gateway URL", []string{"session-start", "--url", "ftp://brain.acme.com"}, "not a gateway URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			in := strings.NewReader(`{"session_id":"s1","cwd":"/","hook_event_name":"SessionStart","source":"startup"}`)
			err := Hook(context.Background(), tc.args, in, &out, &errw, usage)
			var o hooks.Output
			if jerr := json.Unmarshal(out.Bytes(), &o); err != nil || jerr != nil || !strings.Contains(o.SystemMessage, tc.want) {
				t.Fatalf("Hook(%q) = %v; stdout %q", tc.args, err, out.String())
			}
			if cli.ExitCode(err, &errw) != 0 {
				t.Fatal("a non-zero exit status")
			}
		})
	}
	var out, errw bytes.Buffer
	if err := Hook(context.Background(), []string{"prompt", "-h"}, strings.NewReader(""), &out, &errw, usage); !errors.Is(err, flag.ErrHelp) || out.Len() != 0 {
		t.Fatalf("hook prompt -h: %v, stdout %q", err, out.String())
	}
}

// TestHooksInstall: install writes the user's settings, a second install
// changes nothing, --print writes nothing, uninstall removes the file it
// created; --user with --project is a usage error.
func TestHooksInstall(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	settings := filepath.Join(home, ".claude", "settings.json")
	run := func(args ...string) (string, error) {
		var out, errw bytes.Buffer
		err := Hooks(context.Background(), args, &out, &errw, usage)
		return out.String(), err
	}
	if out, err := run("install", "--print", "--url", "brain.acme.com"); err != nil || !strings.Contains(out, "hook prompt --url https://brain.acme.com/mcp") {
		t.Fatalf("--print: %v\n%s", err, out)
	}
	if _, err := os.Stat(settings); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--print wrote the settings: %v", err)
	}
	if out, err := run("install", "--url", "https://brain.acme.com"); err != nil || !strings.Contains(out, "Installed the Brainstem hooks in "+settings) {
		t.Fatalf("install: %v\n%s", err, out)
	}
	first, err := os.ReadFile(settings)
	if err != nil || !bytes.Contains(first, []byte(`"UserPromptSubmit"`)) {
		t.Fatalf("the settings: %v\n%s", err, first)
	}
	if out, err := run("install", "--user", "--url", "https://brain.acme.com"); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("a second install: %v\n%s", err, out)
	}
	if out, err := run("uninstall"); err != nil || !strings.Contains(out, "as it was before") {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if _, err := os.Stat(settings); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("uninstall left the file install created: %v", err)
	}
	var ue cli.UsageError
	if _, err := run("install", "--user", "--project"); !errors.As(err, &ue) {
		t.Fatalf("--user --project: %v", err)
	}
	if _, err := run("install", "--url", "ftp://x"); !errors.As(err, &ue) {
		t.Fatalf("a bad URL: %v", err)
	}
}
